/**
 * svc-sdk's Worker lifecycle against a real engine: one state at a time (WorkerState), the typed
 * events (WorkerEvent), shutdown() that waits for running handlers and resolves as soon as they are
 * done, and how a refused connection (`unauthorized`) is reported.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import { InvocationError, Worker, type WorkerEvent, type WorkerState } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

/** Every state change and every event of `w`, as they happen. */
function record(w: Worker): { states: WorkerState[]; events: WorkerEvent[] } {
  const seen = { states: [w.state] as WorkerState[], events: [] as WorkerEvent[] };
  w.on('state', (s) => seen.states.push(s));
  w.on('event', (e) => seen.events.push(e));
  return seen;
}

describe('lifecycle states and events', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('disconnected → connecting → connected; a lost socket goes back through connecting; each change is an event', async () => {
    const w = new Worker(eng.url, { workerName: 'states', echoLogs: false, reconnect: { initialDelayMs: 20, maxDelayMs: 50 } });
    const seen = record(w);
    const connected: Array<{ url: string; workerId: string }> = [];
    w.on('connected', (e) => connected.push({ url: e.url, workerId: e.workerId }));
    assert.equal(w.state, 'disconnected');
    w.start();
    await w.ready(5000);
    assert.deepEqual(seen.states, ['disconnected', 'connecting', 'connected']);
    assert.deepEqual(connected, [{ url: eng.url, workerId: w.workerId }]);
    const firstId = w.workerId;
    w.simulateDisconnect();
    await new Promise<void>((r) => w.once('connected', () => r()));
    assert.deepEqual(seen.states, ['disconnected', 'connecting', 'connected', 'disconnected', 'connecting', 'connected']);
    assert.notEqual(w.workerId, firstId);
    const lost = seen.events.find((e) => e.type === 'disconnected');
    assert.ok(lost && lost.type === 'disconnected');
    assert.equal(lost.url, eng.url);
    assert.equal(lost.code, 1006);
    // The union carries every state change too, in order.
    assert.deepEqual(
      seen.events.filter((e) => e.type === 'state').map((e) => (e.type === 'state' ? `${e.previous}>${e.state}` : '')),
      ['disconnected>connecting', 'connecting>connected', 'connected>disconnected', 'disconnected>connecting', 'connecting>connected'],
    );
    await w.shutdown();
    assert.equal(w.state, 'closed');
    assert.deepEqual(seen.states.slice(-2), ['draining', 'closed']);
  });

  test('shutdown(): draining refuses new calls, lets the running handler answer, and resolves when it is done', async () => {
    const callee = pool.make('draining-callee');
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    callee.registerFunction('drain::slow', async () => {
      await released;
      return 'finished';
    });
    callee.registerFunction('drain::fast', () => 'fast');
    await callee.ready();
    const caller = pool.make('draining-caller');
    await caller.ready();
    const slow = caller.trigger({ function_id: 'drain::slow' });
    await sleep(100); // the call is running in the callee
    const t0 = Date.now();
    const stopped = callee.shutdown(60_000);
    assert.equal(callee.state, 'draining');
    assert.equal(callee.shutdown(), stopped, 'every call returns the same promise');
    await assert.rejects(caller.trigger({ function_id: 'drain::fast' }), { code: 'shutting_down' });
    let done = false;
    void stopped.then(() => (done = true));
    await sleep(200);
    assert.equal(done, false, 'shutdown waits while a handler runs');
    release();
    assert.equal(await slow, 'finished', 'the running handler answered');
    await stopped;
    assert.ok(Date.now() - t0 < 5000, 'resolved when the handler was done, not at the grace period');
    assert.equal(callee.state, 'closed');
    await assert.rejects(callee.ready(100), { code: 'shutting_down' });
    await assert.rejects(callee.trigger({ function_id: 'drain::fast' }), { code: 'shutting_down' });
  });

  test('shutdown() of a worker with nothing running, or never connected, resolves at once', async () => {
    const idle = pool.make('idle');
    await idle.ready();
    const t0 = Date.now();
    await idle.shutdown();
    assert.ok(Date.now() - t0 < 1000);
    const never = new Worker('ws://127.0.0.1:1', { workerName: 'never', echoLogs: false });
    await never.shutdown();
    assert.equal(never.state, 'closed');
  });

  test('a handler running past the grace period: shutdown() resolves at the grace period', async () => {
    const callee = pool.make('past-grace');
    callee.registerFunction('grace::forever', () => new Promise(() => {}));
    await callee.ready();
    const caller = pool.make('past-grace-caller');
    await caller.ready();
    const call = caller.trigger({ function_id: 'grace::forever', timeoutMs: 10_000 });
    call.catch(() => {});
    await sleep(100);
    const t0 = Date.now();
    await callee.shutdown(300);
    const took = Date.now() - t0;
    assert.ok(took >= 250 && took < 3000, `took ${took} ms`);
    await assert.rejects(call, { code: 'invocation_stopped' });
  });
});

