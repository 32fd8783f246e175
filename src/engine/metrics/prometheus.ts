import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValueWithName } from 'prom-client';
import type { ExportCounts } from '../telemetry/ring-export.js';
import { CallMetrics, LATENCY_BUCKETS_S, STATUSES } from './call-metrics.js';
import { QUEUE_EVENTS, QUEUE_STATES } from '../service-counters.js';
import type { WorkerProcessSample } from './worker-series.js';

/**
 * The engine's Prometheus metrics (docs/observability.md lists them), in a prom-client Registry of
 * its own (an engine is not a process: tests run several). Nothing here runs on the call path:
 * every metric is read from the engine's own counters when scraped (prom-client's `collect`).
 */

/** What the engine tells the metrics when scraped. */
export interface EngineMetricSources {
  calls: CallMetrics;
  /** Calls in flight, and the bytes of their frames. */
  inFlight(): { calls: number; bytes: number };
  /** Open connections by kind: workers, clients (CLI, console), iii `/otel` telemetry sockets. */
  connections(): { worker: number; client: number; telemetry: number };
  /** Frames received and sent, and bytes read from and written to the sockets (WebSocket framing included). */
  traffic(): { framesIn: number; framesOut: number; bytesIn: number; bytesOut: number };
  /** Function ids registered, the engine's own included. */
  functions(): number;
  /** What the OTLP export did (logs null when only spans are exported); null when it is off. */
  telemetry(): { spans: ExportCounts; logs: ExportCounts | null } | null;
  /** The latest process report of each worker that sent one (bounded: _other). */
  workers(): WorkerProcessSample[];
}

export const METRIC_PREFIX = 'svc_engine_';

export function engineRegistry(src: EngineMetricSources, withProcessMetrics = true): Registry {
  const registry = new Registry();
  const p = METRIC_PREFIX;
  // The standard names (process_*, nodejs_*), so that existing Node.js dashboards work.
  if (withProcessMetrics) collectDefaultMetrics({ register: registry });

  totalCounter(registry, `${p}calls_total`, 'Calls that ended, by function id (bounded: _other) and status.', ['function', 'status'], (inc) => {
    for (const [fid, s] of src.calls.byFunction()) {
      for (let i = 0; i < STATUSES.length; i++) if (s.byStatus[i]! > 0) inc({ function: fid, status: STATUSES[i]! }, s.byStatus[i]!);
    }
  });
  totalCounter(registry, `${p}errors_total`, 'Calls that ended with an error or were refused, by error code (bounded: _other).', ['code'], (inc) => {
    for (const [code, n] of src.calls.errorCounts()) inc({ code }, n);
  });
  totalCounter(registry, `${p}call_refusals_total`, 'Calls refused before they started (not found, overloaded, denied, shutting down).', [], (inc) => inc({}, src.calls.refusals));
  new CallDurationHistogram(registry, src.calls);

  gauge(registry, `${p}calls_in_flight`, 'Calls in flight.', [], (set) => set({}, src.inFlight().calls));
  gauge(registry, `${p}in_flight_bytes`, 'Bytes of the frames of the calls in flight.', [], (set) => set({}, src.inFlight().bytes));
  gauge(registry, `${p}connections`, 'Open connections by kind: worker, client (CLI, console), telemetry (iii /otel sockets).', ['kind'], (set) => {
    const c = src.connections();
    set({ kind: 'worker' }, c.worker);
    set({ kind: 'client' }, c.client);
    set({ kind: 'telemetry' }, c.telemetry);
  });
  gauge(registry, `${p}functions`, 'Function ids registered, the engine\'s own (engine::*) included.', [], (set) => set({}, src.functions()));

  const traffic = (key: keyof ReturnType<EngineMetricSources['traffic']>) => (inc: Inc) => inc({}, src.traffic()[key]);
  totalCounter(registry, `${p}frames_received_total`, 'WebSocket frames received from peers.', [], traffic('framesIn'));
  totalCounter(registry, `${p}frames_sent_total`, 'WebSocket frames sent to peers.', [], traffic('framesOut'));
  totalCounter(registry, `${p}received_bytes_total`, 'Bytes read from peer sockets.', [], traffic('bytesIn'));
  totalCounter(registry, `${p}sent_bytes_total`, 'Bytes written to peer sockets.', [], traffic('bytesOut'));
  const signals = (): Array<[string, ExportCounts | null | undefined]> => {
    const t = src.telemetry();
    return [
      ['traces', t?.spans],
      ['logs', t?.logs],
    ];
  };
  totalCounter(registry, `${p}otlp_exported_total`, 'Spans (signal="traces") and log lines (signal="logs") the OTLP export sent (engine.telemetry).', ['signal'], (inc) => {
    for (const [signal, c] of signals()) inc({ signal }, c?.exported ?? 0);
  });
  totalCounter(
    registry,
    `${p}otlp_dropped_total`,
    'Spans and log lines the OTLP export dropped: export_failed (the collector refused or was unreachable), ring_overrun (overwritten before they were read).',
    ['signal', 'reason'],
    (inc) => {
      for (const [signal, c] of signals()) {
        inc({ signal, reason: 'export_failed' }, c?.dropped.export_failed ?? 0);
        inc({ signal, reason: 'ring_overrun' }, c?.dropped.ring_overrun ?? 0);
      }
    },
  );
  workerGauges(registry, src);
  return registry;
}

