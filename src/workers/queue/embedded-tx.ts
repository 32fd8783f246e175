/**
 * The embedded queue store's layout (embedded-store.ts has the table of keys) and the moves every
 * change is made of, on one LMDB write transaction: a job into its lane (at the end, or put back at
 * the front), into the delayed set, a grouped lane released, the ring of ready lanes kept.
 */
import type { RootDatabase } from 'lmdb';
import { laneOf, type ClaimedJob, type JobState, type JobView, type NewJob, type QueueCounts } from './store.js';

export type Key = Array<string | number>;

export interface StoredJob {
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

/** A queue's counts as stored (QueueCounts without its name), and its lane and ring positions. */
export interface Stats extends Omit<QueueCounts, 'queue'> {
  /** Last lane position handed out and last ring order. */
  seq: number;
  ring: number;
}

export function newStats(): Stats {
  return { waiting: 0, delayed: 0, running: 0, dlq: 0, completed: 0, failed: 0, jobs: 0, bytes: 0, seq: 0, ring: 0 };
}

/**
 * One transaction's view of the store: the queues' counters, read once and written once at the end
 * (flush), and the moves every change of a job is made of.
 */
export class Tx {
  private readonly stats = new Map<string, Stats>();
  private readonly ringEmptyOf = new Map<string, boolean>();
  constructor(readonly db: RootDatabase<unknown, Key>) {}

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

  job(id: string): StoredJob | undefined {
    return this.db.get(['j', id]) as StoredJob | undefined;
  }

  busy(q: string, lane: string): boolean {
    return this.db.get(['b', q, lane]) !== undefined;
  }

  ringAdd(q: string, lane: string): void {
    if (this.db.get(['R', q, lane]) !== undefined) return;
    const order = ++this.st(q).ring;
    this.db.put(['r', q, order], lane);
    this.db.put(['R', q, lane], order);
    this.ringEmptyOf.set(q, false);
  }

  ringRemove(q: string, lane: string, order: number): void {
    this.db.remove(['r', q, order]);
    this.db.remove(['R', q, lane]);
    this.ringEmptyOf.delete(q);
  }

  /** No lane of the queue is ready. Read once per transaction (a step asks it for each enqueue), kept by ringAdd and ringRemove. */
  ringEmpty(q: string): boolean {
    let empty = this.ringEmptyOf.get(q);
    if (empty === undefined) {
      empty = true;
      for (const _ of this.db.getKeys({ start: ['r', q], end: ['r', q, Infinity], limit: 1 })) empty = false;
      this.ringEmptyOf.set(q, empty);
    }
    return empty;
  }

  /** First (up to) two waiting ids of a lane. */
  laneHead(q: string, lane: string, limit: number): Array<{ key: Key; value: string }> {
    return [...this.db.getRange({ start: ['l', q, lane], end: ['l', q, lane, Infinity], limit })] as Array<{ key: Key; value: string }>;
  }

  /** A job becomes waiting at the end (or, put back, at the front) of its lane. */
  toLane(id: string, job: StoredJob, front: boolean): void {
    const lane = laneOf(job.fn, job.grp);
    const s = this.st(job.q);
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
    if (!(job.grp !== null && this.busy(job.q, lane))) this.ringAdd(job.q, lane);
  }

  /** A grouped lane's job ended (done, dead): the next job of the group may run. */
  release(job: StoredJob): void {
    if (job.grp === null) return;
    const lane = laneOf(job.fn, job.grp);
    this.db.remove(['b', job.q, lane]);
    if (this.laneHead(job.q, lane, 1).length > 0) this.ringAdd(job.q, lane);
  }

  toDelayed(id: string, job: StoredJob, runAt: number, retry: boolean): void {
    const s = this.st(job.q);
    job.st = 'd';
    job.run = runAt;
    job.dseq = ++s.seq;
    job.retry = retry;
    this.db.put(['d', job.q, runAt, job.dseq], id);
    s.delayed++;
  }

  /** Store a new job: delayed, waiting in its lane, or (`lease`) claimed at once and running until then. */
  insert(e: NewJob, now: number, lease = 0): StoredJob {
    const s = this.st(e.queue);
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
    if (lease > 0) {
      job.st = 'r';
      job.att = 1;
      job.lease = lease;
      s.running++;
      this.db.put(['x', e.queue, lease, e.id], 1);
      if (e.group !== null) this.db.put(['b', e.queue, laneOf(e.functionId, e.group)], 1);
    } else if (e.runAt > now) this.toDelayed(e.id, job, e.runAt, false);
    else this.toLane(e.id, job, false);
    this.db.put(['j', e.id], job);
    return job;
  }
}

const STATE_OF: Record<StoredJob['st'], JobState> = { w: 'waiting', d: 'delayed', r: 'running', x: 'dlq' };

export function claimedOf(id: string, job: StoredJob): ClaimedJob {
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

export function viewOf(id: string, job: StoredJob): JobView {
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
