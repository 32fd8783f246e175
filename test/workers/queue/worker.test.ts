/**
 * svc-queue through a real engine (embedded store): enqueue with TriggerAction.Enqueue, what the
 * handler sees, refusals, retries with their backoff, the dead-letter queue and redrive, FIFO groups,
 * jobs whose function has no provider, timeouts, a worker that drops mid-job, delayed queues.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerWorker, TriggerAction, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startQueueWorker, type RunningQueueWorker } from '../../../src/workers/queue/worker.js';
import type { JobView } from '../../../src/workers/queue/store.js';
import { callError, sleep, until } from './helpers.js';

type Engine = Awaited<ReturnType<typeof startEngine>>;

const QUEUES = {
  default: {},
  fast: { max_attempts: 3, backoff_ms: 150, backoff_jitter: 0, timeout_ms: 2000 },
  fifo: { concurrency: 8, message_group_field: 'user' },
  slow: { timeout_ms: 300, max_attempts: 2, backoff_ms: 50 },
  later: { delay_ms: 300 },
  tiny: { max_jobs: 2, max_attempts: 1 },
};

describe('svc-queue through the engine (embedded store)', () => {
  let engine: Engine;
  let queue: RunningQueueWorker;
  let client: Worker;
  let dir: string;
  const stats = (q: string) => client.trigger<{ waiting: number; delayed: number; running: number; dlq: number; completed: number; failed: number; jobs: number }>({ function_id: 'queue::stats', payload: { queue: q } });

  before(async () => {
    engine = await startEngine();
    dir = mkdtempSync(join(tmpdir(), 'svc-queue-w-'));
    queue = await startQueueWorker({ url: engine.url, config: { data_dir: dir, queues: QUEUES } });
    client = registerWorker(engine.url, { workerName: 'queue-test-client', echoLogs: false });
    await client.ready();
  });
  after(async () => {
    await client?.shutdown();
    await queue?.shutdown();
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an enqueue answers {messageReceiptId}; the job runs later with its id and attempt in ctx.metadata, in the trace of the enqueue', async () => {
    const seen: Array<{ data: unknown; metadata: unknown; traceparent: string | undefined }> = [];
    client.registerFunction('job::echo', async (data: unknown, ctx) => void seen.push({ data, metadata: ctx.metadata, traceparent: ctx.traceparent }));
    const r = await client.trigger({ function_id: 'job::echo', payload: { x: 1 }, action: TriggerAction.Enqueue({ queue: 'default' }), metadata: { tenant: 't1' } });
    assert.match(r.messageReceiptId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await until('the job to run', () => seen.length === 1);
    const { data, metadata, traceparent } = seen[0]!;
    assert.deepEqual(data, { x: 1 });
    const m = metadata as Record<string, unknown>;
    assert.equal(typeof m.enqueued_at, 'number');
    assert.deepEqual({ ...m, enqueued_at: 0 }, { message_id: r.messageReceiptId, attempt: 1, max_attempts: 3, queue: 'default', enqueued_at: 0, metadata: { tenant: 't1' } });
    const traceId = traceparent!.split('-')[1]!;
    const spans = await until('both spans in the trace', async () => {
      const t = await client.trigger<{ spans: Array<{ function_id: string }> }>({ function_id: 'engine::traces::get', payload: { trace_id: traceId } });
      const ids = t.spans.map((s) => s.function_id);
      return ids.includes('job::echo') && ids.includes('engine::queue::enqueue') ? ids : undefined;
    });
    assert.ok(spans.length >= 2);
    await until('the completion to be recorded', async () => (await stats('default')).completed >= 1);
    const s = await stats('default');
    assert.deepEqual([s.waiting, s.running, s.jobs], [0, 0, 0]);
  });

  test('refusals answer at once: an unknown queue (enqueue_error), a FIFO payload without its group field, a full queue', async () => {
    const unknown = await callError(client.trigger({ function_id: 'job::echo', payload: {}, action: TriggerAction.Enqueue({ queue: 'nope' }) }));
    assert.equal(unknown.code, 'enqueue_error');
    assert.match(unknown.message, /queue "nope" is not configured; configured queues: default, fast/);
    const noGroup = await callError(client.trigger({ function_id: 'job::echo', payload: { other: 1 }, action: TriggerAction.Enqueue({ queue: 'fifo' }) }));
    assert.equal(noGroup.code, 'enqueue_error');
    assert.match(noGroup.message, /payload field "user"/);
    // Nobody serves job::nobody: jobs wait; the third does not fit in max_jobs 2.
    for (let i = 0; i < 2; i++) await client.trigger({ function_id: 'job::nobody', payload: { i }, action: TriggerAction.Enqueue({ queue: 'tiny' }) });
    const full = await callError(client.trigger({ function_id: 'job::nobody', payload: { i: 2 }, action: TriggerAction.Enqueue({ queue: 'tiny' }) }));
    assert.equal(full.code, 'queue_full');
    assert.match(full.message, /queue "tiny" is full: it holds 2 jobs \(max_jobs 2\)/);
    assert.deepEqual(await client.trigger({ function_id: 'queue::purge', payload: { queue: 'tiny' } }), { queue: 'tiny', purged: 2 });
  });

  test('a job that always fails is dead-lettered after exactly max_attempts runs, its backoff gaps as configured; redrive runs it again', async () => {
    const runs: Array<{ at: number; attempt: number }> = [];
    client.registerFunction('job::fail', async (_d: unknown, ctx) => {
      runs.push({ at: Date.now(), attempt: (ctx.metadata as { attempt: number }).attempt });
      throw new Error('always fails');
    });
    const { messageReceiptId: id } = await client.trigger({ function_id: 'job::fail', payload: { n: 7 }, action: TriggerAction.Enqueue({ queue: 'fast' }) });
    await until('the job to reach the DLQ', async () => (await stats('fast')).dlq === 1);
    await sleep(400); // no fourth run comes
    assert.deepEqual(runs.map((r) => r.attempt), [1, 2, 3]);
    // backoff_ms 150, no jitter: 150 ms before the 2nd run, 300 ms before the 3rd (plus delivery time).
    const gaps = [runs[1]!.at - runs[0]!.at, runs[2]!.at - runs[1]!.at];
    assert.ok(gaps[0]! >= 150 && gaps[0]! < 150 + 250, `first gap ${gaps[0]} ms, configured 150`);
    assert.ok(gaps[1]! >= 300 && gaps[1]! < 300 + 250, `second gap ${gaps[1]} ms, configured 300`);

    const before = await stats('fast');
    assert.deepEqual([before.waiting, before.delayed, before.running, before.dlq, before.failed, before.jobs], [0, 0, 0, 1, 3, 1]);
    const dlq = await client.trigger<{ total: number; jobs: JobView[] }>({ function_id: 'queue::dlq::list', payload: { queue: 'fast' } });
    assert.equal(dlq.total, 1);
    assert.equal(dlq.jobs.length, 1, 'the DLQ list agrees with its count');
    const dead = dlq.jobs[0]!;
    assert.equal(dead.id, id);
    assert.deepEqual(dead.data, { n: 7 });
    assert.deepEqual(dead.error, { code: 'invocation_failed', message: 'always fails' });
    assert.deepEqual(dead.history.map((h) => h.attempt), [1, 2, 3]);
    assert.equal(dead.attempts, 3);

    assert.deepEqual(await client.trigger({ function_id: 'queue::dlq::redrive', payload: { queue: 'fast' } }), { queue: 'fast', redriven: 1 });
    await until('the redriven job to run', () => runs.length >= 4);
    assert.equal(runs[3]!.attempt, 4, 'the handler sees the delivery count go on');
    await until('the job to reach the DLQ again', async () => (await stats('fast')).dlq === 1 && runs.length === 6);
    const after = await stats('fast');
    assert.deepEqual([after.dlq, after.failed, after.jobs, after.waiting, after.running], [1, 6, 1, 0, 0]);
    assert.deepEqual(await client.trigger({ function_id: 'queue::dlq::delete', payload: { queue: 'fast', id } }), { queue: 'fast', deleted: 1 });
    assert.equal((await stats('fast')).jobs, 0);
  });

  test('FIFO: 10 groups × 100 jobs at concurrency 8 — each group in order, groups in parallel', async () => {
    const order = new Map<string, number[]>();
    const active = new Map<string, number>();
    let running = 0;
    let maxRunning = 0;
    let maxPerGroup = 0;
    client.registerFunction('job::fifo', async (d: { user: string; seq: number }) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      const a = (active.get(d.user) ?? 0) + 1;
      active.set(d.user, a);
      maxPerGroup = Math.max(maxPerGroup, a);
      order.set(d.user, [...(order.get(d.user) ?? []), d.seq]);
      await sleep(2);
      active.set(d.user, active.get(d.user)! - 1);
      running--;
    });
    const sends: Array<Promise<unknown>> = [];
    for (let seq = 0; seq < 100; seq++) {
      for (let g = 0; g < 10; g++) sends.push(client.trigger({ function_id: 'job::fifo', payload: { user: `u${g}`, seq }, action: TriggerAction.Enqueue({ queue: 'fifo' }) }));
    }
    await Promise.all(sends);
    await until('all 1000 jobs to run', () => [...order.values()].reduce((n, s) => n + s.length, 0) === 1000, 60_000);
    for (const [user, seqs] of order) assert.deepEqual(seqs, Array.from({ length: 100 }, (_, i) => i), `group ${user} ran in order, once each`);
    assert.equal(maxPerGroup, 1, 'one job of a group at a time');
    assert.ok(maxRunning > 1 && maxRunning <= 8, `groups ran in parallel within the concurrency: at most ${maxRunning} at once`);
    await until('the completions to be recorded', async () => (await stats('fifo')).completed === 1000);
  });

  test('a job whose function has no provider waits without using attempts, and runs once it is registered', async () => {
    await client.trigger({ function_id: 'job::late', payload: {}, action: TriggerAction.Enqueue({ queue: 'fast' }) });
    await until('svc-queue to see that job::late has no provider', async () => {
      const l = await client.trigger<{ absent_functions: string[] }>({ function_id: 'queue::list', payload: {} });
      return l.absent_functions.includes('job::late');
    });
    await sleep(500);
    const waiting = await stats('fast');
    assert.deepEqual([waiting.waiting, waiting.failed, waiting.dlq], [1, 6, 0], 'still waiting, no attempt counted');
    const seen: unknown[] = [];
    const late = registerWorker(engine.url, { workerName: 'late-worker', echoLogs: false });
    try {
      late.registerFunction('job::late', async (_d: unknown, ctx) => void seen.push(ctx.metadata));
      await until('the waiting job to run', () => seen.length === 1);
      assert.equal((seen[0] as { attempt: number }).attempt, 1);
    } finally {
      await late.shutdown();
    }
  });

  // Before: the function stayed in absent_functions ("waiting for a provider") after its jobs were purged.
  test('a purge of the jobs of a function without a provider: it is no longer listed as waited for', async () => {
    await client.trigger({ function_id: 'job::gone', payload: {}, action: TriggerAction.Enqueue({ queue: 'fast' }) });
    const absent = async (): Promise<string[]> => (await client.trigger<{ absent_functions: string[] }>({ function_id: 'queue::list', payload: {} })).absent_functions;
    // Absent, and the job back among the waiting (it is running while its delivery is refused).
    await until('svc-queue to see that job::gone has no provider', async () => (await absent()).includes('job::gone') && (await stats('fast')).waiting === 1);
    const purged = await client.trigger<{ purged: number }>({ function_id: 'queue::purge', payload: { queue: 'fast' } });
    assert.equal(purged.purged, 1);
    await until('job::gone to leave absent_functions', async () => !(await absent()).includes('job::gone'), 3000);
    assert.equal((await stats('fast')).waiting, 0);
  });

  test("a handler failing with its nested call's function_not_found is a failed attempt, not a missing function", async () => {
    client.registerFunction('job::nested', async (_d: unknown, ctx) => ctx.worker.trigger({ function_id: 'job::missing_dependency', payload: {} }));
    await client.trigger({ function_id: 'job::nested', payload: {}, action: TriggerAction.Enqueue({ queue: 'slow' }) });
    await until('the job to reach the DLQ', async () => (await stats('slow')).dlq === 1, 10_000);
    const dlq = await client.trigger<{ jobs: JobView[] }>({ function_id: 'queue::dlq::list', payload: { queue: 'slow' } });
    assert.deepEqual(dlq.jobs[0]!.history.map((h) => [h.code, h.message]), [
      ['function_not_found', 'Function job::missing_dependency not found'],
      ['function_not_found', 'Function job::missing_dependency not found'],
    ]);
    await client.trigger({ function_id: 'queue::dlq::delete', payload: { queue: 'slow' } });
  });

  test('a run not answered within timeout_ms is a failed attempt (timeout)', async () => {
    client.registerFunction('job::hang', async () => sleep(2000));
    await client.trigger({ function_id: 'job::hang', payload: {}, action: TriggerAction.Enqueue({ queue: 'slow' }) });
    await until('the job to reach the DLQ', async () => (await stats('slow')).dlq === 1, 10_000);
    const dlq = await client.trigger<{ jobs: JobView[] }>({ function_id: 'queue::dlq::list', payload: { queue: 'slow' } });
    assert.deepEqual(dlq.jobs[0]!.history.map((h) => h.code), ['timeout', 'timeout']);
  });

  test('a worker that drops its connection mid-job: the job runs again', async () => {
    const attempts: number[] = [];
    const flaky = registerWorker(engine.url, { workerName: 'flaky-worker', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 100 } });
    try {
      flaky.registerFunction('job::flaky', async (_d: unknown, ctx) => {
        const attempt = (ctx.metadata as { attempt: number }).attempt;
        attempts.push(attempt);
        if (attempt === 1) {
          flaky.simulateDisconnect();
          await sleep(5000);
        }
      });
      await flaky.ready();
      await client.trigger({ function_id: 'job::flaky', payload: {}, action: TriggerAction.Enqueue({ queue: 'fast' }) });
      await until('the second run', () => attempts.length === 2);
      assert.deepEqual(attempts, [1, 2]);
      const dlq = await client.trigger<{ total: number }>({ function_id: 'queue::dlq::list', payload: { queue: 'fast' } });
      assert.equal(dlq.total, 0);
    } finally {
      await flaky.shutdown(0);
    }
  });

  test('a queue with delay_ms runs its jobs no sooner than that', async () => {
    const ran: number[] = [];
    client.registerFunction('job::delayed', async () => void ran.push(Date.now()));
    const t0 = Date.now();
    await client.trigger({ function_id: 'job::delayed', payload: {}, action: TriggerAction.Enqueue({ queue: 'later' }) });
    const jobs = await client.trigger<{ total: number; jobs: JobView[] }>({ function_id: 'queue::jobs', payload: { queue: 'later', state: 'delayed' } });
    assert.equal(jobs.total, 1);
    await until('the delayed job to run', () => ran.length === 1);
    assert.ok(ran[0]! - t0 >= 300, `ran after ${ran[0]! - t0} ms, delay_ms 300`);
  });

  test('queue::list shows every queue with its counts and settings', async () => {
    const l = await client.trigger<{ queues: Array<{ queue: string; configured: boolean; config: Record<string, unknown> }> }>({ function_id: 'queue::list', payload: {} });
    assert.deepEqual(l.queues.map((q) => q.queue), ['default', 'fast', 'fifo', 'later', 'slow', 'tiny']);
    const fifo = l.queues.find((q) => q.queue === 'fifo')!;
    assert.equal(fifo.config.message_group_field, 'user');
    assert.equal(fifo.config.concurrency, 8);
    const bad = await callError(client.trigger({ function_id: 'queue::stats', payload: { queue: 'nope' } }));
    assert.equal(bad.code, 'unknown_queue');
  });
});
