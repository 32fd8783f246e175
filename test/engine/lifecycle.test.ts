import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

describe('deadlines, disconnects, reconnects', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine({ invocationTimeoutMs: 2000 });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a call past its deadline ends with timeout and the callee is told to cancel', async () => {
    let aborted: unknown = null;
    const slow = pool.make('slow');
    slow.registerFunction('slow::sleep', (_d, ctx) => {
      return new Promise((resolve) => {
        const t = setTimeout(() => resolve('late'), 5000);
        ctx.signal.addEventListener('abort', () => {
          aborted = ctx.signal.reason;
          clearTimeout(t);
          resolve('aborted');
        });
      });
    });
    await slow.ready();
    const caller = pool.make('deadline-caller');
    await eventually(async () => {
      const info = (await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'slow::sleep' } })) as object;
      assert.ok(info);
    });
    const started = Date.now();
    await assert.rejects(caller.trigger({ function_id: 'slow::sleep', timeoutMs: 150 }), (e: { code: string; message: string }) => {
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /slow::sleep timed out after 150ms/);
      return true;
    });
    assert.ok(Date.now() - started < 1000);
    await eventually(() => assert.ok(aborted !== null, 'handler saw the cancel'));
    await eventually(() => assert.equal(eng.engine.invocations.size, 0));
  });

  test('the default deadline comes from the engine configuration', async () => {
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'registerfunction', id: 'never::answers' });
    const caller = await RawClient.connect(eng.url);
    await eventually(async () => {
      caller.send({ type: 'invokefunction', invocation_id: 'd-1', function_id: 'never::answers', data: {} });
      const r = await caller.next((f) => f.type === 'invocationresult' && f.invocation_id === 'd-1', 2600);
      assert.equal((r.error as { code: string }).code, 'timeout');
    }, 6000);
    raw.close();
    caller.close();
  });

  test('a timeout_ms out of range is refused', async () => {
    const caller = await RawClient.connect(eng.url);
    caller.send({ type: 'invokefunction', invocation_id: 't-1', function_id: 'engine::health::check', data: {}, timeout_ms: -5 });
    const r = await caller.next((f) => f.type === 'invocationresult');
    assert.equal((r.error as { code: string }).code, 'invalid_frame');
    assert.match((r.error as { message: string }).message, /timeout_ms/);
    caller.close();
  });

  test('when the callee disconnects mid-call the caller gets invocation_stopped at once', async () => {
    const callee = await RawClient.connect(eng.url);
    callee.send({ type: 'registerfunction', id: 'drop::me' });
    const caller = pool.make('stopped-caller');
    await caller.ready();
    await eventually(async () => {
      const f = (await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'drop::me' } })) as object;
      assert.ok(f);
    });
    const pending = caller.trigger({ function_id: 'drop::me', timeoutMs: 10_000 });
    await callee.next((f) => f.type === 'invokefunction');
    const t0 = Date.now();
    callee.close();
    await assert.rejects(pending, { code: 'invocation_stopped' });
    assert.ok(Date.now() - t0 < 1000);
    // Its functions are gone with it.
    await assert.rejects(caller.trigger({ function_id: 'drop::me' }), { code: 'function_not_found' });
  });

  test('when the caller disconnects mid-call the callee is told to cancel', async () => {
    let cancelled = false;
    const callee = pool.make('cancel-callee');
    callee.registerFunction('wait::forever', (_d, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => ((cancelled = true), resolve(null)))));
    await callee.ready();
    const caller = await RawClient.connect(eng.url);
    await eventually(async () => {
      caller.send({ type: 'invokefunction', invocation_id: 'x-1', function_id: 'wait::forever', data: {} });
      await sleep(50);
      assert.equal(eng.engine.invocations.size >= 1, true);
    });
    caller.close();
    await eventually(() => assert.ok(cancelled));
    await eventually(() => assert.equal(eng.engine.invocations.size, 0));
  });

  test("a caller's signal: aborted before the call nothing is sent; aborted during it the callee is told to cancel", async () => {
    let invoked = 0;
    let cancelled: unknown = null;
    const callee = pool.make('signal-callee');
    callee.registerFunction('signal::wait', (_d, ctx) => {
      invoked++;
      return new Promise((resolve) => ctx.signal.addEventListener('abort', () => ((cancelled = ctx.signal.reason), resolve(null))));
    });
    await callee.ready();
    const caller = pool.make('signal-caller');
    await eventually(async () => {
      assert.ok(await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'signal::wait' } }));
    });
    await assert.rejects(caller.trigger({ function_id: 'signal::wait', signal: AbortSignal.abort() }), (e: { code: string; message: string }) => {
      assert.equal(e.code, 'cancelled');
      assert.match(e.message, /signal::wait was cancelled by the caller/);
      return true;
    });
    await sleep(50);
    assert.equal(invoked, 0);
    const abort = new AbortController();
    const pending = caller.trigger({ function_id: 'signal::wait', signal: abort.signal, timeoutMs: 10_000 });
    await eventually(() => assert.equal(invoked, 1));
    abort.abort();
    await assert.rejects(pending, { code: 'cancelled' });
    await eventually(() => assert.ok(cancelled !== null, 'handler saw the cancel'));
    await eventually(() => assert.equal(eng.engine.invocations.size, 0));
  });

  test('a caller losing its connection fails its calls at once with connection_lost', async () => {
    const callee = pool.make('hang-callee');
    callee.registerFunction('hang::on', () => new Promise(() => {}));
    await callee.ready();
    const caller = pool.make('losing-caller');
    await caller.ready();
    await eventually(async () => {
      assert.ok(await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'hang::on' } }));
    });
    const p = caller.trigger({ function_id: 'hang::on', timeoutMs: 10_000 });
    await sleep(50);
    caller.simulateDisconnect();
    await assert.rejects(p, { code: 'connection_lost' });
  });

  test('after a reconnect the worker replays its functions and is callable again', async () => {
    const callee = pool.make('replayer');
    callee.registerFunction('replay::me', () => 'back');
    await callee.ready();
    const caller = pool.make('replay-caller');
    await eventually(async () => assert.equal(await caller.trigger({ function_id: 'replay::me' }), 'back'));
    const oldId = callee.workerId;
    callee.simulateDisconnect();
    await eventually(async () => assert.equal(await caller.trigger({ function_id: 'replay::me' }), 'back'));
    assert.notEqual(callee.workerId, oldId);
    // Exactly one live provider: the old session was not kept alongside the new one.
    const info = (await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'replay::me' } })) as { workers: unknown[] };
    assert.equal(info.workers.length, 1);
  });

  test('reattach with the right token evicts a half-open previous connection at once; a wrong token does not', async () => {
    const old = await RawClient.connect(eng.url);
    old.send({ type: 'registerfunction', id: 'half::open' });
    const caller = pool.make('reattach-caller');
    await eventually(async () => assert.ok(await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'half::open' } })));
    const intruder = await RawClient.connect(eng.url);
    intruder.send({ type: 'reattach', previous_worker_id: old.registered.worker_id, reattach_token: 'wrong' });
    await sleep(100);
    assert.equal(old.closed, false);
    const fresh = await RawClient.connect(eng.url);
    fresh.send({ type: 'reattach', previous_worker_id: old.registered.worker_id, reattach_token: old.registered.reattach_token });
    await eventually(() => assert.equal(old.closed, true));
    await assert.rejects(caller.trigger({ function_id: 'half::open' }), { code: 'function_not_found' });
    intruder.close();
    fresh.close();
  });
});
