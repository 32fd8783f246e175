/**
 * The queue store conformance suite: one function, run against every QueueStore (store.test.ts).
 * It drives the store's steps with explicit times, so it checks the state machine itself: claims,
 * lanes and groups, concurrency, retries, the dead-letter queue, leases, budgets, topics, and that
 * counts and listings agree after every change.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { ClaimedJob, JobState, NewJob, QueueLimits, QueueStore, StepInput, StepOutput } from '../../../src/workers/queue/store.js';

/** Opens a fresh, empty, isolated store. */
export type OpenQueueStore = () => Promise<QueueStore>;

const LIMITS: QueueLimits = { concurrency: 10, leaseMs: 1000, maxJobs: 1000, maxBytes: 1 << 20 };
const T0 = 1_700_000_000_000;

export function job(id: string, over: Partial<NewJob> = {}): NewJob {
  const data = over.data ?? JSON.stringify({ n: id });
  return {
    id,
    queue: 'q',
    functionId: 'fn::a',
    data,
    bytes: Buffer.byteLength(data),
    group: null,
    runAt: 0,
    traceparent: null,
    metadata: null,
    topic: null,
    binding: null,
    ...over,
  };
}

class Q {
  constructor(
    readonly store: QueueStore,
    readonly limits: Record<string, QueueLimits> = { q: LIMITS },
  ) {}
  step(now: number, s: Partial<StepInput>): Promise<StepOutput> {
    return this.store.step({ now, limits: this.limits, enqueue: [], publish: [], complete: [], fail: [], claim: {}, absent: [], maintain: false, ...s });
  }
  async enqueue(now: number, ...jobs: NewJob[]): Promise<void> {
    const out = await this.step(now, { enqueue: jobs });
    assert.deepEqual(out.enqueued, jobs.map(() => null));
  }
  async claim(now: number, n: number, queue = 'q', absent: string[] = []): Promise<ClaimedJob[]> {
    return (await this.step(now, { claim: { [queue]: n }, absent })).claimed;
  }
  async counts(queue = 'q') {
    const c = (await this.store.counts([queue])).find((x) => x.queue === queue)!;
    return c;
  }
  /** Counts and listings agree: every list's total is its count, and it lists exactly that many. */
  async consistent(queue = 'q'): Promise<Record<JobState, string[]>> {
    const c = await this.counts(queue);
    assert.equal(c.jobs, c.waiting + c.delayed + c.running + c.dlq, `jobs = waiting + delayed + running + dlq: ${JSON.stringify(c)}`);
    const ids = {} as Record<JobState, string[]>;
    let bytes = 0;
    for (const state of ['waiting', 'delayed', 'running', 'dlq'] as const) {
      const l = await this.store.list(queue, state, 0, 10_000);
      assert.equal(l.total, c[state], `${state}: list total ${l.total} vs count ${c[state]}`);
      assert.equal(l.jobs.length, c[state], `${state}: ${l.jobs.length} listed vs count ${c[state]}`);
      assert.ok(l.jobs.every((j) => j.state === state && j.queue === queue), `${state} listing holds only ${state} jobs`);
      ids[state] = l.jobs.map((j) => j.id);
      for (const j of l.jobs) bytes += Buffer.byteLength(JSON.stringify(j.data));
    }
    assert.equal(c.bytes, bytes, 'bytes held = bytes of the jobs listed');
    return ids;
  }
}

