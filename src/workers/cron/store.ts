/**
 * The store behind svc-cron: per schedule, its durable record (the last scheduled time accounted
 * for, the run in progress, pause, last fire and outcome, counts), and which svc-cron process holds
 * which binding. Two implementations (embedded-store.ts on LMDB, redis-store.ts on Redis) and one
 * conformance suite (test/workers/cron/conformance.ts) that runs against both.
 *
 * Exactly once: every operation on a schedule is atomic in the store (one LMDB write transaction,
 * one Redis script), and `advance` moves the schedule's `last_time` forward only: of the scheduled
 * times a caller offers, it gets only those later than `last_time`, and `last_time` becomes the
 * latest of them. So a scheduled time is claimed by one caller, whichever svc-cron replica or
 * engine it runs on, before or after a restart.
 */
import type { CatchUp, ScheduleDef } from './schedule.js';

export type Outcome = 'running' | 'ok' | 'error' | 'skipped' | 'paused';

/** One fire of a schedule as recorded: scheduled or manual (`cron::run_now`), and how it went. */
export interface FireRecord {
  run_id: string | null;
  trigger_id: string | null;
  scheduled_time: string;
  actual_time: string;
  manual: boolean;
  outcome: Outcome;
  error?: { code: string; message: string };
  finished_at?: string;
  duration_ms?: number;
  /** `queue` fires: the queue the run was enqueued on, or why it was called directly instead. */
  note?: string;
}

export interface ScheduleCounts {
  fired: number;
  ok: number;
  error: number;
  skipped: number;
  missed: number;
}

export interface ScheduleState {
  schedule_id: string;
  def: ScheduleDef | null;
  created_at: number;
  /** The latest scheduled time accounted for (fired, skipped or missed), ms since the epoch. */
  last_time: number | null;
  paused: boolean;
  /** The run in progress, as far as `overlap: skip` is concerned. */
  run: { run_id: string; holder_id: string; until: number } | null;
  /** The latest fire (any outcome). */
  last: FireRecord | null;
  /** The latest run that finished (ok or error). */
  last_result: FireRecord | null;
  counts: ScheduleCounts;
}

export interface StartRequest {
  scheduled_time: number;
  run_id: string;
  /** The svc-cron process running it: the run stops counting when that process is gone. */
  holder_id: string;
  now: number;
  /** When the run stops counting as running even if its process lives (its call's deadline). */
  until: number;
  /** overlap: skip — refuse while another run of the schedule counts as running. */
  skip_while_running: boolean;
  /** false for manual runs: `cron::run_now` runs a paused schedule too. */
  honor_pause: boolean;
  /** The record of this fire with outcome `running`; the store writes it, or its skipped/paused variant. */
  record: FireRecord;
}

export type StartOutcome = 'fire' | 'skipped' | 'paused';

export interface AdvanceRequest {
  /** Scheduled times this caller considers due, ascending, none in the future. */
  times: number[];
  /** Which of those still unclaimed to run: all, the latest only, or none (recorded as missed). */
  policy: CatchUp | 'all';
  /** Start the run of `start.scheduled_time` in the same atomic step, if it is the first to run. */
  start?: StartRequest;
}

export interface AdvanceResult {
  /** The times this caller claimed and must run, ascending. */
  run: number[];
  /** Claimed times recorded as missed (not run). */
  missed: number;
  /** The outcome of `start`, when it applied (run[0] === start.scheduled_time). */
  started: StartOutcome | null;
}

/** A binding held by a live svc-cron process. */
export interface HeldBinding {
  holder_id: string;
  worker: string;
  trigger_id: string;
  schedule_id: string;
}

export interface CronStore {
  /** Record the schedule's definition if it is new; return its state. */
  register(id: string, def: ScheduleDef, now: number): Promise<ScheduleState>;
  advance(id: string, req: AdvanceRequest): Promise<AdvanceResult>;
  /** Start a run of an already claimed time, or a manual run (no claim). */
  start(id: string, req: StartRequest): Promise<StartOutcome>;
  /** A run ended: `record` has its outcome. Clears the running mark if it is still this run's. */
  finish(id: string, record: FireRecord & { run_id: string }): Promise<void>;
  /** Null when the schedule is unknown. */
  setPaused(id: string, paused: boolean): Promise<ScheduleState | null>;
  get(ids: string[]): Promise<Map<string, ScheduleState>>;
  /** This process is alive until `expires_at`; its bindings are `bindings` (trigger id → schedule id). */
  heartbeat(holderId: string, worker: string, expiresAt: number, bindings: Array<[string, string]> | undefined): Promise<void>;
  removeHolder(holderId: string): Promise<void>;
  /** Bindings of every live holder (dead holders are cleaned up on the way). */
  liveBindings(now: number): Promise<HeldBinding[]>;
  /** Let operations already issued finish, then close. */
  close(): Promise<void>;
}

export const EMPTY_COUNTS: ScheduleCounts = { fired: 0, ok: 0, error: 0, skipped: 0, missed: 0 };

/** The message a skipped fire's record carries (both stores write the same). */
export const SKIPPED_MESSAGE = 'skipped: the previous run of this schedule was still running (overlap: skip)';
export const PAUSED_MESSAGE = 'skipped: the schedule is paused (cron::resume resumes it)';

/** The variant of a fire's record the store writes when the start is refused. */
export function refusedRecord(record: FireRecord, outcome: 'skipped' | 'paused'): FireRecord {
  return {
    ...record,
    run_id: null,
    outcome,
    error: { code: outcome, message: outcome === 'skipped' ? SKIPPED_MESSAGE : PAUSED_MESSAGE },
  };
}

/** Which of `fresh` (the unclaimed times, ascending) a policy runs. */
export function toRun(fresh: number[], policy: AdvanceRequest['policy']): number[] {
  if (fresh.length === 0 || policy === 'none') return [];
  return policy === 'last' ? [fresh[fresh.length - 1]!] : fresh;
}
