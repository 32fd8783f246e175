/**
 * The queue store interface behind `svc-queue`, with the types, limits and errors both stores share.
 * Two implementations exist (embedded-store.ts on LMDB, redis-store.ts on Redis, a Lua script per
 * change) and one conformance suite (test/workers/queue/conformance.ts) runs against both.
 *
 * A store is mechanical: it moves jobs between states atomically and counts them. Every decision
 * (when a retry is due, whether a failure counts, when a job is dead) is made by the caller
 * (dispatcher.ts, policy.ts) and handed in, so the two stores cannot disagree on policy.
 *
 * The states of a job: `waiting` (in a lane, runnable), `delayed` (not before `runAt`: a queue's
 * `delay_ms`, or a retry's backoff), `running` (claimed, leased until a deadline), `dlq`
 * (dead-lettered). A finished job is deleted; the queue's `completed` counter remembers it.
 *
 * Lanes: a queue's waiting jobs are kept in lanes, one per target function (ungrouped jobs) and one
 * per (function, message group). A grouped lane runs one job at a time, in order: while a job of
 * the group runs or waits for its retry the lane is busy. Claims take jobs round-robin from the
 * lanes that are ready, skipping the functions the caller reports as absent (no provider), so jobs
 * of an absent function wait without being touched while the rest of the queue flows.
 */
import { SvcError } from 'svc-sdk';

export interface QueueErrorBody {
  code: QueueErrorCode;
  message: string;
}

export type QueueErrorCode =
  | 'enqueue_error'
  | 'unknown_queue'
  | 'queue_full'
  | 'payload_too_large'
  | 'invalid_payload'
  | 'store_unavailable'
  | 'store_locked'
  | 'invalid_config';

/** Every error svc-queue returns: the SDK sends `code` and `message` to the caller. */
export class QueueError extends SvcError {
  declare readonly code: QueueErrorCode;
  constructor(code: QueueErrorCode, message: string) {
    super(code, message);
    this.name = 'QueueError';
  }
  override body(): QueueErrorBody {
    return { code: this.code, message: this.message };
  }
}

/** What a store needs to know of a queue's settings (config.ts holds the rest). */
export interface QueueLimits {
  concurrency: number;
  /** How long a claimed job is leased: the queue's timeout_ms plus a grace period. */
  leaseMs: number;
  maxJobs: number;
  maxBytes: number;
}

/** A job to store. `data` and `metadata` are JSON text; `bytes` is what counts against max_bytes. */
export interface NewJob {
  id: string;
  queue: string;
  functionId: string;
  data: string;
  bytes: number;
  /** The message group (FIFO), or null. */
  group: string | null;
  /** 0: runnable now; else not before this time (ms since the epoch). */
  runAt: number;
  traceparent: string | null;
  metadata: string | null;
  topic: string | null;
  /**
   * The durable:subscriber binding current when a topic's copy was made. Deliveries do not use it:
   * a copy goes with a binding of its subscription live when it runs (topics.ts).
   */
  binding: string | null;
}

/** A topic message: one copy per live subscription of the topic, each its own job. */
export interface Publication {
  topic: string;
  /** Copies get ids `<id>.<n>`. */
  id: string;
  data: string;
  bytes: number;
  traceparent: string | null;
  /** The message group per queue with a message_group_field (absent: ungrouped there). */
  groups: Record<string, string>;
  /** Delay per queue with a delay_ms. */
  delays: Record<string, number>;
  /** Subscriptions not seen since this time are gone and get no copy (they are deleted). */
  liveSince: number;
}

/** One delivery attempt, as kept in a job's history (the last MAX_HISTORY). */
export interface AttemptRecord {
  attempt: number;
  /** When it ended (ms since the epoch). */
  at: number;
  duration_ms: number;
  code: string;
  message: string;
}

/** What happens to a claimed job that did not complete. */
export type FailureOutcome =
  /** A counted failure: wait in `delayed` until runAt, then back to the front of its lane. */
  | 'retry'
  /** A counted failure, the last one: to the dead-letter queue. */
  | 'dlq'
  /** Not an attempt (the handler cannot have run: no provider): back to the front of its lane, attempt undone. */
  | 'return';

export interface Failure {
  id: string;
  /** The attempt the failure belongs to; a failure of any other attempt is stale and ignored. */
  attempt: number;
  outcome: FailureOutcome;
  /** For `retry`. */
  runAt: number;
  /** For `retry` and `dlq`. */
  record: AttemptRecord | null;
}

export interface StepInput {
  now: number;
  /** Settings of every queue this step may touch (by name). */
  limits: Record<string, QueueLimits>;
  enqueue: NewJob[];
  publish: Publication[];
  complete: Array<{ id: string; attempt: number }>;
  fail: Failure[];
  /** Queue → how many jobs to claim at most (the store also keeps to the queue's concurrency). */
  claim: Record<string, number>;
  /** Functions without a provider: their lanes are skipped by claims. */
  absent: string[];
  /** Move due delayed jobs into their lanes and hand out jobs whose lease expired (`expired`). */
  maintain: boolean;
}

/** A claimed job, as the dispatcher delivers it. */
export interface ClaimedJob {
  id: string;
  queue: string;
  functionId: string;
  data: string;
  /** This delivery's number: 1 for the first. */
  attempt: number;
  /** Counted failures before this delivery. */
  failures: number;
  group: string | null;
  enqueuedAt: number;
  traceparent: string | null;
  metadata: string | null;
  topic: string | null;
  binding: string | null;
}

