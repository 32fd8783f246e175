/**
 * The default queue store: LMDB through the `lmdb` package, as svc-state's embedded store (docs/design.md,
 * "State store: embedded database choice"). Every step is one synchronous transaction, fdatasync'ed
 * before it returns (`overlappingSync: false`), so an enqueue acknowledged after a step survives
 * kill -9 and a machine crash.
 *
 * Layout, one LMDB environment in `dataDir`, ordered-binary array keys:
 *   ['j', id]                 → the job (StoredJob)
 *   ['l', queue, lane, pos]   → id: a lane's waiting jobs in order (pos: appends count up, a job put back goes before the head)
 *   ['r', queue, order]       → lane: the ring of ready lanes; ['R', queue, lane] → order (membership)
 *   ['b', queue, lane]        → 1: a grouped lane whose job runs or waits for its retry
 *   ['d', queue, runAt, seq]  → id: delayed jobs by due time (seq keeps enqueue order within a millisecond)
 *   ['x', queue, lease, id]   → 1: running jobs by lease deadline
 *   ['z', queue, at, id]      → 1: dead-lettered jobs by when they died
 *   ['s', queue]              → the queue's counters (Stats)
 *   ['t', topic, fn, queue]   → a subscription ({binding, created_at, seen_at})
 *
 * One process per data directory: the lock in replica-lock.ts refuses a second (docs/queues.md).
 */
import { mkdirSync } from 'node:fs';
import { open, type RootDatabase } from 'lmdb';
import { acquireReplicaLock, type ReplicaLock } from './replica-lock.js';
import {
  MAX_HISTORY,
  PROMOTE_BATCH,
  QueueError,
  RECLAIM_BATCH,
  RECLAIM_HOLD_MS,
  emptyCounts,
  functionOfLane,
  laneOf,
  queueFullMessage,
  type ClaimedJob,
  type Failure,
  type JobState,
  type JobView,
  type NewJob,
  type Publication,
  type QueueCounts,
  type QueueErrorBody,
  type QueueLimits,
  type QueueStore,
  type StepInput,
  type StepOutput,
  type Subscription,
} from './store.js';

export interface EmbeddedQueueStoreOptions {
  dataDir: string;
}

type Key = Array<string | number>;

interface StoredJob {
  q: string;
  fn: string;
  data: string;
  bytes: number;
  grp: string | null;
  /** waiting, delayed, running, dead */
  st: 'w' | 'd' | 'r' | 'x';
  att: number;
  fails: number;
  enq: number;
  /** waiting: position in its lane */
  pos: number;
  /** delayed: due time and sequence; retry: it goes back to the front of its lane */
  run: number;
  dseq: number;
  retry: boolean;
  /** running: lease deadline */
  lease: number;
  /** dead: when */
  dead: number;
  tp: string | null;
  meta: string | null;
  topic: string | null;
  bind: string | null;
  hist: Array<{ attempt: number; at: number; duration_ms: number; code: string; message: string }>;
}

interface Stats {
  waiting: number;
  delayed: number;
  running: number;
  dlq: number;
  completed: number;
  failed: number;
  jobs: number;
  bytes: number;
  /** Last lane position handed out and last ring order. */
  seq: number;
  ring: number;
}

const STATE_OF: Record<StoredJob['st'], JobState> = { w: 'waiting', d: 'delayed', r: 'running', x: 'dlq' };
/** Ring entries a claim looks at; lanes further back wait for a later claim. */
const RING_SCAN = 1000;

export async function openEmbeddedQueueStore(opts: EmbeddedQueueStoreOptions): Promise<QueueStore> {
  mkdirSync(opts.dataDir, { recursive: true });
  const lock = acquireReplicaLock(opts.dataDir);
  let db: RootDatabase<unknown, Key>;
  try {
    db = open<unknown, Key>({ path: opts.dataDir, overlappingSync: false, cache: false });
  } catch (e) {
    lock.release();
    throw new QueueError('store_unavailable', `embedded queue store: cannot open ${JSON.stringify(opts.dataDir)}: ${(e as Error).message}`);
  }
  return new EmbeddedQueueStore(db, lock);
}

function newStats(): Stats {
  return { waiting: 0, delayed: 0, running: 0, dlq: 0, completed: 0, failed: 0, jobs: 0, bytes: 0, seq: 0, ring: 0 };
}

/** The changes of one transaction: counters are read once and written once at the end. */
class Tx {
  private readonly stats = new Map<string, Stats>();
  constructor(private readonly db: RootDatabase<unknown, Key>) {}

