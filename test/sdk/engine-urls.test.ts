/** Several engine URLs (a cluster): the TypeScript SDK connects to one and moves on when it goes. */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import { registerWorker, type Worker } from 'svc-sdk';
import { parseEngineUrls } from 'svc-sdk/internal';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';

describe('engine URL lists', () => {
  it('parses one URL, comma-separated lists and arrays', () => {
    assert.deepEqual(parseEngineUrls('ws://a:1'), ['ws://a:1']);
    assert.deepEqual(parseEngineUrls(' ws://a:1 , ws://b:2,'), ['ws://a:1', 'ws://b:2']);
    assert.deepEqual(parseEngineUrls(['ws://a:1', 'ws://b:2,ws://c:3']), ['ws://a:1', 'ws://b:2', 'ws://c:3']);
    assert.throws(() => parseEngineUrls(' , '), /No engine URL/);
    assert.throws(() => registerWorker([], { workerName: 'none' }), /No engine URL/);
  });

  const stops: Array<() => Promise<void>> = [];
  let w: Worker | undefined;
  after(async () => {
    await w?.shutdown();
    for (const s of stops) await s();
  });

  it('skips an engine that cannot be reached and moves on when its engine goes', async () => {
    const a = await startEngine();
    const b = await startEngine();
    stops.push(a.stop, b.stop);
    // Nobody listens on port 1: the worker goes on to the next URL.
    w = registerWorker(`ws://127.0.0.1:1,${a.url},${b.url}`, { workerName: 'rover', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
    w.registerFunction('rover::where', () => 'here');
    await w.ready(10_000);
    assert.equal(w.url, a.url);
    assert.equal(await w.trigger({ function_id: 'rover::where' }), 'here');
    await a.stop();
    await eventually(() => assert.equal(w!.url, b.url), 5000);
    await w.ready(5000);
    // Replayed on the new engine.
    await eventually(async () => assert.equal(await w!.trigger({ function_id: 'rover::where' }), 'here'), 5000);
    assert.equal(b.engine.registry.get('rover::where')?.providers.length, 1);
  });
});
