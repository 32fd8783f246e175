/** svc-queue's retry policy and config parsing: backoff with its cap and jitter, verdicts, config errors. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQueueConfig } from '../../../src/workers/queue/config.js';
import { backoffMs, failureOf, verdictOf } from '../../../src/workers/queue/policy.js';
import type { ClaimedJob } from '../../../src/workers/queue/store.js';

const settings = (raw: Record<string, unknown>) => parseQueueConfig({ queues: { q: raw } }).queues.get('q')!;

test('backoff doubles from backoff_ms up to backoff_max_ms; jitter takes off at most its share', () => {
  const s = settings({ backoff_ms: 100, backoff_max_ms: 500, backoff_jitter: 0 });
  assert.deepEqual([1, 2, 3, 4, 5, 80].map((n) => backoffMs(s, n)), [100, 200, 400, 500, 500, 500]);
  const j = settings({ backoff_ms: 1000, backoff_jitter: 0.25 });
  assert.equal(backoffMs(j, 1, () => 0), 1000);
  assert.equal(backoffMs(j, 1, () => 0.999999), 750);
  for (let i = 0; i < 1000; i++) {
    const d = backoffMs(j, 2);
    assert.ok(d >= 1500 && d <= 2000, `jittered delay ${d}`);
  }
});

test('failures: counted ones retry until max_attempts, then dead-letter; no provider is not an attempt', () => {
  const s = settings({ max_attempts: 3, backoff_ms: 100, backoff_jitter: 0 });
  const job = (attempt: number, failures: number): ClaimedJob => ({ id: 'j', queue: 'q', functionId: 'f', data: '{}', attempt, failures, group: null, enqueuedAt: 0, traceparent: null, metadata: null, topic: null, binding: null });
  const err = { code: 'invocation_failed', message: 'x'.repeat(5000) };
  const first = failureOf(job(1, 0), s, err, 10, 50);
  assert.deepEqual([first.outcome, first.runAt, first.record?.duration_ms, first.record?.attempt], ['retry', 150, 40, 1]);
  assert.ok(first.record!.message.length < 2100, 'long messages are cut');
  assert.equal(failureOf(job(3, 2), s, err, 0, 0).outcome, 'dlq');
  assert.deepEqual(failureOf(job(2, 1), s, { code: 'function_not_found', message: 'Function f not found' }, 0, 0), { id: 'j', attempt: 2, outcome: 'return', runAt: 0, record: null });
  // The handler's own nested call failed with that code: a failure of the job, not a missing function.
  assert.equal(failureOf(job(2, 1), s, { code: 'function_not_found', message: 'Function state::update not found' }, 0, 0).outcome, 'retry');
  assert.deepEqual(['function_not_found', 'overloaded', 'shutting_down', 'timeout', 'invocation_stopped', 'connection_lost'].map((c) => verdictOf(c)), ['absent', 'busy', 'busy', 'failed', 'failed', 'failed']);
  // A topic's copy with no live binding waits, not an attempt; one whose subscription ended is dead at once.
  const copy = { ...job(1, 0), topic: 't' };
  assert.deepEqual(failureOf(copy, s, { code: 'binding_not_found', message: 'x' }, 0, 0, 'unbound'), { id: 'j', attempt: 1, outcome: 'return', runAt: 0, record: null });
  const ended = failureOf(copy, s, { code: 'subscription_ended', message: 'gone' }, 0, 5, 'ended');
  assert.deepEqual([ended.outcome, ended.record?.code, ended.record?.attempt], ['dlq', 'subscription_ended', 1]);
});

test('config: defaults, a default queue always, and errors that name the key', () => {
  const c = parseQueueConfig({}, '/p');
  assert.equal(c.dataDir, '/p/data/queue');
  assert.deepEqual([...c.queues.keys()], ['default']);
  const d = c.queues.get('default')!;
  assert.deepEqual([d.maxAttempts, d.backoffMs, d.backoffMaxMs, d.concurrency, d.timeoutMs, d.delayMs, d.messageGroupField], [3, 1000, 60_000, 10, 30_000, 0, null]);
  assert.throws(() => parseQueueConfig({ queues: { q: { max_attempts: 0 } } }), /queues\.q: "max_attempts" must be an integer from 1 to 1000, got 0/);
  assert.throws(() => parseQueueConfig({ queues: { q: { retries: 2 } } }), /queues\.q: unknown key "retries"/);
  assert.throws(() => parseQueueConfig({ queues: { 'a.b': {} } }), /queue name "a\.b" must be/);
  assert.throws(() => parseQueueConfig({ store: 'postgres' }), /"store" must be "embedded" or "redis"/);
  assert.throws(() => parseQueueConfig({ queues: { q: { backoff_ms: 5000, backoff_max_ms: 100 } } }), /"backoff_max_ms" \(100\) must be at least "backoff_ms" \(5000\)/);
  assert.equal(settings({ backoff_ms: 120_000 }).backoffMaxMs, 120_000, 'an unset cap is never below backoff_ms');
});
