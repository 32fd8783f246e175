/**
 * What svc-queue does with a delivery that did not succeed: the decisions the stores are handed
 * (docs/queues.md, "Delivery semantics").
 *
 * - The handler threw, timed out, or its worker disconnected mid-run (`invocation_stopped`), or
 *   svc-queue lost its own connection with the run in flight (`connection_lost`; the handler may
 *   have run): a counted failure. Retried after its backoff; dead-lettered at max_attempts.
 * - The engine says the function has no provider (`function_not_found`), or every provider is full
 *   (`overloaded`), or the engine is shutting down: the handler cannot have run, so it is not an
 *   attempt. The job goes back to the front of its lane and the function is left out of claims
 *   until it is back (dispatcher.ts), so jobs of a missing worker wait instead of burning attempts.
 * - A topic's copy whose subscription has no live binding held by this svc-queue (its subscriber is
 *   away, or another replica holds the binding), or whose binding the engine no longer knows
 *   (`binding_not_found`): not an attempt either; the function's jobs pause here until a binding of
 *   it arrives. A copy whose subscription ended (no binding seen within the retention) is
 *   dead-lettered: no one may receive it any more.
 */
import { SvcError } from 'svc-sdk';
import type { QueueSettings } from './config.js';
import type { AttemptRecord, ClaimedJob, Failure } from './store.js';

/** A running job's lease outlasts its timeout by this much, so the engine's `timeout` is seen first. */
export const LEASE_GRACE_MS = 2000;
/** Longest error message kept in a job's history. */
const MAX_MESSAGE = 2000;

export type Verdict =
  /** Counted: retry or dead-letter. */
  | 'failed'
  /** Not counted: the function has no provider; wait until it has. */
  | 'absent'
  /** Not counted: the engine cannot take it now; try again shortly. */
  | 'busy'
  /** Not counted: a topic's copy with no live binding of its subscription here; wait for one. */
  | 'unbound'
  /** Counted, and the last: a topic's copy whose subscription ended. */
  | 'ended';

/**
 * Why a topic's copy was not delivered, found by svc-queue itself (no call was made) or from the
 * engine's refusal of the binding it was delivered for. `verdict` decides what happens to the copy.
 */
export class UndeliverableCopyError extends SvcError {
  constructor(
    code: string,
    message: string,
    readonly verdict: 'unbound' | 'ended',
  ) {
    super(code, message);
    this.name = 'UndeliverableCopyError';
  }
}

/**
 * `functionId`: the job's function. `function_not_found` means it has no provider only when it names
 * that function as the engine (and an SDK without the handler) say it: `Function <id> not found`. A
 * handler whose own nested call failed so passes the code on with another message, and that is a
 * failure of the job like any other (else it would be put back and run again for ever).
 */
export function verdictOf(code: string, message = '', functionId?: string): Verdict {
  if (code === 'function_not_found') return functionId === undefined || message === `Function ${functionId} not found` ? 'absent' : 'failed';
  if (code === 'overloaded' || code === 'shutting_down') return 'busy';
  return 'failed';
}

/** Delay before the retry that follows failure number `failures` (1-based). */
export function backoffMs(s: QueueSettings, failures: number, random: () => number = Math.random): number {
  const base = Math.min(s.backoffMaxMs, s.backoffMs * 2 ** Math.min(failures - 1, 60));
  return Math.round(base * (1 - s.backoffJitter * random()));
}

export function leaseMs(s: QueueSettings): number {
  return s.timeoutMs + LEASE_GRACE_MS;
}

/** The failure to record for a delivery of `job` that ended with `error` at `now`. */
export function failureOf(
  job: ClaimedJob,
  s: QueueSettings,
  error: { code: string; message: string },
  startedAt: number,
  now: number,
  verdict: Verdict = verdictOf(error.code, error.message, job.functionId),
): Failure {
  if (verdict !== 'failed' && verdict !== 'ended') return { id: job.id, attempt: job.attempt, outcome: 'return', runAt: 0, record: null };
  const message = error.message.length > MAX_MESSAGE ? error.message.slice(0, MAX_MESSAGE) + '…' : error.message;
  const record: AttemptRecord = { attempt: job.attempt, at: now, duration_ms: Math.max(0, now - startedAt), code: error.code, message };
  const failures = job.failures + 1;
  if (failures >= s.maxAttempts || verdict === 'ended') return { id: job.id, attempt: job.attempt, outcome: 'dlq', runAt: 0, record };
  return { id: job.id, attempt: job.attempt, outcome: 'retry', runAt: now + backoffMs(s, failures), record };
}
