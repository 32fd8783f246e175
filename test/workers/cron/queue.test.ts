/**
 * A cron trigger with `queue`: each fire is enqueued on svc-queue (real svc-queue, embedded store)
 * and runs from there with its retries; a run that keeps failing reaches the dead-letter queue. A
 * queue svc-queue does not know fails the fire instead of being called around.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { WorkerPool } from '../../helpers/util.js';
import { startCronWorker, type RunningCronWorker } from '../../../src/workers/cron/worker.js';
import { startQueueWorker, type RunningQueueWorker } from '../../../src/workers/queue/worker.js';
import type { ScheduleView } from '../../../src/workers/cron/operations.js';
import type { JobView } from '../../../src/workers/queue/store.js';
import { until } from './helpers.js';

let engine: Awaited<ReturnType<typeof startEngine>>;
let cron: RunningCronWorker;
let queue: RunningQueueWorker;
let pool: WorkerPool;
let client: Worker;
const dirs = [mkdtempSync(join(tmpdir(), 'svc-cron-q-')), mkdtempSync(join(tmpdir(), 'svc-queue-c-'))];

before(async () => {
  engine = await startEngine();
  queue = await startQueueWorker({ url: engine.url, config: { data_dir: dirs[1], queues: { nightly: { max_attempts: 2, backoff_ms: 100, backoff_jitter: 0 } } } });
  cron = await startCronWorker({ url: engine.url, config: { data_dir: dirs[0] }, echoLogs: false });
  pool = new WorkerPool(() => engine.url);
  client = pool.make('cron-queue-client');
  await client.ready();
});
after(async () => {
  await pool?.closeAll();
  await cron?.shutdown();
  await queue?.shutdown();
  await engine?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const schedule = async (function_id: string): Promise<ScheduleView | undefined> =>
  (await client.trigger<{ schedules: ScheduleView[] }>({ function_id: 'cron::list', payload: { function_id } })).schedules[0];

test('a cron trigger with queue delivers through svc-queue, and a failing run reaches the DLQ', async () => {
  const w = pool.make('queued-jobs');
  const delivered: Array<{ data: { scheduled_time: string; payload: unknown; trigger: string }; metadata: Record<string, unknown> }> = [];
  w.registerFunction('jobs::report', (data: (typeof delivered)[number]['data'], ctx) => {
    delivered.push({ data, metadata: ctx.metadata as Record<string, unknown> });
    return { ok: true };
  });
  const attempts: number[] = [];
  w.registerFunction('jobs::broken', (_data: unknown, ctx) => {
    attempts.push((ctx.metadata as { attempt: number }).attempt);
    throw Object.assign(new Error('the report database is down'), { code: 'db_down' });
  });
  const ok = await w.registerTrigger({ type: 'cron', function_id: 'jobs::report', config: { expression: '* * * * * *', queue: 'nightly', payload: { kind: 'sales' } } });
  const broken = await w.registerTrigger({ type: 'cron', function_id: 'jobs::broken', config: { expression: '* * * * * *', queue: 'nightly' } });

  // Delivered by svc-queue: the job's metadata names the queue and the attempt.
  await until('a delivery through the queue', () => delivered.length > 0, 10_000);
  const d = delivered[0]!;
  assert.equal(d.metadata.queue, 'nightly');
  assert.equal(d.metadata.attempt, 1);
  assert.deepEqual(d.data.payload, { kind: 'sales' });
  assert.equal(d.data.trigger, 'cron');
  const view = await until('the fire\'s outcome', async () => {
    const s = await schedule('jobs::report');
    return s?.last_result ? s : undefined;
  });
  assert.equal(view.last_result!.outcome, 'ok');
  assert.equal(view.last_result!.note, 'enqueued on queue nightly');

  // Each fire of the failing one is enqueued fine (the fire's outcome is ok), runs twice
  // (max_attempts 2) and is dead-lettered with its error.
  const dlq = await until('a dead-lettered fire', async () => {
    const r = await client.trigger<{ total: number; jobs: JobView[] }>({ function_id: 'queue::dlq::list', payload: { queue: 'nightly' } });
    return r.jobs.find((j) => j.function_id === 'jobs::broken');
  }, 15_000);
  assert.equal(dlq.attempts, 2);
  assert.deepEqual(dlq.error, { code: 'db_down', message: 'the report database is down' });
  assert.equal((dlq.data as { trigger_id: string }).trigger_id, broken.id);
  assert.ok(attempts.includes(2));
  assert.equal((await schedule('jobs::broken'))!.last_result!.outcome, 'ok');
  ok.unregister();
  broken.unregister();
});

test('a queue svc-queue does not know fails the fire with its error (no silent direct call)', async () => {
  const w = pool.make('typo-jobs');
  let called = 0;
  w.registerFunction('jobs::typo', () => ++called);
  const t = await w.registerTrigger({ type: 'cron', function_id: 'jobs::typo', config: { expression: '* * * * * *', queue: 'nightyl' } });
  const view = await until('the failed fire', async () => {
    const s = await schedule('jobs::typo');
    return s?.last_result ? s : undefined;
  });
  assert.equal(view.last_result!.outcome, 'error');
  assert.equal(view.last_result!.error!.code, 'enqueue_error');
  assert.match(view.last_result!.error!.message, /"nightyl" is not configured/);
  assert.equal(called, 0);
  t.unregister();
});
