import type { QueueCounters, StateCounters } from '../service-counters.js';
import type { Session } from '../session.js';
import { OTHER } from './call-metrics.js';

/** One worker process's latest report, as /metrics and the OTLP metrics show it. */
export interface WorkerProcessSample {
  /** The worker's name (what it registered as). */
  worker: string;
  /** The supervised replica number, else the first 8 characters of its connection's worker_id. */
  replica: string;
  cpuUserSeconds: number;
  cpuSystemSeconds: number;
  rssBytes: number;
  heapUsedBytes: number | null;
  eventLoopLagMeanSeconds: number | null;
  eventLoopLagMaxSeconds: number | null;
  /** svc-state's counters (service-counters.ts), null: it sent none (and for _other). */
  state: StateCounters | null;
  /** svc-queue's counters per queue; [] when none (and for _other). */
  queues: QueueCounters[];
}

/**
 * The samples of the workers that reported (engine::workers::report), one per connection. Worker
 * names are chosen by workers and connections come and go, so the series are bounded like
 * function ids: the first `max` reporting connections (in connection order) get series of their
 * own, the rest are added up under worker="_other", replica="_other" (CPU and memory summed, lag
 * the largest). A worker that disconnects stops being reported: these are gauges of live processes.
 */
export function workerSamples(sessions: Iterable<Session>, max: number): WorkerProcessSample[] {
  const out: WorkerProcessSample[] = [];
  let other: WorkerProcessSample | null = null;
  let queueRows = 0;
  for (const s of sessions) {
    const r = s.processReport;
    if (r === null || s.role === 'client') continue;
    const sample: WorkerProcessSample = {
      worker: s.name,
      replica: s.identity?.kind === 'instance' ? String(s.identity.replica) : s.id.slice(0, 8),
      cpuUserSeconds: r.cpu_user_seconds,
      cpuSystemSeconds: r.cpu_system_seconds,
      rssBytes: r.rss_bytes,
      heapUsedBytes: r.heap_used_bytes,
      eventLoopLagMeanSeconds: r.event_loop_lag_mean_ms === null ? null : r.event_loop_lag_mean_ms / 1000,
      eventLoopLagMaxSeconds: r.event_loop_lag_max_ms === null ? null : r.event_loop_lag_max_ms / 1000,
      state: null,
      queues: [],
    };
    if (out.length < max) {
      const c = s.serviceCounters;
      if (c) {
        sample.state = c.state;
        if (c.queues && queueRows < max) {
          sample.queues = c.queues.length <= max - queueRows ? c.queues : c.queues.slice(0, max - queueRows);
          queueRows += sample.queues.length;
        }
      }
      out.push(sample);
      continue;
    }
    if (!other) {
      other = { ...sample, worker: OTHER, replica: OTHER };
      out.push(other);
      continue;
    }
    other.cpuUserSeconds += sample.cpuUserSeconds;
    other.cpuSystemSeconds += sample.cpuSystemSeconds;
    other.rssBytes += sample.rssBytes;
    other.heapUsedBytes = sumOrNull(other.heapUsedBytes, sample.heapUsedBytes);
    other.eventLoopLagMeanSeconds = maxOrNull(other.eventLoopLagMeanSeconds, sample.eventLoopLagMeanSeconds);
    other.eventLoopLagMaxSeconds = maxOrNull(other.eventLoopLagMaxSeconds, sample.eventLoopLagMaxSeconds);
  }
  return out;
}

function sumOrNull(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : a + b;
}

function maxOrNull(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b);
}
