/**
 * svc-state's and svc-queue's own counters reach the engine's /metrics: both built-ins add them to
 * their process reports (engine::workers::report `state`, `queues`). Known traffic, then a scrape.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvocationError, TriggerAction, type Worker } from 'svc-sdk';
import { startQueueWorker, type RunningQueueWorker } from '../../src/workers/queue/worker.js';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';
import { startEngine } from '../helpers/engine.js';
import { eventually, promSample as sample, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;


describe('svc-state and svc-queue counters on /metrics', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  let client: Worker;
  let state: RunningStateWorker;
  let queue: RunningQueueWorker;
  let dir: string;
  const previous = process.env.SVC_PROCESS_REPORT_MS;

  before(async () => {
    // The built-ins report every 5 s by default; here every 100 ms (the SDKs read this variable).
    process.env.SVC_PROCESS_REPORT_MS = '100';
    eng = await startEngine({ metrics: { host: '127.0.0.1', port: 0, maxFunctionSeries: 1000, maxErrorCodeSeries: 100 } });
    dir = mkdtempSync(join(tmpdir(), 'svc-service-metrics-'));
    // Names of their own: svc-state and svc-queue are reserved to the instances the engine starts.
    state = await startStateWorker({ url: eng.url, workerName: 'state-1', config: { data_dir: join(dir, 'state') } });
    queue = await startQueueWorker({ url: eng.url, workerName: 'queue-1', config: { data_dir: join(dir, 'queue'), queues: { default: {}, flaky: { max_attempts: 2, backoff_ms: 20, backoff_jitter: 0 } } } });
    client = pool.make('client', { processReportIntervalMs: 0 });
    client.registerFunction('job::ok', async () => ({ ok: true }));
    client.registerFunction('job::copy', async () => ({ ok: true }));
    client.registerFunction('job::fail', async () => {
      throw new InvocationError('boom', 'fails on purpose');
    });
    await client.ready();
    await eventually(() => assert.ok(eng.engine.registry.get('job::fail')));
    await client.registerTrigger({ type: 'durable:subscriber', function_id: 'job::copy', config: { topic: 'orders', queue: 'default' } });
  });

  after(async () => {
    if (previous === undefined) delete process.env.SVC_PROCESS_REPORT_MS;
    else process.env.SVC_PROCESS_REPORT_MS = previous;
    await pool.closeAll();
    await queue?.shutdown();
    await state?.shutdown();
    await eng.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('state operations and bytes, queue events and depths, after known traffic', async () => {
    for (let i = 0; i < 3; i++) await client.trigger({ function_id: 'state::set', payload: { scope: 's', key: `k${i}`, value: 'abcd' } });
    for (let i = 0; i < 2; i++) await client.trigger({ function_id: 'state::get', payload: { scope: 's', key: 'k0' } });
    await client.trigger({ function_id: 'state::update', payload: { scope: 's', key: 'k0', ops: [{ type: 'set', path: '', value: 1 }] } });
    await client.trigger({ function_id: 'state::delete', payload: { scope: 's', key: 'k1' } });
    await client.trigger({ function_id: 'state::list', payload: { scope: 's' } });
    for (let i = 0; i < 4; i++) await client.trigger({ function_id: 'job::ok', payload: { i }, action: TriggerAction.Enqueue({ queue: 'default' }) });
    await client.trigger({ function_id: 'job::fail', payload: {}, action: TriggerAction.Enqueue({ queue: 'flaky' }) });
    // Each topic message is a copy enqueued on the subscriber's queue.
    for (let i = 0; i < 2; i++) assert.equal((await client.trigger<{ copies: number }>({ function_id: 'queue::publish', payload: { topic: 'orders', data: { i } } })).copies, 1);

    const url = eng.engine.metricsAddress()!.url;
    const s = state.worker.workerId!.slice(0, 8);
    const q = queue.worker.workerId!.slice(0, 8);
    let text = '';
    await eventually(async () => {
      text = await (await fetch(url)).text();
      const st = (op: string) => sample(text, `svc_state_operations_total{worker="state-1",replica="${s}",op="${op}"}`);
      assert.equal(st('set'), 3, text.split('\n').filter((l) => l.startsWith('svc_state') || l.startsWith('svc_queue')).join('\n'));
      assert.equal(st('get'), 2);
      assert.equal(st('update'), 1);
      assert.equal(st('delete'), 1);
      assert.equal(st('list'), 1);
      assert.equal(sample(text, `svc_state_set_bytes_total{worker="state-1",replica="${s}"}`), 3 * '"abcd"'.length);
      const job = (queueName: string, event: string) => sample(text, `svc_queue_jobs_total{worker="queue-1",replica="${q}",queue="${queueName}",event="${event}"}`);
      assert.equal(job('default', 'enqueued'), 6, '4 jobs and 2 topic copies');
      assert.equal(job('default', 'completed'), 6);
      assert.equal(job('flaky', 'enqueued'), 1);
      assert.equal(job('flaky', 'retried'), 1, 'the first failure of two attempts');
      assert.equal(job('flaky', 'dead_lettered'), 1);
      const depth = (queueName: string, st: string) => sample(text, `svc_queue_jobs{worker="queue-1",replica="${q}",queue="${queueName}",state="${st}"}`);
      assert.equal(depth('flaky', 'dlq'), 1);
      assert.equal(depth('default', 'waiting'), 0);
      assert.equal(depth('default', 'running'), 0);
    }, 10_000);
    if (process.env.SHOW) console.log(text);
  });
});
