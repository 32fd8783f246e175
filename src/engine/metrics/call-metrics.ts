import type { SpanStatus } from '../traces.js';

/**
 * What the engine counts of its calls, for /metrics (prometheus.ts): calls by function and status,
 * their latency by function, and errors by code. Counting happens on every routed call, so it is a
 * Map lookup and a few number writes into typed arrays; the Prometheus client formats them only
 * when scraped (its own `observe` hashes a label object per call).
 *
 * Function ids and error codes are user input (a worker names its functions and its errors), so
 * each label is bounded: the first `maxFunctions` function ids get a series of their own, later
 * ones are counted under `OTHER`; the same for error codes (`maxCodes`, and codes of more than
 * MAX_CODE_CHARS characters). A series, once made, stays: a Prometheus counter must not vanish.
 */

export const STATUSES: readonly SpanStatus[] = ['ok', 'error', 'timeout', 'stopped', 'cancelled'];
const STATUS_INDEX: Record<SpanStatus, number> = { ok: 0, error: 1, timeout: 2, stopped: 3, cancelled: 4 };

/** The label value of everything beyond a bound. */
export const OTHER = '_other';
/** Error codes longer than this are counted under OTHER (svc's own codes are far shorter). */
export const MAX_CODE_CHARS = 64;

/** Upper bounds (seconds) of the latency buckets: 0.1 ms to 30 s. */
export const LATENCY_BUCKETS_S: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BUCKETS_MS = LATENCY_BUCKETS_S.map((s) => s * 1000);

/** One function's counts: calls by status, and its latencies (non-cumulative buckets, the last one +Inf). */
export class FunctionStats {
  readonly byStatus = new Float64Array(STATUSES.length);
  readonly buckets = new Float64Array(BUCKETS_MS.length + 1);
  /** Seconds, all calls together. */
  sum = 0;
  count = 0;
}

export class CallMetrics {
  private readonly functions = new Map<string, FunctionStats>();
  private readonly other = new FunctionStats();
  private readonly errors = new Map<string, number>();
  /** Calls refused before they started (unknown function, overloaded, not allowed…). */
  refusals = 0;

  constructor(
    readonly maxFunctions = 1000,
    readonly maxCodes = 100,
  ) {}

  /** A call ended after `durationMs` (invocations.ts, finish). */
  ended(functionId: string, status: SpanStatus, durationMs: number, errorCode: string | undefined): void {
    const stats = this.functions.get(functionId) ?? this.add(functionId);
    const i = STATUS_INDEX[status];
    stats.byStatus[i] = stats.byStatus[i]! + 1;
    stats.count++;
    stats.sum += durationMs / 1000;
    let b = 0;
    while (b < BUCKETS_MS.length && durationMs > BUCKETS_MS[b]!) b++;
    stats.buckets[b] = stats.buckets[b]! + 1;
    if (errorCode !== undefined) this.error(errorCode);
  }

  /** A call refused before it became one (its caller got `code`). */
  refused(code: string): void {
    this.refusals++;
    this.error(code);
  }

  private add(functionId: string): FunctionStats {
    // A function named like the overflow label shares its series rather than duplicating it.
    if (this.functions.size >= this.maxFunctions || functionId === OTHER) return this.other;
    const stats = new FunctionStats();
    this.functions.set(functionId, stats);
    return stats;
  }

  private error(code: string): void {
    const n = this.errors.get(code);
    if (n !== undefined) this.errors.set(code, n + 1);
    else if (this.errors.size < this.maxCodes && code.length <= MAX_CODE_CHARS && code !== OTHER) this.errors.set(code, 1);
    else this.errors.set(OTHER, (this.errors.get(OTHER) ?? 0) + 1);
  }

  /** Every function's stats, with `_other` last when anything was counted there. */
  *byFunction(): Generator<[string, FunctionStats]> {
    yield* this.functions;
    if (this.other.count > 0) yield [OTHER, this.other];
  }

  errorCounts(): IterableIterator<[string, number]> {
    return this.errors.entries();
  }
}
