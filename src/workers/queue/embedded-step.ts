/**
 * One step of the embedded queue store (QueueStore.step) inside its LMDB write transaction: results
 * first (they free slots and groups), then housekeeping, enqueues and publications, then claims.
 * The same state machine as redis-scripts.ts; test/workers/queue/conformance.ts runs on both.
 */
import { MAX_HISTORY, PROMOTE_BATCH, RECLAIM_BATCH, RECLAIM_HOLD_MS, functionOfLane, laneOf, queueFullMessage, type ClaimedJob, type Failure, type NewJob, type Publication, type QueueErrorBody, type QueueLimits, type StepInput, type StepOutput } from './store.js';
import { claimedOf, type Key, type StoredJob, type Tx } from './embedded-tx.js';

/** Ring entries a claim looks at; lanes further back wait for a later claim. */
const RING_SCAN = 1000;

export function runStep(tx: Tx, input: StepInput): StepOutput {
  const out: StepOutput = { enqueued: [], published: [], claimed: [], expired: [], nextDueAt: null };
  for (const c of input.complete) complete(tx, c.id, c.attempt);
  for (const f of input.fail) fail(tx, f, input.now);
  if (input.maintain) {
    for (const q of Object.keys(input.limits)) {
      promote(tx, q, input.now);
      reclaim(tx, q, input.now, out.expired);
    }
  }
  const absent = new Set(input.absent);
  const quota = { ...input.claim };
  for (const e of input.enqueue) out.enqueued.push(enqueue(tx, e, input.limits[e.queue], quota, absent, input.now, out.claimed));
  for (const p of input.publish) out.published.push(publish(tx, p, input.limits, input.now));
  for (const [q, n] of Object.entries(quota)) {
    const limits = input.limits[q];
    if (limits && n > 0) claim(tx, q, n, limits, absent, input.now, out.claimed);
  }
  for (const q of Object.keys(input.limits)) {
    for (const { key } of tx.db.getRange({ start: ['d', q], end: ['d', q, Infinity], limit: 1 })) {
      const at = key[2] as number;
      if (out.nextDueAt === null || at < out.nextDueAt) out.nextDueAt = at;
    }
  }
  return out;
}

/**
 * A fresh job may skip its lane and be claimed at once when it overtakes nothing: no lane of the
 * queue is waiting, its own lane is empty and free, and there is room under the concurrency.
 */
function claimable(tx: Tx, e: NewJob, limits: QueueLimits, quota: Record<string, number>, absent: Set<string>, now: number): boolean {
  if (!((quota[e.queue] ?? 0) > 0) || e.runAt > now || absent.has(e.functionId)) return false;
  if (tx.st(e.queue).running >= limits.concurrency) return false;
  if (!tx.ringEmpty(e.queue)) return false;
  // An ungrouped lane holding jobs is always in the ring (toLane adds it, claim keeps it while it
  // has jobs): with the ring empty, this job's lane is empty too. A grouped one may hold jobs while
  // out of the ring (its group busy).
  if (e.group === null) return true;
  const lane = laneOf(e.functionId, e.group);
  if (tx.laneHead(e.queue, lane, 1).length > 0) return false;
  return !tx.busy(e.queue, lane);
}

function full(tx: Tx, q: string, bytes: number, limits: QueueLimits): QueueErrorBody | null {
  const s = tx.st(q);
  if (s.jobs + 1 <= limits.maxJobs && s.bytes + bytes <= limits.maxBytes) return null;
  return { code: 'queue_full', message: queueFullMessage(q, s.jobs, s.bytes, limits, bytes) };
}

function enqueue(tx: Tx, e: NewJob, limits: QueueLimits | undefined, quota: Record<string, number>, absent: Set<string>, now: number, claimed: ClaimedJob[]): QueueErrorBody | null {
  if (!limits) return { code: 'enqueue_error', message: `queue "${e.queue}" is not configured` };
  // An id seen again (a retried enqueue) is the same job: stored once.
  if (tx.job(e.id) !== undefined) return null;
  const refused = full(tx, e.queue, e.bytes, limits);
  if (refused) return refused;
  if (claimable(tx, e, limits, quota, absent, now)) {
    claimed.push(claimedOf(e.id, tx.insert(e, now, now + limits.leaseMs)));
    quota[e.queue]!--;
  } else {
    tx.insert(e, now);
  }
  return null;
}

function publish(tx: Tx, p: Publication, limits: Record<string, QueueLimits>, now: number): { copies: number; queues: Record<string, number> } | QueueErrorBody {
  const subs: Array<{ key: Key; fn: string; queue: string; binding: string }> = [];
  for (const { key, value } of tx.db.getRange({ start: ['t', p.topic], end: ['t', p.topic + '\u0000'] })) {
    const v = value as { binding: string; seen_at: number };
    if (v.seen_at < p.liveSince) {
      tx.db.remove(key as Key);
      continue;
    }
    const queue = (key as Key)[3] as string;
    if (limits[queue]) subs.push({ key: key as Key, fn: (key as Key)[2] as string, queue, binding: v.binding });
  }
  // All copies or none: check every queue's room first (a queue may get several copies).
  const adding = new Map<string, { n: number; bytes: number }>();
  for (const s of subs) {
    const a = adding.get(s.queue) ?? { n: 0, bytes: 0 };
    a.n++;
    a.bytes += p.bytes;
    adding.set(s.queue, a);
  }
  for (const [q, a] of adding) {
    const st = tx.st(q);
    const lim = limits[q]!;
    if (st.jobs + a.n > lim.maxJobs || st.bytes + a.bytes > lim.maxBytes) {
      return { code: 'queue_full', message: `topic "${p.topic}": ${queueFullMessage(q, st.jobs + a.n - 1, st.bytes + a.bytes - p.bytes, lim, p.bytes)}` };
    }
  }
  subs.forEach((s, k) => {
    const delay = p.delays[s.queue] ?? 0;
    tx.insert(
      {
        id: `${p.id}.${k + 1}`,
        queue: s.queue,
        functionId: s.fn,
        data: p.data,
        bytes: p.bytes,
        group: p.groups[s.queue] ?? null,
        runAt: delay > 0 ? now + delay : 0,
        traceparent: p.traceparent,
        metadata: null,
        topic: p.topic,
        binding: s.binding,
      },
      now,
    );
  });
  return { copies: subs.length, queues: Object.fromEntries([...adding].map(([q, a]) => [q, a.n])) };
}