  st(q: string): Stats {
    let s = this.stats.get(q);
    if (!s) {
      s = { ...newStats(), ...((this.db.get(['s', q]) as Stats | undefined) ?? {}) };
      this.stats.set(q, s);
    }
    return s;
  }

  flush(): void {
    for (const [q, s] of this.stats) this.db.put(['s', q], s);
  }
}

class EmbeddedQueueStore implements QueueStore {
  constructor(
    private readonly db: RootDatabase<unknown, Key>,
    private readonly lock: ReplicaLock,
  ) {}

  /** A write transaction, on disk when it returns. The callback must not return a promise (lmdb would commit later). */
  private write<T>(what: string, f: (tx: Tx) => T): T {
    let out!: T;
    try {
      this.db.transactionSync(() => {
        const tx = new Tx(this.db);
        out = f(tx);
        tx.flush();
      });
    } catch (e) {
      if (e instanceof QueueError) throw e;
      throw new QueueError('store_unavailable', `embedded queue store: ${what} failed, nothing of it was written: ${(e as Error).message}`);
    }
    return out;
  }

  private job(id: string): StoredJob | undefined {
    return this.db.get(['j', id]) as StoredJob | undefined;
  }

  // ---- lanes and the ring --------------------------------------------------------------------

  private busy(q: string, lane: string): boolean {
    return this.db.get(['b', q, lane]) !== undefined;
  }

  private ringAdd(tx: Tx, q: string, lane: string): void {
    if (this.db.get(['R', q, lane]) !== undefined) return;
    const order = ++tx.st(q).ring;
    this.db.put(['r', q, order], lane);
    this.db.put(['R', q, lane], order);
  }

  private ringRemove(q: string, lane: string, order: number): void {
    this.db.remove(['r', q, order]);
    this.db.remove(['R', q, lane]);
  }

  /** First (up to) two waiting ids of a lane. */
  private laneHead(q: string, lane: string, limit: number): Array<{ key: Key; value: string }> {
    return [...this.db.getRange({ start: ['l', q, lane], end: ['l', q, lane, Infinity], limit })] as Array<{ key: Key; value: string }>;
  }

  /** A job becomes waiting at the end (or, put back, at the front) of its lane. */
  private toLane(tx: Tx, id: string, job: StoredJob, front: boolean): void {
    const lane = laneOf(job.fn, job.grp);
    const s = tx.st(job.q);
    let pos: number;
    if (front) {
      const head = this.laneHead(job.q, lane, 1)[0];
      pos = head ? (head.key[3] as number) - 1 : -1;
      if (job.grp !== null) this.db.remove(['b', job.q, lane]);
    } else {
      pos = ++s.seq;
    }
    this.db.put(['l', job.q, lane, pos], id);
    job.st = 'w';
    job.pos = pos;
    s.waiting++;
    if (!(job.grp !== null && this.busy(job.q, lane))) this.ringAdd(tx, job.q, lane);
  }

  /** A grouped lane's job ended (done, dead): the next job of the group may run. */
  private release(tx: Tx, job: StoredJob): void {
    if (job.grp === null) return;
    const lane = laneOf(job.fn, job.grp);
    this.db.remove(['b', job.q, lane]);
    if (this.laneHead(job.q, lane, 1).length > 0) this.ringAdd(tx, job.q, lane);
  }

  private toDelayed(tx: Tx, id: string, job: StoredJob, runAt: number, retry: boolean): void {
    const s = tx.st(job.q);
    job.st = 'd';
    job.run = runAt;
    job.dseq = ++s.seq;
    job.retry = retry;
    this.db.put(['d', job.q, runAt, job.dseq], id);
    s.delayed++;
  }

  // ---- step --------------------------------------------------------------------------------------

  async step(input: StepInput): Promise<StepOutput> {
    return this.write('step', (tx) => {
      const out: StepOutput = { enqueued: [], published: [], claimed: [], expired: [], nextDueAt: null };
      for (const c of input.complete) this.complete(tx, c.id, c.attempt);
      for (const f of input.fail) this.fail(tx, f, input.now);
      if (input.maintain) {
        for (const q of Object.keys(input.limits)) {
          this.promote(tx, q, input.now);
          this.reclaim(tx, q, input.now, out.expired);
        }
      }
      for (const e of input.enqueue) out.enqueued.push(this.enqueue(tx, e, input.limits[e.queue], input.now));
      for (const p of input.publish) out.published.push(this.publish(tx, p, input.limits, input.now));
      const absent = new Set(input.absent);
      for (const [q, n] of Object.entries(input.claim)) {
        const limits = input.limits[q];
        if (limits && n > 0) this.claim(tx, q, n, limits, absent, input.now, out.claimed);
      }
      for (const q of Object.keys(input.limits)) {
        for (const { key } of this.db.getRange({ start: ['d', q], end: ['d', q, Infinity], limit: 1 })) {
          const at = key[2] as number;
          if (out.nextDueAt === null || at < out.nextDueAt) out.nextDueAt = at;
        }
      }
      return out;
    });
  }