describe('a refused connection (unauthorized)', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine({ tokens: [{ name: 'admin', token: 'admin-secret-0123456789', admin: true, call: [], register: [], trigger_types: [] }] });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('is a refused event and an error; ready() and calls then fail at once; retries wait the backoff cap', async () => {
    const w = pool.make('no-token', { reconnect: { initialDelayMs: 10, maxDelayMs: 600 } });
    const errors: InvocationError[] = [];
    w.on('error', (e) => errors.push(e));
    const refusedAt: number[] = [];
    w.on('refused', () => refusedAt.push(Date.now()));
    const refused = await new Promise<WorkerEvent>((r) => w.once('refused', r));
    assert.ok(refused.type === 'refused');
    assert.equal(refused.final, false);
    assert.equal(refused.error.code, 'unauthorized');
    assert.match(refused.error.message, /requires a token/);
    assert.equal(errors[0]?.code, 'unauthorized');
    assert.notEqual(w.state, 'closed', 'a token may be added: the worker keeps trying');
    assert.equal(w.refusal?.code, 'unauthorized');
    // Already refused: waiting for a connection is pointless until the next attempt says otherwise.
    const t0 = Date.now();
    await assert.rejects(w.ready(10_000), { code: 'unauthorized' });
    await assert.rejects(w.trigger({ function_id: 'engine::health::check', timeoutMs: 10_000 }), { code: 'unauthorized' });
    assert.ok(Date.now() - t0 < 1000, 'at once, not at the timeout');
    // The next attempts wait the cap (600 ms less at most 30 %), not the initial 10 ms.
    await sleep(1500);
    assert.ok(refusedAt.length >= 2 && refusedAt.length <= 5, `${refusedAt.length} refusals in about 1.5 s`);
    for (let i = 1; i < refusedAt.length; i++) assert.ok(refusedAt[i]! - refusedAt[i - 1]! >= 350, `attempts ${refusedAt[i]! - refusedAt[i - 1]!} ms apart`);
  });

  test('a ready() already waiting when the refusal arrives fails with it then, not at its timeout', async () => {
    const w = pool.make('no-token-waiting', { reconnect: { initialDelayMs: 10, maxDelayMs: 600 } });
    w.on('error', () => undefined);
    assert.equal(w.refusal, null, 'not refused yet: ready() waits');
    const t0 = Date.now();
    await assert.rejects(w.ready(10_000), { code: 'unauthorized' });
    assert.ok(Date.now() - t0 < 5000, `rejected after ${Date.now() - t0} ms`);
  });
});

/**
 * A refusal's message (the `error` frame before the close) is used for that refusal only. Every svc
 * engine sends the frame, so a real engine cannot tell a stale message from a fresh one; what can is
 * a peer that closes with 4401 and only a reason, as an authenticating proxy in front of the engine
 * may. Here a loopback WebSocket server is that peer: the first connection is refused the way the
 * engine does (frame, then close), the second with the close alone.
 */
test('a refusal without an error frame says its own reason, not the message of an earlier refusal', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  let connections = 0;
  wss.on('connection', (ws) => {
    if (++connections === 1) ws.send(JSON.stringify({ type: 'error', error: { code: 'unauthorized', message: 'first refusal: the token presented is not valid' } }));
    ws.close(4401, connections === 1 ? 'unauthorized: first refusal' : 'unauthorized: second refusal, by the proxy');
  });
  const w = new WorkerPool(() => `ws://127.0.0.1:${(wss.address() as { port: number }).port}`);
  const worker = w.make('refused-twice', { reconnect: { initialDelayMs: 10, maxDelayMs: 100 } });
  worker.on('error', () => undefined);
  try {
    const messages: string[] = [];
    await new Promise<void>((resolve) =>
      worker.on('refused', (e) => {
        messages.push(e.error.message);
        if (messages.length === 2) resolve();
      }),
    );
    assert.match(messages[0]!, /refused this connection: first refusal: the token presented is not valid$/);
    assert.match(messages[1]!, /refused this connection: second refusal, by the proxy$/, 'the first refusal\'s message stuck');
  } finally {
    await w.closeAll();
    wss.close();
  }
});
