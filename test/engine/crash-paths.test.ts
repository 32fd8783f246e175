/**
 * Every reply path answers, whatever goes wrong in it (issue 17, item 1). Frames cannot bring
 * values deeper than MAX_FRAME_DEPTH any more (e2e/crash.test.ts), so the paths are driven here with
 * values from inside the engine's process: a builtin whose result JSON cannot write, one whose
 * result is over the frame limit, an engine-made call whose data cannot be written. Before, the
 * first was an unhandled rejection (which ends a Node process, this test's included), the second
 * was sent whatever its size, the third threw a bare RangeError. The process-level guard of the
 * daemon (src/daemon/process-guard.ts) is checked in a child process of its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { EngineError } from '../../src/engine/errors.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
type ErrorBody = { code: string; message: string };

/** A value JSON.stringify cannot write: nested past V8's stack. */
function tooDeep(n = 100_000): unknown {
  let v: unknown = 0;
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

describe('reply paths answer the call whatever happens in them', () => {
  let eng: Eng;
  let raw: RawClient;
  before(async () => {
    eng = await startEngine({ maxFrameBytes: 64 * 1024 });
    eng.engine.registry.addBuiltin('test::unwritable', 'a result JSON cannot write', () => tooDeep());
    eng.engine.registry.addBuiltin('test::huge', 'a result over the frame limit', () => 'x'.repeat(100 * 1024));
    raw = await RawClient.connect(eng.url);
  });
  after(async () => {
    raw.close();
    await eng.stop();
  });

  async function call(fid: string, id: string): Promise<ErrorBody | undefined> {
    raw.send({ type: 'invokefunction', invocation_id: id, function_id: fid, data: {} });
    const r = await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === id);
    return r.error as ErrorBody | undefined;
  }

  test('a builtin result JSON cannot write is answered with internal_error, and the engine serves on', async () => {
    const error = await call('test::unwritable', 'u1');
    assert.equal(error?.code, 'internal_error');
    assert.match(error.message, /could not write the result of test::unwritable: Maximum call stack size exceeded/);
    assert.equal((await call('engine::health::check', 'h1')), undefined);
  });

  test('a builtin result over max_frame_bytes is answered with result_too_large naming the function', async () => {
    const error = await call('test::huge', 'g1');
    assert.equal(error?.code, 'result_too_large');
    assert.match(error.message, /The result of test::huge is \d+ bytes, over the engine's max_frame_bytes of 65536/);
  });

  test('an engine-made call whose frame cannot be written is refused with internal_error; nothing stays in flight', async () => {
    raw.send({ type: 'registerfunction', id: 'test::sink' });
    await new Promise((r) => setTimeout(r, 100));
    await assert.rejects(eng.engine.invocations.call('test::sink', tooDeep()), (e: unknown) => {
      assert.ok(e instanceof EngineError);
      assert.equal(e.code, 'internal_error');
      assert.match(e.message, /could not write the call of test::sink/);
      return true;
    });
    assert.equal(eng.engine.invocations.size, 0);
    assert.equal(await raw.receives((f) => f.type === 'invokefunction', 200), false);
  });
});

describe('the daemon outlives an error that escapes every handler (process-guard)', () => {
  const GUARD = new URL('../../src/daemon/process-guard.js', import.meta.url).href;
  /** Runs `body` in a child with the guard installed; its log lines and a FATAL line on stdout. */
  function run(body: string): { out: string; status: number } {
    const script = `
      import { guardProcess, FATAL_EXIT_CODE } from '${GUARD}';
      guardProcess({ log: (m) => console.log('LOG ' + m.split('\\n')[0]), fatal: (why) => { console.log('FATAL ' + why); process.exit(FATAL_EXIT_CODE); } });
      ${body}`;
    try {
      return { out: execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }), status: 0 };
    } catch (e) {
      const err = e as { stdout: string; status: number };
      return { out: err.stdout, status: err.status };
    }
  }

  test('an unhandled rejection and an uncaught exception are logged, and the process goes on', () => {
    const { out, status } = run(`
      Promise.reject(new Error('rejected in a promise'));
      setTimeout(() => { throw new Error('thrown in a timer'); }, 10);
      setTimeout(() => console.log('STILL RUNNING'), 50);`);
    assert.equal(status, 0, out);
    assert.match(out, /LOG unhandled promise rejection \(a bug in svc; the engine keeps running\): Error: rejected in a promise/);
    assert.match(out, /LOG uncaught exception in a callback \(a bug in svc; the engine keeps running\): Error: thrown in a timer/);
    assert.match(out, /STILL RUNNING/);
  });

  test('exceptions that keep coming back stop the process with status 70', () => {
    const { out, status } = run(`
      for (let i = 0; i < 8; i++) setTimeout(() => { throw new Error('again ' + i); }, 5 * i);
      setTimeout(() => console.log('STILL RUNNING'), 200);`);
    assert.equal(status, 70, out);
    assert.match(out, /FATAL 6 uncaught exceptions within 60 s/);
    assert.doesNotMatch(out, /STILL RUNNING/);
  });
});