export interface StepOutput {
  /** Per enqueue, in order: null when stored, else why not. */
  enqueued: Array<QueueErrorBody | null>;
  /** Per publication, in order: how many copies were stored, in all and per queue, or why none was. */
  published: Array<{ copies: number; queues: Record<string, number> } | QueueErrorBody>;
  claimed: ClaimedJob[];
  /**
   * Running jobs whose lease had expired (their deliverer died, or lost the store): leased again
   * for RECLAIM_HOLD_MS and handed to the caller, which fails them (their attempt counts).
   */
  expired: ClaimedJob[];
  /** The earliest time a delayed job of the step's queues becomes due, or null. */
  nextDueAt: number | null;
}

export interface QueueCounts {
  queue: string;
  waiting: number;
  delayed: number;
  running: number;
  dlq: number;
  /** Jobs that completed, since the queue was first used. */
  completed: number;
  /** Failed attempts (counted ones), since the queue was first used. */
  failed: number;
  /** Jobs held: waiting + delayed + running + dlq. */
  jobs: number;
  /** Bytes of the jobs held (their payloads). */
  bytes: number;
}

export type JobState = 'waiting' | 'delayed' | 'running' | 'dlq';

/** A job as listings show it. */
export interface JobView {
  id: string;
  queue: string;
  state: JobState;
  function_id: string;
  data: unknown;
  /** Deliveries started so far. */
  attempts: number;
  /** Counted failures. */
  failures: number;
  group: string | null;
  topic: string | null;
  enqueued_at: number;
  /** delayed: when it becomes due; running: its lease deadline; dlq: when it was dead-lettered. */
  at: number | null;
  /** The last failure, if any. */
  error: { code: string; message: string } | null;
  history: AttemptRecord[];
}

export interface Subscription {
  topic: string;
  function_id: string;
  queue: string;
  /** The latest binding id seen for it. */
  binding: string;
  created_at: number;
  /** Last time a binding of it was seen (bound, refreshed, or unbound). */
  seen_at: number;
}

export interface QueueStore {
  /** Every step costs a sync to disk (the embedded store): steps that need none are worth merging. */
  readonly syncsEachStep?: boolean;
  /** Apply a batch of changes (each atomic on its own) and claim jobs, in one commit. */
  step(input: StepInput): Promise<StepOutput>;
  /** Counts of the named queues and of every other queue the store holds jobs of. */
  counts(queues: string[]): Promise<QueueCounts[]>;
  /** Up to `limit` jobs in `state` (dlq: from `offset`, oldest first), with the state's count, read together. */
  list(queue: string, state: JobState, offset: number, limit: number): Promise<{ total: number; jobs: JobView[] }>;
  /** Dead-lettered jobs back to the end of their lanes, failures reset. `ids` null: all. Returns how many moved. */
  redrive(queue: string, ids: string[] | null, now: number): Promise<number>;
  /** Delete dead-lettered jobs. `ids` null: all. Returns how many. */
  deleteDead(queue: string, ids: string[] | null): Promise<number>;
  /** Delete the waiting and delayed jobs of a queue (running jobs finish; the DLQ stays). */
  purge(queue: string): Promise<number>;
  /** Create or refresh subscriptions (created_at is kept for existing ones). */
  subscribe(subs: Array<Omit<Subscription, 'created_at' | 'seen_at'>>, now: number): Promise<void>;
  subscriptions(): Promise<Subscription[]>;
  /** Let every operation already issued finish, then close. */
  close(): Promise<void>;
}

/** Attempts kept in a job's history. */
export const MAX_HISTORY = 20;
/** How long a job with an expired lease is held while its failure is recorded. */
export const RECLAIM_HOLD_MS = 30_000;
/** Due delayed jobs moved into lanes per step and queue; more are moved by the next step. */
export const PROMOTE_BATCH = 1000;
/** Expired leases handed out per step and queue. */
export const RECLAIM_BATCH = 100;
/** Largest group value, topic and message id, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 256;

/** A lane: the jobs of one function, or of one (function, group). Function ids hold no control characters. */
export function laneOf(functionId: string, group: string | null): string {
  return group === null ? functionId : functionId + '\u0000' + group;
}

export function functionOfLane(lane: string): string {
  const i = lane.indexOf('\u0000');
  return i < 0 ? lane : lane.slice(0, i);
}

export function emptyCounts(queue: string): QueueCounts {
  return { queue, waiting: 0, delayed: 0, running: 0, dlq: 0, completed: 0, failed: 0, jobs: 0, bytes: 0 };
}

/** The message a full queue refuses a job with (both stores). */
export function queueFullMessage(queue: string, jobs: number, bytes: number, limits: QueueLimits, adding: number): string {
  return jobs + 1 > limits.maxJobs
    ? `queue "${queue}" is full: it holds ${jobs} jobs (max_jobs ${limits.maxJobs}); delete or redrive dead-lettered jobs, or raise max_jobs`
    : `queue "${queue}" is full: it holds ${bytes} bytes and this job has ${adding} (max_bytes ${limits.maxBytes}); delete or redrive dead-lettered jobs, or raise max_bytes`;
}
