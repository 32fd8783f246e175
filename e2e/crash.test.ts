/**
 * No token can crash the engine (issue 17, item 1), on the real daemon (`svc --config`) in its own
 * process, where a crash shows. A connection holding a token with the fewest rights stores JSON
 * nested 10,000 deep (a 20 KB frame) through what every token may call or register — worker
 * metadata, a log line's data (single and batched), a function's request_format — then an operator
 * lists workers, logs and functions with the CLI. Before the fix the listing's writer threw
 * RangeError, the rejection was unhandled and the engine exited. Now the deep frames are refused
 * where they enter (`frame_too_deep`, each call answered), the connection stays open, the listings
 * work and the engine logs no error that escaped its handlers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RawClient } from '../test/helpers/raw-client.js';
import { EngineProcess, runSvc, tempDir } from './helpers/cli.js';

const ADMIN = 'crash-admin-token-0123456789';
const LOW = 'crash-low-token-0123456789ab';
const DEPTH = 10_000;
const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);

describe('deeply nested JSON from any token', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let low: RawClient;
  const env = { SVC_TOKEN: ADMIN };

  before(async () => {
    writeFileSync(
      join(tmp.dir, 'config.yaml'),
      [
        'engine:',
        '  host: 127.0.0.1',
        '  port: 0',
        '  auth:',
        '    tokens:',
        '      - name: admin',
        `        token: ${ADMIN}`,
        '        admin: true',
        '      - name: low',
        `        token: ${LOW}`,
        '        call: ["deep::*"]',
        '        register: ["deep::*"]',
        'workers: []',
        '',
      ].join('\n'),
    );
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    low = await RawClient.connect(engine.url, { headers: { authorization: `Bearer ${LOW}` } });
  });
  after(async () => {
    low?.close();
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test('stored through calls and registrations any token may make: refused, answered, and the engine survives the listings', async () => {
    const calls: Array<[string, string]> = [
      ['m1', `{"type":"invokefunction","invocation_id":"m1","function_id":"engine::workers::register","data":{"name":"deep","x":${deep(DEPTH)}}}`],
      ['l1', `{"type":"invokefunction","invocation_id":"l1","function_id":"engine::log::info","data":{"message":"m","data":${deep(DEPTH)}}}`],
      ['b1', `{"type":"invokefunction","invocation_id":"b1","function_id":"engine::log::batch","data":{"lines":[["info","m",${deep(DEPTH)}]]}}`],
    ];
    const answers = [];
    for (const [id, frame] of calls) {
      low.send(frame);
      answers.push(await low.next((f) => f.type === 'invocationresult' && f.invocation_id === id));
    }
    low.send(`{"type":"registerfunction","id":"deep::fn","request_format":${deep(DEPTH)}}`);
    const isRefusal = (f: { type?: string; ref?: unknown }): boolean => f.type === 'error' && (f.ref as { id?: string } | undefined)?.id === 'deep::fn';
    const refusal = await low.next(isRefusal).catch(() => null);

    // The listings an operator runs, through the CLI as a user runs them: before the fix the first
    // of them ended the engine.
    const list = await runSvc(['worker', 'list', '--config', 'config.yaml'], { cwd: tmp.dir, env });
    const logs = await runSvc(['logs', '--address', engine.url], { env });
    const fns = await runSvc(['trigger', 'engine::functions::list', '--address', engine.url], { env });
    assert.equal(engine.child.exitCode, null, `the engine exited\nstdout: ${engine.stdout}\nstderr: ${engine.stderr}`);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(logs.code, 0, logs.stderr);
    assert.equal(fns.code, 0, fns.stderr);
    assert.equal(low.closed, false, 'the connection stays open');

    // Each deep frame was refused where it entered, naming its depth and the limit.
    for (const r of answers) {
      const error = r.error as { code: string; message: string } | undefined;
      assert.equal(error?.code, 'frame_too_deep', JSON.stringify(r));
      const depth = Number(/(\d+) deep; the limit is 128/.exec(error.message)?.[1]);
      assert.ok(depth > DEPTH, error.message);
    }
    const fn = await runSvc(['trigger', 'engine::functions::info', 'function_id=deep::fn', '--address', engine.url], { env });
    assert.match(fn.stderr, /function_not_found/, 'the deep registration was refused');
    assert.equal((refusal?.error as { code: string } | undefined)?.code, 'frame_too_deep');
  });

  test('a deep call is answered at once, not left to its deadline, and a deep result fails its call for the caller', async () => {
    low.send({ type: 'registerfunction', id: 'deep::echo' });
    const caller = await RawClient.connect(engine.url, { headers: { authorization: `Bearer ${LOW}` } });
    try {
      // Not in the SDK's key order, so the engine writes the callee's frame from the parsed value.
      const t0 = Date.now();
      caller.send(`{"data":${deep(DEPTH)},"type":"invokefunction","function_id":"deep::echo","invocation_id":"c1","timeout_ms":20000}`);
      const r = await caller.next((f) => f.type === 'invocationresult' && f.invocation_id === 'c1');
      assert.equal((r.error as { code: string }).code, 'frame_too_deep');
      assert.ok(Date.now() - t0 < 5000);

      caller.send({ type: 'invokefunction', invocation_id: 'c2', function_id: 'deep::echo', data: {}, timeout_ms: 20_000 });
      const inv = await low.next((f) => f.type === 'invokefunction' && f.function_id === 'deep::echo');
      low.send(`{"type":"invocationresult","invocation_id":${JSON.stringify(inv.invocation_id)},"result":${deep(DEPTH)}}`);
      const r2 = await caller.next((f) => f.type === 'invocationresult' && f.invocation_id === 'c2');
      assert.equal((r2.error as { code: string }).code, 'frame_too_deep');
    } finally {
      caller.close();
    }
  });

  test('nesting up to the limit is accepted, and the listings that nest it deeper still reach the CLI', async () => {
    // The frame's own object and `data` are two levels: metadata nested 126 more makes 128.
    low.send(`{"type":"invokefunction","invocation_id":"ok1","function_id":"engine::workers::register","data":{"name":"at-limit","x":${deep(126)}}}`);
    const r = await low.next((f) => f.type === 'invocationresult' && f.invocation_id === 'ok1');
    assert.equal(r.error, undefined, JSON.stringify(r));
    const list = await runSvc(['trigger', 'engine::workers::list', '--address', engine.url], { env });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /at-limit/);
  });

  test('the engine logged no error that escaped its handlers', () => {
    assert.equal(engine.child.exitCode, null);
    assert.doesNotMatch(engine.stdout + engine.stderr, /unhandled|uncaught|RangeError/i);
  });
});
