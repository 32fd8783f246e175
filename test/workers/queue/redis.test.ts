/**
 * svc-queue on Redis: two replicas against one Redis take enqueues and keep to a queue's
 * concurrency across both; topic copies go out from the replica holding the subscriber's binding
 * only (the other puts back those it claims); when the one delivering stops, the other carries on.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { publish, registerWorker, TriggerAction, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startRedis, type RedisServer } from '../state/redis-server.js';
import { startQueueWorker, type RunningQueueWorker } from '../../../src/workers/queue/worker.js';
import { sleep, until } from './helpers.js';

type Engine = Awaited<ReturnType<typeof startEngine>>;

describe('svc-queue on Redis: two replicas', () => {
  let redis: RedisServer;
  let engine: Engine;
  const replicas: RunningQueueWorker[] = [];
  let client: Worker;
  let worker: Worker;
  let running = 0;
  let maxRunning = 0;
  const done: number[] = [];

  before(async () => {
    redis = await startRedis();
    engine = await startEngine();
    const config = { store: 'redis', redis_url: redis.url, queues: { shared: { concurrency: 3, backoff_ms: 50 } } };
    for (let i = 0; i < 2; i++) replicas.push(await startQueueWorker({ url: engine.url, config, workerName: `svc-queue-${i}` }));
    worker = registerWorker(engine.url, { workerName: 'redis-job-worker', echoLogs: false });
    worker.registerFunction('job::slow', async (d: { n: number }) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(15);
      running--;
      done.push(d.n);
    });
    client = registerWorker(engine.url, { workerName: 'redis-client', echoLogs: false });
    await Promise.all([worker.ready(), client.ready()]);
  });
  after(async () => {
    await client?.shutdown();
    await worker?.shutdown();
    for (const r of replicas) await r.shutdown();
    await engine?.stop();
    await redis?.stop();
  });

  test('enqueues go to both replicas; the concurrency holds across them', async () => {
    // Enqueue through each replica in turn (the engine balances engine::queue::enqueue over them).
    await Promise.all(Array.from({ length: 90 }, (_, n) => client.trigger({ function_id: 'job::slow', payload: { n }, action: TriggerAction.Enqueue({ queue: 'shared' }) })));
    await until('all 90 jobs to run', () => done.length === 90, 30_000);
    assert.deepEqual([...done].sort((a, b) => a - b), Array.from({ length: 90 }, (_, n) => n), 'each job ran once');
    assert.equal(maxRunning, 3, `at most 3 ran at once over both replicas (saw ${maxRunning})`);
    assert.equal(replicas[0]!.dispatcher.delivered + replicas[1]!.dispatcher.delivered, 90);
    const stats = await client.trigger<{ completed: number; jobs: number }>({ function_id: 'queue::stats', payload: { queue: 'shared' } });
    assert.deepEqual([stats.completed, stats.jobs], [90, 0]);
  });

  test('topic copies go out from the replica holding the binding, each once; plain jobs keep flowing on both', async () => {
    const got: number[] = [];
    worker.registerFunction('job::subscriber', async (d: { n: number }) => void got.push(d.n));
    await worker.registerTrigger({ type: 'durable:subscriber', function_id: 'job::subscriber', config: { topic: 'replicated', queue: 'shared' } });
    done.length = 0;
    await Promise.all([
      ...Array.from({ length: 40 }, (_, n) => publish(client, 'replicated', { n })),
      ...Array.from({ length: 20 }, (_, n) => client.trigger({ function_id: 'job::slow', payload: { n }, action: TriggerAction.Enqueue({ queue: 'shared' }) })),
    ]);
    await until('every copy and job to run', () => got.length === 40 && done.length === 20, 30_000);
    await sleep(200);
    assert.deepEqual([...got].sort((a, b) => a - b), Array.from({ length: 40 }, (_, n) => n), 'each copy ran once');
    const stats = await client.trigger<{ dlq: number; failed: number; jobs: number }>({ function_id: 'queue::stats', payload: { queue: 'shared' } });
    assert.deepEqual([stats.dlq, stats.failed, stats.jobs], [0, 0, 0]);
  });

  test('the replica that delivered most stops; the other runs what is enqueued next', async () => {
    replicas.sort((a, b) => b.dispatcher.delivered - a.dispatcher.delivered);
    await replicas.shift()!.shutdown();
    const other = replicas[0]!;
    const before = other.dispatcher.delivered;
    done.length = 0;
    await Promise.all(Array.from({ length: 10 }, (_, n) => client.trigger({ function_id: 'job::slow', payload: { n }, action: TriggerAction.Enqueue({ queue: 'shared' }) })));
    await until('all 10 jobs to run', () => done.length === 10);
    assert.equal(other.dispatcher.delivered - before, 10);
  });
});
