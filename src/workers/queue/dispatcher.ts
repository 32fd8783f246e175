/**
 * The heart of svc-queue: gathers what happens in one event-loop turn (enqueues, publications,
 * results of deliveries, claims) into one store step (one fsync'd LMDB transaction, or one Redis
 * script run), then delivers the jobs the step claimed. Group commit as in svc-state
 * (src/workers/shared/batcher.ts): a burst of enqueues pays for one commit.
 *
 * Claims are asked for whenever a queue may have runnable work: after an enqueue to it, after one
 * of its runs ended (a slot is free), on a timer for due delayed jobs and expired leases, and when a
 * missing function is back. The store keeps to each queue's concurrency; nothing is claimed while
 * the engine connection is down. A function the engine reports absent is left out of claims and
 * probed with backoff until it is registered again (policy.ts says which errors mean that); one
 * whose topic copy has no live binding here is left out until a binding of it arrives, or a moment.
 */
import { TurnBatcher } from '../shared/batcher.js';
import type { QueueSettings, QueueWorkerConfig } from './config.js';
import { UndeliverableCopyError, failureOf, leaseMs, verdictOf } from './policy.js';
import { QueueError, type ClaimedJob, type Failure, type NewJob, type Publication, type QueueLimits, type QueueStore, type StepInput, type StepOutput } from './store.js';

export interface DispatcherOptions {
  store: QueueStore;
  config: QueueWorkerConfig;
  /** Run one job: the call of its function through the engine. Rejects with the call's error (its `code`). */
  deliver: (job: ClaimedJob, settings: QueueSettings) => Promise<unknown>;
  /** Whether a function has a provider now (engine::functions::info). */
  probe: (functionId: string) => Promise<boolean>;
  warn: (message: string) => void;
  now?: () => number;
}

/** What one svc-queue instance did with one queue's jobs (Dispatcher.events). */
export interface QueueEvents {
  enqueued: number;
  completed: number;
  retried: number;
  dead_lettered: number;
}

type Op =
  | { t: 'enq'; job: NewJob; resolve(): void; reject(e: Error): void }
  | { t: 'pub'; p: Publication; resolve(copies: number): void; reject(e: Error): void }
  | { t: 'done'; queue: string; id: string; attempt: number }
  | { t: 'fail'; queue: string; f: Failure }
  | { t: 'claim'; queue: string | null }
  | { t: 'maintain' };

interface Absence {
  /** Left out of claims until then (busy), or until a probe finds it (absent). */
  until: number;
  probe: boolean;
  nextProbe: number;
  backoffMs: number;
  probing: boolean;
}

/** Housekeeping (due delayed jobs, expired leases) at least this often. */
const TICK_MS = 1000;
const PROBE_FIRST_MS = 250;
const PROBE_MAX_MS = 5000;
/** A function whose providers were all full is left out of claims this long. */
const BUSY_PAUSE_MS = 200;
/**
 * A function with a topic's copy that has no live binding here is left out of claims this long, or
 * until a binding of it arrives: another replica may hold the binding, and the function's other jobs
 * must not wait for ever behind a copy this process may not deliver.
 */
const UNBOUND_PAUSE_MS = 1000;
/** Ops per step at most (enqueues, results, ...); the rest go in the next. */
const MAX_STEP_OPS = 4096;
/** How long results wait for an enqueue to share its commit (stores that fsync each step). */
const DEFER_MS = 2;

export class Dispatcher {
  private readonly store: QueueStore;
  private readonly config: QueueWorkerConfig;
  private readonly now: () => number;
  private readonly limits: Record<string, QueueLimits> = {};
  private readonly batcher = new TurnBatcher<Op>((ops) => this.submit(ops));
  /** Ops that arrived while a step was under way: they go in the next one. */
  private held: Op[] = [];
  /** Results and claims waiting (up to DEFER_MS) for an enqueue's commit, with a store that syncs each step. */
  private deferred: Op[] = [];
  private deferTimer: NodeJS.Timeout | undefined;
  /** Deliveries in flight from this process, by job id. */
  private readonly running = new Map<string, { job: ClaimedJob; startedAt: number }>();
  private readonly absent = new Map<string, Absence>();
  private connected = false;
  private stopped = false;
  private steps = 0;
  private started = 0;
  private stepsIdle: (() => void) | undefined;
  private tickTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  /**
   * Per queue, what this instance did since it started: enqueues stored, and results it recorded
   * (completed, retried, dead-lettered). Reported to the engine with the process report
   * (worker.ts, engine::workers::report `queues`), which /metrics exports.
   */
  readonly events = new Map<string, QueueEvents>();

