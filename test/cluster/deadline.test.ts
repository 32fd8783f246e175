/**
 * A call forwarded to another engine keeps its caller's deadline: the serving engine's default
 * (`invocation_timeout_ms`) must not cut it short, and a call without a deadline gets the calling
 * engine's default, not the serving one's. Two engines on loopback, one real redis-server.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { registerWorker, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually, sleep } from '../helpers/util.js';
import { startClusterEngine, type ClusterEngine } from './helpers.js';

describe('cluster: a forwarded call keeps its deadline', { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let calling: ClusterEngine;
  let serving: ClusterEngine;
  const workers: Worker[] = [];
  const make = (url: string, name: string): Worker => {
    const w = registerWorker(url, { workerName: name, echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
    workers.push(w);
    return w;
  };

  before(async () => {
    redis = await startRedis();
    const prefix = `test-${randomUUID().slice(0, 8)}`;
    calling = await startClusterEngine(redis.url, 'calling', prefix, { invocationTimeoutMs: 3000 });
    // The serving engine's default is shorter than the function takes.
    serving = await startClusterEngine(redis.url, 'serving', prefix, { invocationTimeoutMs: 1000 });
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown(0)));
    await Promise.all([calling, serving].map((e) => e?.stop()));
    await redis?.stop();
  });

  it("a 3000 ms call of a 1500 ms function served by an engine whose default is 1000 ms succeeds", async () => {
    const callee = make(serving.url, 'slow-callee');
    callee.registerFunction('far::slow', async () => {
      await sleep(1500);
      return 'done';
    });
    const caller = make(calling.url, 'caller');
    await callee.ready();
    await eventually(async () => {
      const f = await caller.trigger<{ engines: string[] }>({ function_id: 'engine::functions::info', payload: { function_id: 'far::slow' } });
      assert.deepEqual(f.engines, ['serving']);
    }, 5000);
    assert.equal(await caller.trigger({ function_id: 'far::slow', timeoutMs: 3000 }), 'done');
    // Without a deadline of its own the call gets the calling engine's default (3000 ms) too.
    assert.equal(await caller.trigger({ function_id: 'far::slow' }), 'done');
    // And a deadline shorter than the function still ends it, at the caller's deadline.
    await assert.rejects(caller.trigger({ function_id: 'far::slow', timeoutMs: 500 }), { code: 'timeout', message: /after 500ms/ });
  });
});