/** The job, if it is running this attempt (a stale result or failure is ignored). */
function runningJob(tx: Tx, id: string, attempt: number): StoredJob | undefined {
  const job = tx.job(id);
  return job && job.st === 'r' && job.att === attempt ? job : undefined;
}

function complete(tx: Tx, id: string, attempt: number): void {
  const job = runningJob(tx, id, attempt);
  if (!job) return;
  const s = tx.st(job.q);
  tx.db.remove(['x', job.q, job.lease, id]);
  tx.db.remove(['j', id]);
  s.running--;
  s.completed++;
  s.jobs--;
  s.bytes -= job.bytes;
  tx.release(job);
}

function fail(tx: Tx, f: Failure, now: number): void {
  const job = runningJob(tx, f.id, f.attempt);
  if (!job) return;
  const s = tx.st(job.q);
  tx.db.remove(['x', job.q, job.lease, f.id]);
  s.running--;
  if (f.outcome === 'return') {
    job.att--;
    tx.toLane(f.id, job, true);
  } else {
    s.failed++;
    job.fails++;
    if (f.record) job.hist = [...job.hist, f.record].slice(-MAX_HISTORY);
    if (f.outcome === 'retry') {
      tx.toDelayed(f.id, job, f.runAt, true);
    } else {
      job.st = 'x';
      job.dead = now;
      tx.db.put(['z', job.q, now, f.id], 1);
      s.dlq++;
      tx.release(job);
    }
  }
  tx.db.put(['j', f.id], job);
}

function promote(tx: Tx, q: string, now: number): void {
  const due = [...tx.db.getRange({ start: ['d', q], end: ['d', q, now, Infinity], limit: PROMOTE_BATCH })];
  for (const { key, value } of due) {
    const id = value as string;
    tx.db.remove(key as Key);
    const job = tx.job(id);
    if (!job) continue;
    tx.st(q).delayed--;
    const retry = job.retry;
    job.retry = false;
    tx.toLane(id, job, retry);
    tx.db.put(['j', id], job);
  }
}

function reclaim(tx: Tx, q: string, now: number, out: ClaimedJob[]): void {
  const expired = [...tx.db.getRange({ start: ['x', q], end: ['x', q, now], limit: RECLAIM_BATCH })];
  for (const { key } of expired) {
    const id = (key as Key)[3] as string;
    tx.db.remove(key as Key);
    const job = tx.job(id);
    if (!job) continue;
    job.lease = now + RECLAIM_HOLD_MS;
    tx.db.put(['x', q, job.lease, id], 1);
    tx.db.put(['j', id], job);
    out.push(claimedOf(id, job));
  }
  void tx;
}

function claim(tx: Tx, q: string, want: number, limits: QueueLimits, absent: Set<string>, now: number, out: ClaimedJob[]): void {
  const s = tx.st(q);
  let n = Math.min(want, limits.concurrency - s.running);
  if (n <= 0) return;
  const lanes: Array<{ lane: string; order: number; open: boolean; visited: boolean }> = [];
  for (const { key, value } of tx.db.getRange({ start: ['r', q], end: ['r', q, Infinity], limit: RING_SCAN })) {
    const lane = value as string;
    if (absent.size > 0 && absent.has(functionOfLane(lane))) continue;
    lanes.push({ lane, order: (key as Key)[2] as number, open: true, visited: false });
  }
  // Round-robin: one job per ready lane per pass, until enough or none is left.
  for (let progressed = true; n > 0 && progressed; ) {
    progressed = false;
    for (const l of lanes) {
      if (n === 0) break;
      if (!l.open) continue;
      l.visited = true;
      const head = tx.laneHead(q, l.lane, 2);
      const first = head[0];
      if (!first) {
        l.open = false;
        continue;
      }
      const id = first.value;
      tx.db.remove(first.key);
      const job = tx.job(id)!;
      job.st = 'r';
      job.att++;
      job.lease = now + limits.leaseMs;
      tx.db.put(['x', q, job.lease, id], 1);
      tx.db.put(['j', id], job);
      s.waiting--;
      s.running++;
      n--;
      progressed = true;
      out.push(claimedOf(id, job));
      if (job.grp !== null) {
        tx.db.put(['b', q, l.lane], 1);
        l.open = false;
      } else if (head.length < 2) {
        l.open = false;
      }
    }
  }
  // Visited lanes leave their place in the ring; those still ready go to its end.
  for (const l of lanes) {
    if (!l.visited) continue;
    tx.ringRemove(q, l.lane, l.order);
    if (l.open) tx.ringAdd(q, l.lane);
  }
}