  constructor(private readonly opts: DispatcherOptions) {
    this.store = opts.store;
    this.config = opts.config;
    this.now = opts.now ?? Date.now;
    for (const s of this.config.queues.values()) {
      this.limits[s.name] = { concurrency: s.concurrency, leaseMs: leaseMs(s), maxJobs: s.maxJobs, maxBytes: s.maxBytes };
    }
  }

  start(): void {
    this.tickTimer = setInterval(() => this.batcher.push({ t: 'maintain' }), TICK_MS);
    this.tickTimer.unref();
    this.batcher.push({ t: 'maintain' });
  }

  /** The engine connection is up (claims may run) or down (none are made). */
  setConnected(up: boolean): void {
    this.connected = up;
    if (up) this.batcher.push({ t: 'maintain' });
  }

  /** Store a job; resolves once it is durable. */
  enqueue(job: NewJob): Promise<void> {
    return new Promise((resolve, reject) => this.batcher.push({ t: 'enq', job, resolve, reject }));
  }

  /** Store one copy per live subscription; resolves with how many, once durable. */
  publish(p: Publication): Promise<number> {
    return new Promise((resolve, reject) => this.batcher.push({ t: 'pub', p, resolve, reject }));
  }

  /** Something outside a step (a redrive) may have made jobs runnable. */
  kick(queue: string | null = null): void {
    this.batcher.push({ t: 'claim', queue });
  }

  /** A durable:subscriber binding of `functionId` arrived: its copies that waited for one may go. */
  bindingArrived(functionId: string): void {
    this.back(functionId);
  }

  /**
   * Jobs were deleted (a purge): the functions left out of claims may have none left, and would go
   * on being listed as waited for. Claim for them again: one that still has jobs and no provider is
   * found absent again at its next delivery, which counts no attempt.
   */
  recheckAbsent(): void {
    for (const functionId of [...this.absent.keys()]) this.back(functionId);
  }

