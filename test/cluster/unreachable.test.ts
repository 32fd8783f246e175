/**
 * A call sent to an engine that has just died (its lease has not lapsed yet, so the others still
 * route to it) reaches no subscriber: the calling engine ends it at once with invocation_stopped
 * naming that engine, instead of at its deadline or when the lease lapses. Frames cross the
 * backplane as text, so this is the one place the engine reads its own forwarded frames again.
 * Two engines on loopback (the dying one a child process), one real redis-server.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually } from '../helpers/util.js';
import { spawnClusterEngine, startClusterEngine, type ClusterEngine, type EngineProcess } from './helpers.js';

describe('cluster: a call to an engine that just died', { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let calling: ClusterEngine;
  let dying: EngineProcess;
  const workers: Worker[] = [];

  before(async () => {
    redis = await startRedis();
    const prefix = `unreachable-${randomUUID().slice(0, 8)}`;
    calling = await startClusterEngine(redis.url, 'calling', prefix);
    dying = await spawnClusterEngine(redis.url, 'dying', prefix);
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown(0)));
    await dying?.kill();
    await calling?.stop();
    await redis?.stop();
  });

  it('ends at once with invocation_stopped, before the lease lapses and long before its deadline', async () => {
    const callee = registerWorker(dying.url, { workerName: 'far-callee', echoLogs: false, reconnect: { initialDelayMs: 5000, maxDelayMs: 5000 } });
    const caller = registerWorker(calling.url, { workerName: 'caller', echoLogs: false });
    workers.push(callee, caller);
    callee.registerFunction('far::echo', async (d: unknown) => d);
    await callee.ready();
    await eventually(async () => assert.deepEqual(await caller.trigger({ function_id: 'far::echo', payload: { n: 1 } }), { n: 1 }), 5000);

    await dying.kill('SIGKILL');
    const start = Date.now();
    const error = await caller.trigger({ function_id: 'far::echo', payload: { n: 2 }, timeoutMs: 20_000 }).then(
      () => assert.fail('a call to a dead engine succeeded'),
      (e: unknown) => e as InvocationError,
    );
    const took = Date.now() - start;
    assert.equal(error.code, 'invocation_stopped', error.message);
    assert.match(error.message, /engine dying is not reachable/);
    // The lease is 1500 ms (helpers.ts): an answer this quick cannot come from the lease lapsing.
    assert.ok(took < 1000, `the call ended ${took} ms after it was made`);
  });
});