/** What each worker reports of its process (engine::workers::report), labelled {worker, replica}. */
function workerGauges(registry: Registry, src: EngineMetricSources): void {
  const w = 'svc_worker_';
  const labels = ['worker', 'replica'];
  const each = (value: (s: WorkerProcessSample) => number | null) => (set: Inc) => {
    for (const s of src.workers()) {
      const v = value(s);
      if (v !== null) set({ worker: s.worker, replica: s.replica }, v);
    }
  };
  totalCounter(registry, `${w}cpu_user_seconds_total`, 'User CPU time of each worker process, as it reports it.', labels, each((s) => s.cpuUserSeconds));
  totalCounter(registry, `${w}cpu_system_seconds_total`, 'System CPU time of each worker process, as it reports it.', labels, each((s) => s.cpuSystemSeconds));
  gauge(registry, `${w}resident_memory_bytes`, 'Resident memory of each worker process.', labels, each((s) => s.rssBytes));
  gauge(registry, `${w}heap_used_bytes`, 'Heap in use of each worker process (Node.js workers).', labels, each((s) => s.heapUsedBytes));
  gauge(registry, `${w}event_loop_lag_seconds`, 'Mean event-loop lag of each worker over its last report interval.', labels, each((s) => s.eventLoopLagMeanSeconds));
  gauge(registry, `${w}event_loop_lag_max_seconds`, 'Largest event-loop lag of each worker over its last report interval.', labels, each((s) => s.eventLoopLagMaxSeconds));
  serviceCounters(registry, src);
}

const STATE_OPS = [
  ['get', 'gets'],
  ['set', 'sets'],
  ['update', 'updates'],
  ['delete', 'deletes'],
  ['list', 'lists'],
] as const;

/** svc-state's and svc-queue's own counters, as their instances report them. */
function serviceCounters(registry: Registry, src: EngineMetricSources): void {
  totalCounter(registry, 'svc_state_operations_total', 'svc-state operations served, by instance and op (get, set, update, delete, list).', ['worker', 'replica', 'op'], (inc) => {
    for (const s of src.workers()) {
      if (s.state) for (const [op, f] of STATE_OPS) inc({ worker: s.worker, replica: s.replica, op }, s.state[f]);
    }
  });
  totalCounter(registry, 'svc_state_set_bytes_total', 'JSON bytes of the values svc-state stored with state::set, by instance.', ['worker', 'replica'], (inc) => {
    for (const s of src.workers()) if (s.state) inc({ worker: s.worker, replica: s.replica }, s.state.set_bytes);
  });
  totalCounter(registry, 'svc_queue_jobs_total', 'svc-queue jobs by instance, queue and event (enqueued, completed, retried, dead_lettered).', ['worker', 'replica', 'queue', 'event'], (inc) => {
    for (const s of src.workers()) {
      for (const q of s.queues) for (const e of QUEUE_EVENTS) inc({ worker: s.worker, replica: s.replica, queue: q.queue, event: e }, q[e]);
    }
  });
  gauge(registry, 'svc_queue_jobs', 'svc-queue jobs held now, by queue and state (waiting, delayed, running, dlq), as each instance last saw its store.', ['worker', 'replica', 'queue', 'state'], (set) => {
    for (const s of src.workers()) {
      for (const q of s.queues) for (const st of QUEUE_STATES) set({ worker: s.worker, replica: s.replica, queue: q.queue, state: st }, q[st]);
    }
  });
}

type Labels = Record<string, string>;
type Inc = (labels: Labels, value: number) => void;

/** A counter whose totals the engine keeps: set from them at each scrape. */
function totalCounter(registry: Registry, name: string, help: string, labelNames: string[], fill: (inc: Inc) => void): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      fill((labels, value) => this.inc(labels, value));
    },
  });
}

function gauge(registry: Registry, name: string, help: string, labelNames: string[], fill: (set: Inc) => void): void {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      fill((labels, value) => this.set(labels, value));
    },
  });
}

const DURATION_HELP = 'Call latency in the engine, from dispatch to its end, by function id (bounded: _other).';

/**
 * Call latency by function, from CallMetrics' buckets. prom-client's Histogram counts its own
 * observations; this one reports the engine's instead (its `get`, which the Registry reads).
 */
class CallDurationHistogram extends Histogram<'function'> {
  constructor(
    registry: Registry,
    private readonly calls: CallMetrics,
  ) {
    super({ name: `${METRIC_PREFIX}call_duration_seconds`, help: DURATION_HELP, labelNames: ['function'], buckets: [...LATENCY_BUCKETS_S], registers: [registry] });
  }

  override get(): Promise<MetricObjectWithValues<MetricValueWithName<'function'>>> {
    const name = `${METRIC_PREFIX}call_duration_seconds`;
    const values: MetricValueWithName<'function'>[] = [];
    for (const [fid, s] of this.calls.byFunction()) {
      let cumulative = 0;
      for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) {
        cumulative += s.buckets[i]!;
        values.push({ metricName: `${name}_bucket`, labels: { function: fid, le: LATENCY_BUCKETS_S[i]! } as never, value: cumulative });
      }
      values.push({ metricName: `${name}_bucket`, labels: { function: fid, le: '+Inf' } as never, value: s.count });
      values.push({ metricName: `${name}_sum`, labels: { function: fid }, value: s.sum });
      values.push({ metricName: `${name}_count`, labels: { function: fid }, value: s.count });
    }
    return Promise.resolve({ name, help: DURATION_HELP, type: 'histogram' as never, values, aggregator: 'sum', collect: () => undefined });
  }

  /** The Registry prefers this to get() when present (prom-client's Histogram has one). */
  getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<'function'>>> {
    return this.get();
  }
}