  /** Functions left out of claims now (no provider, all providers full, or copies waiting for a binding). */
  absentFunctions(): string[] {
    return [...this.absent.keys()];
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Deliveries this process started. */
  get delivered(): number {
    return this.started;
  }

  /** Claim nothing more, let deliveries in flight end (up to `graceMs`), record them, settle every step. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopped = true;
    clearInterval(this.tickTimer);
    clearInterval(this.probeTimer);
    clearTimeout(this.dueTimer);
    const end = Date.now() + graceMs;
    while (this.running.size > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    this.batcher.flush();
    this.submit([], true);
    while (this.steps > 0 || this.held.length > 0) await new Promise<void>((resolve) => (this.stepsIdle = resolve));
  }

  // ---- one step ------------------------------------------------------------------------------

  /**
   * One step at a time: what arrives while one is under way (a Redis round trip) waits and goes in
   * the next, so the store gets fewer, larger steps and their answers leave in fewer writes.
   */
  private submit(ops: Op[], force = false): void {
    if (this.steps > 0) {
      for (const op of ops) this.held.push(op);
      return;
    }
    // Results and claims need no fsync of their own (a result lost in a crash only means the job
    // runs again): with a store that syncs each step they wait, briefly, to share an enqueue's commit.
    if (!force && this.store.syncsEachStep === true && !this.stopped && !ops.some((op) => op.t === 'enq' || op.t === 'pub')) {
      for (const op of ops) this.deferred.push(op);
      this.deferTimer ??= setTimeout(() => {
        this.deferTimer = undefined;
        this.submit([], true);
      }, DEFER_MS);
      return;
    }
    if (this.deferred.length > 0) {
      clearTimeout(this.deferTimer);
      this.deferTimer = undefined;
      ops = this.deferred.concat(ops);
      this.deferred = [];
    }
    if (ops.length > 0) this.step(ops);
  }

  private stepDone(): void {
    this.steps--;
    if (this.held.length > 0) {
      // A bounded step: a long one would hold the store (Redis runs one script at a time).
      const next = this.held.length <= MAX_STEP_OPS ? this.held : this.held.splice(0, MAX_STEP_OPS);
      if (next === this.held) this.held = [];
      this.step(next);
    } else this.stepsIdle?.();
  }

  private step(ops: Op[]): void {
    const now = this.now();
    const input: StepInput = { now, limits: this.limits, enqueue: [], publish: [], complete: [], fail: [], claim: {}, absent: [], maintain: false };
    const enqueues: Array<Extract<Op, { t: 'enq' }>> = [];
    const publications: Array<Extract<Op, { t: 'pub' }>> = [];
    const claim = new Set<string>();
    let claimAll = false;
    for (const op of ops) {
      switch (op.t) {
        case 'enq':
          input.enqueue.push(op.job);
          enqueues.push(op);
          claim.add(op.job.queue);
          break;
        case 'pub':
          input.publish.push(op.p);
          publications.push(op);
          claimAll = true;
          break;
        case 'done':
          this.eventsOf(op.queue).completed++;
          input.complete.push({ id: op.id, attempt: op.attempt });
          claim.add(op.queue);
          break;
        case 'fail':
          if (op.f.outcome === 'retry') this.eventsOf(op.queue).retried++;
          else if (op.f.outcome === 'dlq') this.eventsOf(op.queue).dead_lettered++;
          input.fail.push(op.f);
          claim.add(op.queue);
          break;
        case 'claim':
          if (op.queue === null) claimAll = true;
          else claim.add(op.queue);
          break;
        case 'maintain':
          input.maintain = true;
          claimAll = true;
          break;
      }
    }
    if (this.connected && !this.stopped) {
      for (const q of claimAll ? Object.keys(this.limits) : claim) {
        const s = this.config.queues.get(q);
        if (s) input.claim[q] = s.concurrency;
      }
      input.absent = [...this.absent.keys()];
    }
    this.steps++;
    let out: Promise<StepOutput>;
    try {
      out = this.store.step(input);
    } catch (e) {
      out = Promise.reject(e as Error);
    }
    out.then(
      (r) => this.settle(r, enqueues, publications),
      (e: Error) => {
        const err = e instanceof QueueError ? e : new QueueError('store_unavailable', e.message);
        for (const op of enqueues) op.reject(err);
        for (const op of publications) op.reject(err);
        if (input.complete.length + input.fail.length > 0) {
          this.opts.warn(`svc-queue: ${input.complete.length + input.fail.length} results were not recorded (${err.message}); those jobs run again when their lease expires`);
        }
      },
    ).finally(() => this.stepDone());
  }

  private settle(r: StepOutput, enqueues: Array<Extract<Op, { t: 'enq' }>>, publications: Array<Extract<Op, { t: 'pub' }>>): void {
    enqueues.forEach((op, i) => {
      const refused = r.enqueued[i];
      if (refused) op.reject(new QueueError(refused.code, refused.message));
      else {
        this.eventsOf(op.job.queue).enqueued++;
        op.resolve();
      }
    });
    publications.forEach((op, i) => {
      const v = r.published[i];
      if (v && 'copies' in v) {
        // Each copy is a job enqueued on its subscriber's queue.
        for (const [queue, n] of Object.entries(v.queues)) this.eventsOf(queue).enqueued += n;
        op.resolve(v.copies);
      }
      else op.reject(new QueueError(v?.code ?? 'store_unavailable', v?.message ?? 'no answer for this publication'));
    });
    for (const job of r.claimed) {
      // Claimed by a step that was already under way when stop() began: back where it was.
      if (this.stopped) this.batcher.push({ t: 'fail', queue: job.queue, f: { id: job.id, attempt: job.attempt, outcome: 'return', runAt: 0, record: null } });
      else this.run(job);
    }
    for (const job of r.expired) {
      const mine = this.running.get(job.id);
      if (mine && mine.job.attempt === job.attempt) continue; // still ours: its answer is coming
      const s = this.config.queues.get(job.queue)!;
      const now = this.now();
      const f = failureOf(job, s, { code: 'lease_expired', message: `not answered within the lease (timeout_ms ${s.timeoutMs} + grace): the svc-queue running it stopped or lost its store` }, now, now);
      this.batcher.push({ t: 'fail', queue: job.queue, f });
    }
    if (r.nextDueAt !== null) this.scheduleDue(r.nextDueAt);
  }

  private eventsOf(queue: string): QueueEvents {
    let e = this.events.get(queue);
    if (!e) this.events.set(queue, (e = { enqueued: 0, completed: 0, retried: 0, dead_lettered: 0 }));
    return e;
  }

  private scheduleDue(at: number): void {
    if (this.stopped || at >= this.dueAt) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(() => {
      this.dueAt = Infinity;
      this.batcher.push({ t: 'maintain' });
    }, Math.max(0, at - this.now()));
  }

  // ---- deliveries ------------------------------------------------------------------------------

  private run(job: ClaimedJob): void {
    const s = this.config.queues.get(job.queue)!;
    const startedAt = this.now();
    this.started++;
    this.running.set(job.id, { job, startedAt });
    let delivery: Promise<unknown>;
    try {
      delivery = this.opts.deliver(job, s);
    } catch (e) {
      delivery = Promise.reject(e as Error);
    }
    delivery.then(
      () => {
        this.running.delete(job.id);
        this.batcher.push({ t: 'done', queue: job.queue, id: job.id, attempt: job.attempt });
      },
      (e: unknown) => {
        this.running.delete(job.id);
        const err = e as { code?: unknown; message?: unknown };
        const error = { code: typeof err?.code === 'string' ? err.code : 'invocation_failed', message: typeof err?.message === 'string' ? err.message : String(e) };
        const verdict = e instanceof UndeliverableCopyError ? e.verdict : verdictOf(error.code, error.message, job.functionId);
        if (verdict === 'absent' || verdict === 'busy') this.markAbsent(job.functionId, verdict === 'absent', BUSY_PAUSE_MS);
        else if (verdict === 'unbound') this.markAbsent(job.functionId, false, UNBOUND_PAUSE_MS);
        this.batcher.push({ t: 'fail', queue: job.queue, f: failureOf(job, s, error, startedAt, this.now(), verdict) });
      },
    );
  }

  // ---- functions without a provider ----------------------------------------------------------------

  /** Leave `functionId` out of claims: until a probe finds it (`probe`), else for `pauseMs`. */
  private markAbsent(functionId: string, probe: boolean, pauseMs: number): void {
    const now = this.now();
    const known = this.absent.get(functionId);
    if (known && (known.probe || !probe)) return;
    this.absent.set(functionId, { until: probe ? Infinity : now + pauseMs, probe, nextProbe: now + PROBE_FIRST_MS, backoffMs: PROBE_FIRST_MS, probing: false });
    if (probe) this.opts.warn(`svc-queue: ${functionId} has no provider; its jobs wait (not counted as attempts) until it is registered`);
    if (!this.probeTimer) {
      this.probeTimer = setInterval(() => this.checkAbsent(), Math.min(PROBE_FIRST_MS, BUSY_PAUSE_MS) / 2);
      this.probeTimer.unref();
    }
  }

  private checkAbsent(): void {
    const now = this.now();
    for (const [fn, a] of this.absent) {
      if (!a.probe) {
        if (now >= a.until) this.back(fn);
        continue;
      }
      if (a.probing || now < a.nextProbe || !this.connected) continue;
      a.probing = true;
      this.opts.probe(fn).then(
        (present) => {
          a.probing = false;
          if (present) this.back(fn);
          else {
            a.backoffMs = Math.min(PROBE_MAX_MS, a.backoffMs * 2);
            a.nextProbe = this.now() + a.backoffMs;
          }
        },
        () => {
          // Cannot tell (e.g. not allowed to ask): try delivering again.
          a.probing = false;
          this.back(fn);
        },
      );
    }
    if (this.absent.size === 0) {
      clearInterval(this.probeTimer);
      this.probeTimer = undefined;
    }
  }

  private back(functionId: string): void {
    if (!this.absent.delete(functionId)) return;
    this.kick(null);
  }
}
