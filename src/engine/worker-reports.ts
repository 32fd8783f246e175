import { EngineError } from './errors.js';
import type { Registry } from './registry.js';
import { parseQueueCounters, parseStateCounters, reportNumber, reportObject, type QueueCounters, type StateCounters } from './service-counters.js';

/**
 * What a worker says of its own process every few seconds (`engine::workers::report`, sent by both
 * SDKs off the call path): CPU time, resident memory, heap and event-loop lag. The engine keeps the
 * latest report per connection (Peer.processReport) for `engine::workers::list`, the console's
 * Workers page, /metrics and the OTLP metrics. The values are the worker's word, like its `pid`.
 */
export interface ProcessReport {
  /** CPU time of the process since it started, seconds. */
  cpu_user_seconds: number;
  cpu_system_seconds: number;
  /** Resident set size now, bytes. */
  rss_bytes: number;
  /** The language runtime's heap (Node's V8 heap; null where the SDK has none to report). */
  heap_used_bytes: number | null;
  heap_total_bytes: number | null;
  /** How late the event loop ran timers over the report's interval, milliseconds (mean, max). */
  event_loop_lag_mean_ms: number | null;
  event_loop_lag_max_ms: number | null;
  /** How often the worker reports, ms (null: it did not say). */
  interval_ms: number | null;
  /** When the engine received it, ISO time. */
  reported_at: string;
}

export const REPORT_FUNCTION = 'engine::workers::report';

/**
 * A report is a handful of numbers (and, from svc-queue, a few per queue): a frame over this many
 * characters is not one (a peer calling with a huge payload is refused before anything is read).
 */
export const MAX_REPORT_CHARS = 64 * 1024;

/** The counters svc-state and svc-queue add to their reports (service-counters.ts); null: none. */
export interface ServiceCounters {
  state: StateCounters | null;
  queues: QueueCounters[] | null;
}

/** A field of `process`: required, or null when left out. */
function num(p: Record<string, unknown>, field: string, required: boolean): number | null {
  const v = p[field];
  if (v === undefined || v === null) {
    if (required) throw new EngineError('invalid_payload', `${REPORT_FUNCTION}: "process.${field}" is required`);
    return null;
  }
  return reportNumber(v, `process.${field}`);
}

/** The `process` part of a report, validated: known fields only, each a bounded non-negative number. */
export function parseProcessReport(data: unknown, frameChars: number, now = Date.now()): ProcessReport {
  if (frameChars > MAX_REPORT_CHARS) {
    throw new EngineError('payload_too_large', `${REPORT_FUNCTION}: a report must fit in ${MAX_REPORT_CHARS} characters, got ${frameChars}`);
  }
  const p = reportObject(reportObject(data, 'data').process, 'process');
  return {
    cpu_user_seconds: num(p, 'cpu_user_seconds', true)!,
    cpu_system_seconds: num(p, 'cpu_system_seconds', true)!,
    rss_bytes: num(p, 'rss_bytes', true)!,
    heap_used_bytes: num(p, 'heap_used_bytes', false),
    heap_total_bytes: num(p, 'heap_total_bytes', false),
    event_loop_lag_mean_ms: num(p, 'event_loop_lag_mean_ms', false),
    event_loop_lag_max_ms: num(p, 'event_loop_lag_max_ms', false),
    interval_ms: num(p, 'interval_ms', false),
    reported_at: new Date(now).toISOString(),
  };
}

/**
 * The instances of one worker together (engine::supervisor::list, `svc worker list`): CPU seconds
 * and resident memory summed over the peers that reported; null when none has.
 */
export function processTotals(peers: Iterable<{ processReport: ProcessReport | null }>): { cpu_seconds: number; rss_bytes: number } | null {
  let out: { cpu_seconds: number; rss_bytes: number } | null = null;
  for (const p of peers) {
    const r = p.processReport;
    if (!r) continue;
    out ??= { cpu_seconds: 0, rss_bytes: 0 };
    out.cpu_seconds += r.cpu_user_seconds + r.cpu_system_seconds;
    out.rss_bytes += r.rss_bytes;
  }
  return out;
}

/** `engine::workers::report`: keeps the calling connection's latest report. */
export function installWorkerReports(registry: Registry): void {
  registry.addBuiltin(REPORT_FUNCTION, "Report the calling worker's process metrics: {process: {cpu_user_seconds, cpu_system_seconds, rss_bytes, heap_used_bytes?, heap_total_bytes?, event_loop_lag_mean_ms?, event_loop_lag_max_ms?, interval_ms?}, state?: {gets, sets, updates, deletes, lists, set_bytes}, queues?: [{queue, enqueued, completed, retried, dead_lettered, waiting, delayed, running, dlq}]}", (data, caller, frameChars) => {
    if (!caller) return null;
    const report = parseProcessReport(data, frameChars);
    const m = data as Record<string, unknown>;
    const state = parseStateCounters(m.state);
    const queues = parseQueueCounters(m.queues);
    caller.processReport = report;
    caller.serviceCounters = state || queues ? { state, queues } : null;
    return null;
  });
}
