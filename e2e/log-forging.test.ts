/**
 * Log forging through the real binaries (issue 17, item 9): a worker names itself and logs with
 * terminal escape codes and fake line breaks; the engine's printed events, `svc logs` (text and
 * --json) and `svc trigger`'s result and error lines show them escaped, one record per line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger, registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, runSvc, tempDir, until } from './helpers/cli.js';

const DANGEROUS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const FAKE = '2026-01-01T00:00:00.000Z INFO  engine worker svc-state left: worker disconnected';
const NAME = `evil\u001b[2J\n${FAKE}`;
const MESSAGE = `hello\u001b[31m\n${FAKE}\u009b0m \u202egpj.exe`;

describe('log forging: client text is printed escaped', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    worker = registerWorker(engine.url, { workerName: NAME, echoLogs: false });
    worker.registerFunction('evil::fail', () => {
      throw Object.assign(new Error(MESSAGE), { code: `bad\u001b[2J` });
    });
    worker.registerFunction('evil::echo', () => ({ message: MESSAGE }));
    await worker.ready();
    new Logger(worker).warn(MESSAGE, { note: MESSAGE });
    await until('the line to be stored', async () => (await runSvc(['logs', '--address', engine.url, '--text', 'hello'])).stdout.includes('hello'));
  });
  after(async () => {
    await worker?.shutdown(0);
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test("the engine's event lines: the worker's name escaped, no forged line", async () => {
    await until('the registration event', () => engine.stdout.includes('registered'));
    assert.doesNotMatch(engine.stdout, DANGEROUS);
    const registered = engine.stdout.split('\n').find((l) => l.includes(' registered '));
    assert.ok(registered?.includes('worker evil\\u001b[2J\\n2026-01-01T00:00:00.000Z INFO  engine worker svc-state left'), engine.stdout);
    assert.ok(!engine.stdout.split('\n').some((l) => l.startsWith(FAKE)), 'no line starts with the forged text');
  });

  test('svc logs: one line per entry, nothing a terminal acts on', async () => {
    const r = await runSvc(['logs', '--address', engine.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, DANGEROUS);
    assert.ok(!r.stdout.split('\n').some((l) => l.startsWith(FAKE)), r.stdout);
    const line = r.stdout.split('\n').find((l) => l.includes('hello'));
    assert.match(line!, / WARN  evil\\u001b\[2J\\n2026.* hello\\u001b\[31m\\n2026.*\\u009b0m \\u202egpj\.exe \{"note":"hello\\u001b\[31m\\n2026/);
  });

  test('svc logs --json: valid JSON that reads back to what was sent, with nothing raw', async () => {
    const r = await runSvc(['logs', '--address', engine.url, '--json', '--text', 'hello']);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, DANGEROUS);
    const entry = JSON.parse(r.stdout.trim()) as { message: string; worker_name: string; data: { note: string } };
    assert.equal(entry.message, MESSAGE);
    assert.equal(entry.worker_name, NAME);
    assert.equal(entry.data.note, MESSAGE);
  });

  test('svc trigger: a result and an error line from the worker, escaped', async () => {
    const ok = await runSvc(['trigger', 'evil::echo', '--address', engine.url]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.doesNotMatch(ok.stdout, DANGEROUS);
    assert.deepEqual(JSON.parse(ok.stdout), { message: MESSAGE });
    const bad = await runSvc(['trigger', 'evil::fail', '--verbose', '--address', engine.url]);
    assert.equal(bad.code, 1);
    assert.doesNotMatch(bad.stderr, DANGEROUS);
    // One error line, then the callee's stack trace (issue 25 item 5): each of its lines under a
    // `│` gutter, so that no text of the worker's can stand at the start of a line of its own.
    const [first, ...rest] = bad.stderr.trimEnd().split('\n');
    assert.match(first!, /^error: bad\\u001b\[2J: hello\\u001b\[31m\\n2026/);
    const trace = rest.filter((l) => l.trim() !== '');
    assert.equal(trace[0], 'stack trace (from the function\'s worker):', bad.stderr);
    for (const l of trace.slice(1)) assert.match(l, /^ {2}│ /, bad.stderr);
    assert.match(trace[1]!, /^ {2}│ Error: hello\\u001b\[31m$/, 'the forged line stays inside the trace, escaped');
  });
});
