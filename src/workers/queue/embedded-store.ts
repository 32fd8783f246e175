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
 * embedded-tx.ts has the moves a change is made of, embedded-step.ts the step. One process per data
 * directory: the lock in replica-lock.ts refuses a second (docs/queues.md).
 */
import { mkdirSync } from 'node:fs';
import { open, type RootDatabase } from 'lmdb';
import { acquireReplicaLock, type ReplicaLock } from './replica-lock.js';
import { QueueError, emptyCounts, laneOf, type JobState, type JobView, type QueueCounts, type QueueStore, type StepInput, type StepOutput, type Subscription } from './store.js';
import { runStep } from './embedded-step.js';
import { Tx, newStats, viewOf, type Key, type Stats, type StoredJob } from './embedded-tx.js';

export interface EmbeddedQueueStoreOptions {
  dataDir: string;
}

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

class EmbeddedQueueStore implements QueueStore {
  readonly syncsEachStep = true;

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

  // ---- lanes and the ring --------------------------------------------------------------------

  // ---- step --------------------------------------------------------------------------------------

  private job(id: string): StoredJob | undefined {
    return this.db.get(['j', id]) as StoredJob | undefined;
  }

  async step(input: StepInput): Promise<StepOutput> {
    return this.write('step', (tx) => runStep(tx, input));
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
        tx.toLane(id, job, false);
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
        tx.ringRemove(queue, value as string, (key as Key)[2] as number);
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