  private insert(tx: Tx, e: NewJob, now: number): void {
    const s = tx.st(e.queue);
    const job: StoredJob = {
      q: e.queue,
      fn: e.functionId,
      data: e.data,
      bytes: e.bytes,
      grp: e.group,
      st: 'w',
      att: 0,
      fails: 0,
      enq: now,
      pos: 0,
      run: 0,
      dseq: 0,
      retry: false,
      lease: 0,
      dead: 0,
      tp: e.traceparent,
      meta: e.metadata,
      topic: e.topic,
      bind: e.binding,
      hist: [],
    };
    s.jobs++;
    s.bytes += e.bytes;
    if (e.runAt > now) this.toDelayed(tx, e.id, job, e.runAt, false);
    else this.toLane(tx, e.id, job, false);
    this.db.put(['j', e.id], job);
  }

  private full(tx: Tx, q: string, bytes: number, limits: QueueLimits): QueueErrorBody | null {
    const s = tx.st(q);
    if (s.jobs + 1 <= limits.maxJobs && s.bytes + bytes <= limits.maxBytes) return null;
    return { code: 'queue_full', message: queueFullMessage(q, s.jobs, s.bytes, limits, bytes) };
  }

  private enqueue(tx: Tx, e: NewJob, limits: QueueLimits | undefined, now: number): QueueErrorBody | null {
    if (!limits) return { code: 'enqueue_error', message: `queue "${e.queue}" is not configured` };
    // An id seen again (a retried enqueue) is the same job: stored once.
    if (this.job(e.id) !== undefined) return null;
    const refused = this.full(tx, e.queue, e.bytes, limits);
    if (refused) return refused;
    this.insert(tx, e, now);
    return null;
  }

