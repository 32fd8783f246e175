/**
 * What svc-sdk knows of its engine once ready() resolves: `worker.engine` (the engine's `hello`
 * answer: name, version, limits) is there, on the first connection and after a reconnect. The
 * engine sends `workerregistered` at connect, before it reads the SDK's `hello`, so ready() waits
 * for the answer when `workerregistered` says one is coming (`svc.hello`), and only then: an engine
 * that drops `hello` (iii's) must not leave the worker waiting.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import { Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { WorkerPool } from '../helpers/util.js';

describe('worker.engine after ready()', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine({ maxFrameBytes: 300_000, invocationTimeoutMs: 12_345 });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('is the engine\'s hello answer as soon as ready() resolves, and again after a reconnect', async () => {
    const w = pool.make('engine-info', { reconnect: { initialDelayMs: 10, maxDelayMs: 50 } });
    await w.ready(5000);
    assert.equal(w.engine?.name, 'svc');
    assert.equal(w.engine?.max_frame_bytes, 300_000);
    assert.equal(w.engine?.invocation_timeout_ms, 12_345);
    assert.equal(w.defaultTimeoutMs, 12_345, 'calls without a timeout use the engine\'s deadline from the start');
    // The `connected` event comes with ready(): the engine's info is there too.
    const firstId = w.workerId;
    const seenAtConnected = new Promise<unknown>((r) => w.once('connected', () => r(w.engine?.max_frame_bytes)));
    w.simulateDisconnect();
    assert.equal(await seenAtConnected, 300_000);
    assert.notEqual(w.workerId, firstId, 'a new connection');
  });
});

test('an engine that does not answer hello (iii\'s): ready() resolves on workerregistered, worker.engine stays undefined', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  // iii's engine: `workerregistered` at connect with its own features; unknown frame types dropped.
  wss.on('connection', (ws) => ws.send(JSON.stringify({ type: 'workerregistered', worker_id: 'w-1', reattach_token: 't-1', features: ['observe.v1'] })));
  const w = new Worker(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`, { workerName: 'iii-engine', echoLogs: false, processReportIntervalMs: 0 });
  try {
    w.start();
    await w.ready(2000);
    assert.equal(w.workerId, 'w-1');
    assert.equal(w.engine, undefined);
  } finally {
    await w.shutdown(100);
    wss.close();
  }
});