export function queueConformance(name: string, open: OpenQueueStore): void {
  describe(`queue store conformance: ${name}`, () => {
    const withStore = (title: string, body: (q: Q) => Promise<void>, limits?: Record<string, QueueLimits>) =>
      test(title, async () => {
        const store = await open();
        try {
          await body(new Q(store, limits));
        } finally {
          await store.close();
        }
      });

    withStore('enqueue, claim, complete: the job moves through its states and the counts follow', async (q) => {
      await q.consistent();
      await q.enqueue(T0, job('a', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', metadata: '{"m":1}' }), job('b'));
      assert.deepEqual((await q.consistent()).waiting.sort(), ['a', 'b']);
      const [a, b, none] = await q.claim(T0 + 1, 5);
      assert.equal(none, undefined);
      assert.deepEqual(a, {
        id: 'a',
        queue: 'q',
        functionId: 'fn::a',
        data: '{"n":"a"}',
        attempt: 1,
        failures: 0,
        group: null,
        enqueuedAt: T0,
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        metadata: '{"m":1}',
        topic: null,
        binding: null,
      });
      assert.equal(b!.id, 'b', 'claims keep enqueue order within a lane');
      let ids = await q.consistent();
      assert.deepEqual(ids.running.sort(), ['a', 'b']);
      const running = await q.store.list('q', 'running', 0, 10);
      assert.equal(running.jobs[0]!.at, T0 + 1 + LIMITS.leaseMs, 'a running job shows its lease deadline');
      await q.step(T0 + 2, { complete: [{ id: 'a', attempt: 1 }] });
      // A second result for the same attempt, or one for another attempt, changes nothing.
      await q.step(T0 + 3, { complete: [{ id: 'a', attempt: 1 }, { id: 'b', attempt: 2 }] });
      ids = await q.consistent();
      assert.deepEqual(ids.running, ['b']);
      const c = await q.counts();
      assert.equal(c.completed, 1);
      await q.step(T0 + 4, { complete: [{ id: 'b', attempt: 1 }] });
      assert.deepEqual(await q.counts(), { queue: 'q', waiting: 0, delayed: 0, running: 0, dlq: 0, completed: 2, failed: 0, jobs: 0, bytes: 0 });
    });

    withStore('an enqueue and a claim in one step: the fresh job is handed out at once', async (q) => {
      const out = await q.step(T0, { enqueue: [job('fast')], claim: { q: 1 } });
      assert.deepEqual(out.enqueued, [null]);
      assert.deepEqual(out.claimed.map((j) => [j.id, j.attempt]), [['fast', 1]]);
      await q.consistent();
    });

    withStore('a fresh job claimed in its own step never overtakes jobs already waiting', async (q) => {
      await q.enqueue(T0, job('old', { functionId: 'fn::old' }));
      const out = await q.step(T0 + 1, { enqueue: [job('new', { functionId: 'fn::new' }), job('grouped', { group: 'g' })], claim: { q: 1 } });
      assert.deepEqual(out.claimed.map((j) => j.id), ['old']);
      assert.deepEqual((await q.claim(T0 + 2, 5)).map((j) => j.id), [], 'the concurrency (1) is taken');
      const ids = await q.consistent();
      assert.deepEqual(ids.waiting.sort(), ['grouped', 'new']);
      // With room for all, fresh jobs are claimed in the step that stores them, in order.
      const wide = new Q(q.store, { q: { ...LIMITS, concurrency: 10 } });
      const more = await wide.step(T0 + 3, { enqueue: [job('f1'), job('f2', { group: 'h' }), job('f3', { group: 'h' })], claim: { q: 10 } });
      assert.deepEqual(more.claimed.map((j) => [j.id, j.attempt]).sort(), [['f1', 1], ['f2', 1], ['grouped', 1], ['new', 1]]);
      assert.deepEqual((await wide.consistent()).waiting, ['f3'], 'f3 waits for f2, its group');
    }, { q: { ...LIMITS, concurrency: 1 } });

    withStore('fresh jobs claimed in the step that stores them keep to the concurrency', async (q) => {
      // Each in a lane of its own (its own function), so each could skip its lane: only the
      // concurrency stops the third.
      const out = await q.step(T0, { enqueue: ['a', 'b', 'c', 'd'].map((f) => job(f, { functionId: `fn::${f}` })), claim: { q: 10 } });
      assert.deepEqual(out.claimed.map((j) => j.id), ['a', 'b']);
      assert.deepEqual((await q.consistent()).waiting.sort(), ['c', 'd']);
      assert.equal((await q.claim(T0, 10)).length, 0, 'nothing more while 2 run');
    }, { q: { ...LIMITS, concurrency: 2 } });

    withStore('a fresh job never overtakes its own lane: after a claim that stopped mid-lane, or skipped an absent function', async (q) => {
      await q.enqueue(T0, job('a1'), job('a2'), job('b1', { functionId: 'fn::b' }));
      assert.deepEqual((await q.claim(T0, 1, 'q', ['fn::b'])).map((j) => j.id), ['a1'], 'one taken, a2 left in its lane');
      let out = await q.step(T0 + 1, { complete: [{ id: 'a1', attempt: 1 }], enqueue: [job('a3')], claim: { q: 1 }, absent: ['fn::b'] });
      assert.deepEqual(out.claimed.map((j) => j.id), ['a2'], 'a2 before the fresh a3');
      out = await q.step(T0 + 2, { complete: [{ id: 'a2', attempt: 1 }], enqueue: [job('b2', { functionId: 'fn::b' })], claim: { q: 1 } });
      assert.deepEqual(out.claimed.map((j) => j.id), ['b1'], 'fn::b is back: b1 before the fresh b2');
      out = await q.step(T0 + 3, { complete: [{ id: 'b1', attempt: 1 }], claim: { q: 1 } });
      assert.deepEqual(out.claimed.map((j) => j.id), ['a3']);
      assert.deepEqual((await q.consistent()).waiting, ['b2']);
    }, { q: { ...LIMITS, concurrency: 1 } });

    withStore('claims keep to the concurrency, counted over everything running', async (q) => {
      await q.enqueue(T0, ...Array.from({ length: 6 }, (_, i) => job(`j${i}`)));
      assert.equal((await q.claim(T0, 100)).length, 4);
      assert.equal((await q.claim(T0, 100)).length, 0, 'nothing more while 4 run');
      await q.step(T0, { complete: [{ id: 'j0', attempt: 1 }] });
      assert.deepEqual((await q.claim(T0, 100)).map((j) => j.id), ['j4']);
      await q.consistent();
    }, { q: { ...LIMITS, concurrency: 4 } });

    withStore('message groups: one job of a group at a time, in order; groups in parallel', async (q) => {
      const jobs: NewJob[] = [];
      for (let i = 0; i < 3; i++) for (const g of ['g1', 'g2']) jobs.push(job(`${g}-${i}`, { group: g }));
      jobs.push(job('free-0'), job('free-1'));
      await q.enqueue(T0, ...jobs);
      let claimed = await q.claim(T0, 10);
      assert.deepEqual(claimed.map((j) => j.id).sort(), ['free-0', 'free-1', 'g1-0', 'g2-0'], 'the head of each group and every ungrouped job');
      assert.deepEqual((await q.claim(T0, 10)).map((j) => j.id), [], 'groups are busy while their job runs');
      await q.step(T0, { complete: [{ id: 'g1-0', attempt: 1 }] });
      claimed = await q.claim(T0, 10);
      assert.deepEqual(claimed.map((j) => [j.id, j.group]), [['g1-1', 'g1']]);
      // A retry keeps the group busy until it has run again, and runs before the rest of its group.
      await q.step(T0, { fail: [{ id: 'g2-0', attempt: 1, outcome: 'retry', runAt: T0 + 100, record: { attempt: 1, at: T0, duration_ms: 1, code: 'invocation_failed', message: 'boom' } }] });
      assert.deepEqual((await q.claim(T0 + 50, 10, 'q')).map((j) => j.id), []);
      const ids = await q.consistent();
      assert.deepEqual(ids.delayed, ['g2-0']);
      assert.deepEqual((await q.step(T0 + 100, { maintain: true, claim: { q: 10 } })).claimed.map((j) => [j.id, j.attempt, j.failures]), [['g2-0', 2, 1]]);
      await q.consistent();
    });

    withStore('a retry waits in delayed until due, then runs before its lane', async (q) => {
      await q.enqueue(T0, job('r'), job('other'));
      const [r] = await q.claim(T0, 1);
      assert.equal(r!.id, 'r');
      const record = { attempt: 1, at: T0 + 5, duration_ms: 5, code: 'invocation_failed', message: 'boom' };
      const out = await q.step(T0 + 5, { fail: [{ id: 'r', attempt: 1, outcome: 'retry', runAt: T0 + 1000, record }] });
      assert.equal(out.nextDueAt, T0 + 1000, 'the next due time is reported');
      const delayed = await q.store.list('q', 'delayed', 0, 10);
      assert.deepEqual(delayed.jobs.map((j) => [j.id, j.at, j.failures, j.error]), [['r', T0 + 1000, 1, { code: 'invocation_failed', message: 'boom' }]]);
      assert.equal((await q.step(T0 + 999, { maintain: true })).nextDueAt, T0 + 1000, 'not due yet');
      assert.equal((await q.counts()).delayed, 1);
      await q.step(T0 + 1000, { maintain: true });
      const claimed = await q.claim(T0 + 1000, 1);
      assert.deepEqual(claimed.map((j) => [j.id, j.attempt, j.failures]), [['r', 2, 1]], 'the retry runs before the job that waited behind it');
      assert.equal((await q.counts()).failed, 1);
      await q.consistent();
    });

    withStore('the last failure dead-letters the job with its history; redrive and delete', async (q) => {
      await q.enqueue(T0, job('d1'), job('d2'), job('d3'));
      for (const [attempt, outcome] of [[1, 'retry'], [2, 'dlq']] as const) {
        await q.step(T0 + attempt * 10, { maintain: true });
        const claimed = await q.claim(T0 + attempt * 10, 3);
        const fails = claimed.map((j) => ({
          id: j.id,
          attempt: j.attempt,
          outcome,
          runAt: T0 + attempt * 10,
          record: { attempt: j.attempt, at: T0 + attempt * 10, duration_ms: 2, code: 'timeout', message: `try ${j.attempt}` },
        }));
        assert.equal(fails.length, 3);
        await q.step(T0 + attempt * 10, { fail: fails });
      }
      const ids = await q.consistent();
      assert.deepEqual(ids.dlq.sort(), ['d1', 'd2', 'd3']);
      const dead = await q.store.list('q', 'dlq', 0, 10);
      const d1 = dead.jobs.find((j) => j.id === 'd1')!;
      assert.deepEqual(d1.history.map((h) => [h.attempt, h.code, h.message]), [
        [1, 'timeout', 'try 1'],
        [2, 'timeout', 'try 2'],
      ]);
      assert.deepEqual(d1.error, { code: 'timeout', message: 'try 2' });
      assert.equal(d1.at, T0 + 20);
      assert.deepEqual(d1.data, { n: 'd1' });
      assert.equal(d1.attempts, 2);
      assert.equal(d1.failures, 2);
      const page = await q.store.list('q', 'dlq', 1, 1);
      assert.equal(page.total, 3);
      assert.equal(page.jobs.length, 1);
      assert.equal((await q.counts()).failed, 6);

      assert.equal(await q.store.redrive('q', ['d1', 'nope', 'd1'], T0 + 30), 1, 'unknown ids are skipped, repeats count once');
      assert.equal(await q.store.deleteDead('q', ['d2']), 1);
      let c = await q.counts();
      assert.deepEqual([c.waiting, c.dlq, c.jobs], [1, 1, 2]);
      await q.consistent();
      const [again] = await q.claim(T0 + 40, 1);
      assert.deepEqual([again!.id, again!.attempt, again!.failures], ['d1', 3, 0], 'a redriven job has all its attempts again');
      assert.equal(await q.store.redrive('q', null, T0 + 50), 1);
      assert.equal(await q.store.deleteDead('q', null), 0);
      c = await q.counts();
      assert.deepEqual([c.waiting, c.running, c.dlq], [1, 1, 0]);
      await q.consistent();
    });

    withStore('a returned job (its function had no provider) is not an attempt and goes back to the front', async (q) => {
      await q.enqueue(T0, job('first', { group: 'g' }), job('second', { group: 'g' }));
      const [first] = await q.claim(T0, 5);
      await q.step(T0, { fail: [{ id: 'first', attempt: first!.attempt, outcome: 'return', runAt: 0, record: null }] });
      const c = await q.counts();
      assert.deepEqual([c.waiting, c.running, c.failed], [2, 0, 0]);
      const [again] = await q.claim(T0, 5);
      assert.deepEqual([again!.id, again!.attempt, again!.failures], ['first', 1, 0]);
      await q.consistent();
    });

    withStore('the lanes of an absent function are skipped; the rest of the queue flows', async (q) => {
      await q.enqueue(T0, job('gone-1', { functionId: 'fn::gone' }), job('here-1'), job('gone-2', { functionId: 'fn::gone', group: 'g' }), job('here-2'));
      const claimed = await q.claim(T0, 10, 'q', ['fn::gone']);
      assert.deepEqual(claimed.map((j) => j.id), ['here-1', 'here-2']);
      const later = await q.claim(T0, 10, 'q', []);
      assert.deepEqual(later.map((j) => j.id).sort(), ['gone-1', 'gone-2'], 'once present, its jobs are claimed');
      await q.consistent();
    });

    withStore('lanes are served round-robin', async (q) => {
      const jobs: NewJob[] = [];
      for (let i = 0; i < 3; i++) for (const fn of ['fn::a', 'fn::b', 'fn::c']) jobs.push(job(`${fn}-${i}`, { functionId: fn }));
      await q.enqueue(T0, ...jobs);
      assert.deepEqual((await q.claim(T0, 3)).map((j) => j.functionId).sort(), ['fn::a', 'fn::b', 'fn::c']);
      await q.consistent();
    });

    withStore('delayed jobs: not claimable until due, then in enqueue order', async (q) => {
      await q.enqueue(T0, job('d1', { runAt: T0 + 500, group: 'g' }), job('d2', { runAt: T0 + 500, group: 'g' }), job('now'));
      const out = await q.step(T0, { claim: { q: 10 } });
      assert.deepEqual(out.claimed.map((j) => j.id), ['now']);
      assert.equal(out.nextDueAt, T0 + 500);
      assert.deepEqual((await q.consistent()).delayed, ['d1', 'd2']);
      const due = await q.step(T0 + 500, { maintain: true, claim: { q: 10 } });
      assert.deepEqual(due.claimed.map((j) => j.id), ['d1'], 'd1 first; d2 waits for its group');
      assert.equal(due.nextDueAt, null);
      await q.consistent();
    });

    withStore('an expired lease hands the job out once, held for its failure to be recorded', async (q) => {
      await q.enqueue(T0, job('lost'));
      await q.claim(T0, 1);
      assert.deepEqual((await q.step(T0 + LIMITS.leaseMs - 1, { maintain: true })).expired, []);
      const out = await q.step(T0 + LIMITS.leaseMs + 1, { maintain: true });
      assert.deepEqual(out.expired.map((j) => [j.id, j.attempt]), [['lost', 1]]);
      assert.deepEqual((await q.step(T0 + LIMITS.leaseMs + 2, { maintain: true })).expired, [], 'held: not handed out twice');
      assert.equal((await q.counts()).running, 1);
      await q.step(T0 + LIMITS.leaseMs + 3, { fail: [{ id: 'lost', attempt: 1, outcome: 'retry', runAt: T0, record: { attempt: 1, at: T0, duration_ms: 0, code: 'lease_expired', message: 'x' } }] });
      await q.step(T0 + LIMITS.leaseMs + 4, { maintain: true });
      const [again] = await q.claim(T0 + LIMITS.leaseMs + 4, 1);
      assert.deepEqual([again!.id, again!.attempt], ['lost', 2]);
      await q.consistent();
    });

    withStore('budgets: a full queue refuses in jobs and in bytes; the same id is stored once', async (q) => {
      await q.enqueue(T0, job('a'), job('b'));
      const out = await q.step(T0, { enqueue: [job('c'), job('a'), job('big', { data: JSON.stringify('x'.repeat(200)) })] });
      assert.equal(out.enqueued[0]!.code, 'queue_full');
      assert.match(out.enqueued[0]!.message, /queue "q" is full: it holds 2 jobs \(max_jobs 2\)/);
      assert.equal(out.enqueued[1], null, 'an id already stored is accepted again without a second copy');
      assert.equal(out.enqueued[2]!.code, 'queue_full');
      assert.equal((await q.counts()).jobs, 2);
      const small = new Q(q.store, { q: { ...LIMITS, maxJobs: 100, maxBytes: 30 } });
      const r = await small.step(T0, { enqueue: [job('fits'), job('too-big', { data: JSON.stringify('x'.repeat(20)) })] });
      assert.equal(r.enqueued[0], null);
      assert.equal(r.enqueued[1]!.code, 'queue_full');
      assert.match(r.enqueued[1]!.message, /holds \d+ bytes and this job has 22 \(max_bytes 30\)/);
      const unknown = await q.step(T0, { enqueue: [job('x', { queue: 'nope' })] });
      assert.equal(unknown.enqueued[0]!.code, 'enqueue_error');
      await small.consistent();
    }, { q: { ...LIMITS, maxJobs: 2 } });

    withStore('topics: one copy per live subscription; a subscription not seen since liveSince is gone', async (q) => {
      await q.store.subscribe([
        { topic: 'orders', function_id: 'fn::b', queue: 'q', binding: 'bind-b' },
        { topic: 'orders', function_id: 'fn::a', queue: 'q', binding: 'bind-a' },
        { topic: 'orders', function_id: 'fn::c', queue: 'q2', binding: 'bind-c' },
        { topic: 'other', function_id: 'fn::a', queue: 'q', binding: 'bind-x' },
      ], T0);
      await q.store.subscribe([{ topic: 'orders', function_id: 'fn::a', queue: 'q', binding: 'bind-a2' }], T0 + 10);
      const subs = await q.store.subscriptions();
      const a = subs.find((s) => s.topic === 'orders' && s.function_id === 'fn::a')!;
      assert.deepEqual([a.binding, a.created_at, a.seen_at, a.queue], ['bind-a2', T0, T0 + 10, 'q'], 'refreshing keeps created_at');
      assert.equal(subs.length, 4);

      const pub = { topic: 'orders', id: 'p1', data: '{"order":1}', bytes: 11, traceparent: null, groups: { q2: 'G' }, delays: { q2: 100 }, liveSince: T0 - 1 };
      const out = await q.step(T0 + 20, { publish: [pub, { ...pub, topic: 'nobody', id: 'p0' }] });
      assert.deepEqual(out.published, [{ copies: 3, queues: { q: 2, q2: 1 } }, { copies: 0, queues: {} }]);
      const waiting = await q.store.list('q', 'waiting', 0, 10);
      assert.deepEqual(waiting.jobs.map((j) => [j.id, j.function_id, j.topic, j.data]).sort(), [
        ['p1.1', 'fn::a', 'orders', { order: 1 }],
        ['p1.2', 'fn::b', 'orders', { order: 1 }],
      ]);
      const delayed = await q.store.list('q2', 'delayed', 0, 10);
      assert.deepEqual(delayed.jobs.map((j) => [j.id, j.group, j.at]), [['p1.3', 'G', T0 + 120]]);
      const claimed = await q.claim(T0 + 20, 1);
      assert.equal(claimed[0]!.binding, 'bind-a2', 'a copy carries the binding it was made for');
      // fn::b and fn::c were last seen at T0: with liveSince T0 + 5 they are gone, fn::a (seen at T0 + 10) gets a copy.
      const late = await q.step(T0 + 30, { publish: [{ ...pub, id: 'p2', liveSince: T0 + 5 }] });
      assert.deepEqual(late.published, [{ copies: 1, queues: { q: 1 } }]);
      assert.deepEqual((await q.store.subscriptions()).map((s) => `${s.topic}/${s.function_id}`).sort(), ['orders/fn::a', 'other/fn::a']);
      await q.consistent();
      await q.consistent('q2');
    }, { q: LIMITS, q2: LIMITS });

    withStore('a publication that does not fit stores no copy', async (q) => {
      await q.store.subscribe([
        { topic: 't', function_id: 'fn::a', queue: 'q', binding: 'b1' },
        { topic: 't', function_id: 'fn::b', queue: 'q', binding: 'b2' },
      ], T0);
      await q.enqueue(T0, job('x'), job('y'));
      const out = await q.step(T0, { publish: [{ topic: 't', id: 'p', data: '1', bytes: 1, traceparent: null, groups: {}, delays: {}, liveSince: 0 }] });
      const r = out.published[0] as { code: string; message: string };
      assert.equal(r.code, 'queue_full');
      assert.match(r.message, /^topic "t": queue "q" is full/);
      assert.equal((await q.counts()).jobs, 2);
    }, { q: { ...LIMITS, maxJobs: 3 } });

    withStore('purge drops waiting and delayed jobs, frees retried groups, leaves running and dead ones', async (q) => {
      await q.enqueue(T0, job('run'), job('grp', { group: 'g' }), job('dead'));
      await q.claim(T0, 3);
      await q.step(T0, {
        fail: [
          { id: 'grp', attempt: 1, outcome: 'retry', runAt: T0 + 1000, record: null },
          { id: 'dead', attempt: 1, outcome: 'dlq', runAt: 0, record: { attempt: 1, at: T0, duration_ms: 1, code: 'x', message: 'y' } },
        ],
      });
      await q.enqueue(T0, job('w1'), job('w2', { group: 'g' }), job('later', { runAt: T0 + 5000 }));
      assert.equal(await q.store.purge('q'), 4);
      const ids = await q.consistent();
      assert.deepEqual(ids, { waiting: [], delayed: [], running: ['run'], dlq: ['dead'] });
      await q.enqueue(T0, job('g-next', { group: 'g' }));
      assert.deepEqual((await q.claim(T0, 5)).map((j) => j.id), ['g-next'], 'the purged retry no longer holds its group');
      await q.consistent();
    });

    withStore('counts list every queue the store holds, named or not', async (q) => {
      await q.enqueue(T0, job('a', { queue: 'other' }));
      const c = await q.store.counts(['q', 'empty']);
      assert.deepEqual(c.map((x) => x.queue).sort(), ['empty', 'other', 'q']);
      assert.equal(c.find((x) => x.queue === 'other')!.waiting, 1);
      assert.equal(c.find((x) => x.queue === 'empty')!.jobs, 0);
    }, { q: LIMITS, other: LIMITS });

    withStore('payloads and names round-trip exactly', async (q) => {
      const data = JSON.stringify({ s: 'ünïcødé ✓ 🔑 "q" \\ \n', n: 2 ** 53 - 1, f: 0.1, a: [null, true, {}], e: [] });
      await q.enqueue(T0, job('u', { data, group: 'grüppe 🔑', functionId: 'fn::ü' }));
      const [u] = await q.claim(T0, 1);
      assert.equal(u!.data, data);
      assert.equal(u!.group, 'grüppe 🔑');
      assert.equal(u!.functionId, 'fn::ü');
      await q.consistent();
    });
  });
}