  private publish(tx: Tx, p: Publication, limits: Record<string, QueueLimits>, now: number): { copies: number } | QueueErrorBody {
    const subs: Array<{ key: Key; fn: string; queue: string; binding: string }> = [];
    for (const { key, value } of this.db.getRange({ start: ['t', p.topic], end: ['t', p.topic + '\u0000'] })) {
      const v = value as { binding: string; seen_at: number };
      if (v.seen_at < p.liveSince) {
        this.db.remove(key as Key);
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
      this.insert(
        tx,
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
    return { copies: subs.length };
  }

  /** The job, if it is running this attempt (a stale result or failure is ignored). */
  private runningJob(id: string, attempt: number): StoredJob | undefined {
    const job = this.job(id);
    return job && job.st === 'r' && job.att === attempt ? job : undefined;
  }

  private complete(tx: Tx, id: string, attempt: number): void {
    const job = this.runningJob(id, attempt);
    if (!job) return;
    const s = tx.st(job.q);
    this.db.remove(['x', job.q, job.lease, id]);
    this.db.remove(['j', id]);
    s.running--;
    s.completed++;
    s.jobs--;
    s.bytes -= job.bytes;
    this.release(tx, job);
  }

  private fail(tx: Tx, f: Failure, now: number): void {
    const job = this.runningJob(f.id, f.attempt);
    if (!job) return;
    const s = tx.st(job.q);
    this.db.remove(['x', job.q, job.lease, f.id]);
    s.running--;
    if (f.outcome === 'return') {
      job.att--;
      this.toLane(tx, f.id, job, true);
    } else {
      s.failed++;
      job.fails++;
      if (f.record) job.hist = [...job.hist, f.record].slice(-MAX_HISTORY);
      if (f.outcome === 'retry') {
        this.toDelayed(tx, f.id, job, f.runAt, true);
      } else {
        job.st = 'x';
        job.dead = now;
        this.db.put(['z', job.q, now, f.id], 1);
        s.dlq++;
        this.release(tx, job);
      }
    }
    this.db.put(['j', f.id], job);
  }

  private promote(tx: Tx, q: string, now: number): void {
    const due = [...this.db.getRange({ start: ['d', q], end: ['d', q, now, Infinity], limit: PROMOTE_BATCH })];
    for (const { key, value } of due) {
      const id = value as string;
      this.db.remove(key as Key);
      const job = this.job(id);
      if (!job) continue;
      tx.st(q).delayed--;
      const retry = job.retry;
      job.retry = false;
      this.toLane(tx, id, job, retry);
      this.db.put(['j', id], job);
    }
  }

  private reclaim(tx: Tx, q: string, now: number, out: ClaimedJob[]): void {
    const expired = [...this.db.getRange({ start: ['x', q], end: ['x', q, now], limit: RECLAIM_BATCH })];
    for (const { key } of expired) {
      const id = (key as Key)[3] as string;
      this.db.remove(key as Key);
      const job = this.job(id);
      if (!job) continue;
      job.lease = now + RECLAIM_HOLD_MS;
      this.db.put(['x', q, job.lease, id], 1);
      this.db.put(['j', id], job);
      out.push(claimedOf(id, job));
    }
    void tx;
  }

  private claim(tx: Tx, q: string, want: number, limits: QueueLimits, absent: Set<string>, now: number, out: ClaimedJob[]): void {
    const s = tx.st(q);
    let n = Math.min(want, limits.concurrency - s.running);
    if (n <= 0) return;
    const lanes: Array<{ lane: string; order: number; open: boolean; visited: boolean }> = [];
    for (const { key, value } of this.db.getRange({ start: ['r', q], end: ['r', q, Infinity], limit: RING_SCAN })) {
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
        const head = this.laneHead(q, l.lane, 2);
        const first = head[0];
        if (!first) {
          l.open = false;
          continue;
        }
        const id = first.value;
        this.db.remove(first.key);
        const job = this.job(id)!;
        job.st = 'r';
        job.att++;
        job.lease = now + limits.leaseMs;
        this.db.put(['x', q, job.lease, id], 1);
        this.db.put(['j', id], job);
        s.waiting--;
        s.running++;
        n--;
        progressed = true;
        out.push(claimedOf(id, job));
        if (job.grp !== null) {
          this.db.put(['b', q, l.lane], 1);
          l.open = false;
        } else if (head.length < 2) {
          l.open = false;
        }
      }
    }
    // Visited lanes leave their place in the ring; those still ready go to its end.
    for (const l of lanes) {
      if (!l.visited) continue;
      this.ringRemove(q, l.lane, l.order);
      if (l.open) this.ringAdd(tx, q, l.lane);
    }
  }

  // ---- reads and admin -------------------------------------------------------------------------

  async counts(queues: string[]): Promise<QueueCounts[]> {
    const names = new Set(queues);
    for (const key of this.db.getKeys({ start: ['s'], end: ['s\u0000'] })) {
      const q = (key as Key)[1];
      if (typeof q === 'string') names.add(q);
    }
    return [...names].map((q) => {
      const s = this.db.get(['s', q]) as Stats | undefined;
      if (!s) return emptyCounts(q);
      const { waiting, delayed, running, dlq, completed, failed, jobs, bytes } = s;
      return { queue: q, waiting, delayed, running, dlq, completed, failed, jobs, bytes };
    });
  }

  async list(queue: string, state: JobState, offset: number, limit: number): Promise<{ total: number; jobs: JobView[] }> {
    // Synchronous from here on: no commit can happen in between, so the count and the jobs agree.
    const s = (this.db.get(['s', queue]) as Stats | undefined) ?? newStats();
    const table = { waiting: 'l', delayed: 'd', running: 'x', dlq: 'z' }[state];
    const total = { waiting: s.waiting, delayed: s.delayed, running: s.running, dlq: s.dlq }[state];
    const jobs: JobView[] = [];
    for (const { key, value } of this.db.getRange({ start: [table, queue], end: [table, queue + '\u0000'], offset, limit })) {
      const id = state === 'waiting' || state === 'delayed' ? (value as string) : ((key as Key)[3] as string);
      const job = this.job(id);
      if (job) jobs.push(viewOf(id, job));
    }
    return { total, jobs };
  }

  async redrive(queue: string, ids: string[] | null, now: number): Promise<number> {
    void now;
    return this.write('redrive', (tx) => {
      let n = 0;
      for (const { id, key } of this.deadEntries(queue, ids)) {
        const job = this.job(id)!;
        this.db.remove(key);
        tx.st(queue).dlq--;
        job.fails = 0;
        this.toLane(tx, id, job, false);
        this.db.put(['j', id], job);
        n++;
      }
      return n;
    });
  }

  async deleteDead(queue: string, ids: string[] | null): Promise<number> {
    return this.write('delete', (tx) => {
      let n = 0;
      const s = tx.st(queue);
      for (const { id, key } of this.deadEntries(queue, ids)) {
        const job = this.job(id)!;
        this.db.remove(key);
        this.db.remove(['j', id]);
        s.dlq--;
        s.jobs--;
        s.bytes -= job.bytes;
        n++;
      }
      return n;
    });
  }

  /** The dead-lettered jobs of a queue: all, or those of `ids` that are dead there. */
  private deadEntries(queue: string, ids: string[] | null): Array<{ id: string; key: Key }> {
    if (ids === null) {
      return [...this.db.getKeys({ start: ['z', queue], end: ['z', queue + '\u0000'] })].map((k) => ({ id: (k as Key)[3] as string, key: k as Key }));
    }
    const out: Array<{ id: string; key: Key }> = [];
    for (const id of new Set(ids)) {
      const job = this.job(id);
      if (job && job.q === queue && job.st === 'x') out.push({ id, key: ['z', queue, job.dead, id] });
    }
    return out;
  }

  async purge(queue: string): Promise<number> {
    return this.write('purge', (tx) => {
      const s = tx.st(queue);
      let n = 0;
      const drop = (id: string): void => {
        const job = this.job(id);
        if (!job) return;
        this.db.remove(['j', id]);
        s.jobs--;
        s.bytes -= job.bytes;
        n++;
        // A retry holds its group's lane: the group is free again.
        if (job.st === 'd' && job.retry && job.grp !== null) this.db.remove(['b', queue, laneOf(job.fn, job.grp)]);
      };
      for (const { key, value } of [...this.db.getRange({ start: ['l', queue], end: ['l', queue + '\u0000'] })]) {
        this.db.remove(key as Key);
        s.waiting--;
        drop(value as string);
      }
      for (const { key, value } of [...this.db.getRange({ start: ['d', queue], end: ['d', queue, Infinity] })]) {
        this.db.remove(key as Key);
        s.delayed--;
        drop(value as string);
      }
      for (const { key, value } of [...this.db.getRange({ start: ['r', queue], end: ['r', queue, Infinity] })]) {
        this.ringRemove(queue, value as string, (key as Key)[2] as number);
      }
      return n;
    });
  }

  async subscribe(subs: Array<Omit<Subscription, 'created_at' | 'seen_at'>>, now: number): Promise<void> {
    this.write('subscribe', () => {
      for (const sub of subs) {
        const key: Key = ['t', sub.topic, sub.function_id, sub.queue];
        const old = this.db.get(key) as { created_at: number } | undefined;
        this.db.put(key, { binding: sub.binding, created_at: old?.created_at ?? now, seen_at: now });
      }
    });
  }

  async subscriptions(): Promise<Subscription[]> {
    const out: Subscription[] = [];
    for (const { key, value } of this.db.getRange({ start: ['t'], end: ['t\u0000'] })) {
      const [, topic, fn, queue] = key as [string, string, string, string];
      const v = value as { binding: string; created_at: number; seen_at: number };
      out.push({ topic, function_id: fn, queue, binding: v.binding, created_at: v.created_at, seen_at: v.seen_at });
    }
    return out;
  }

  async close(): Promise<void> {
    await this.db.close();
    this.lock.release();
  }
}

function claimedOf(id: string, job: StoredJob): ClaimedJob {
  return {
    id,
    queue: job.q,
    functionId: job.fn,
    data: job.data,
    attempt: job.att,
    failures: job.fails,
    group: job.grp,
    enqueuedAt: job.enq,
    traceparent: job.tp,
    metadata: job.meta,
    topic: job.topic,
    binding: job.bind,
  };
}

function viewOf(id: string, job: StoredJob): JobView {
  const last = job.hist[job.hist.length - 1];
  return {
    id,
    queue: job.q,
    state: STATE_OF[job.st],
    function_id: job.fn,
    data: JSON.parse(job.data) as unknown,
    attempts: job.att,
    failures: job.fails,
    group: job.grp,
    topic: job.topic,
    enqueued_at: job.enq,
    at: job.st === 'd' ? job.run : job.st === 'r' ? job.lease : job.st === 'x' ? job.dead : null,
    error: last ? { code: last.code, message: last.message } : null,
    history: job.hist,
  };
}
