import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as ProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import type { Resource } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  PeriodicExportingMetricReader,
  type CollectionResult,
  type MetricData,
  type MetricProducer,
} from '@opentelemetry/sdk-metrics';
import { LATENCY_BUCKETS_S, STATUSES } from '../metrics/call-metrics.js';
import type { EngineMetricSources } from '../metrics/prometheus.js';
import { QUEUE_EVENTS, QUEUE_STATES, STATE_FIELDS } from '../service-counters.js';
import { ENGINE_VERSION } from '../options.js';
import { grpcExporterOptions, httpExporterOptions } from './otlp-endpoint.js';
import type { TelemetryOptions } from './telemetry-options.js';

/**
 * The engine's metrics over OTLP: the counts /metrics shows (metrics/prometheus.ts), read from
 * the same sources when the periodic reader collects, under OpenTelemetry names (`svc.engine.*`,
 * units apart). A MetricProducer rather than instruments: the counts already exist (CallMetrics
 * keeps them as calls end), and the latency histogram is the engine's own buckets.
 */
class EngineMetricProducer implements MetricProducer {
  private readonly start: HrTime;

  constructor(
    private readonly src: EngineMetricSources,
    private readonly resource: Resource,
    startedAtMs: number,
  ) {
    this.start = millisToHrTime(startedAtMs);
  }

  collect(): Promise<CollectionResult> {
    const src = this.src;
    const now = millisToHrTime(Date.now());
    const point = <T>(value: T, attributes: Attributes = {}) => ({ startTime: this.start, endTime: now, attributes, value });
    const sum = (name: string, unit: string, description: string, points: Array<[Attributes, number]>): MetricData => ({
      descriptor: { name, unit, description, valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.SUM,
      isMonotonic: true,
      dataPoints: points.map(([a, v]) => point(v, a)),
    });
    const gauge = (name: string, unit: string, description: string, points: Array<[Attributes, number]>): MetricData => ({
      descriptor: { name, unit, description, valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.GAUGE,
      dataPoints: points.map(([a, v]) => point(v, a)),
    });

    const calls: Array<[Attributes, number]> = [];
    const durations = [];
    for (const [fid, s] of src.calls.byFunction()) {
      for (let i = 0; i < STATUSES.length; i++) if (s.byStatus[i]! > 0) calls.push([{ function: fid, status: STATUSES[i]! }, s.byStatus[i]!]);
      durations.push(point({ buckets: { boundaries: [...LATENCY_BUCKETS_S], counts: [...s.buckets] }, sum: s.sum, count: s.count }, { function: fid }));
    }
    const traffic = src.traffic();
    const inFlight = src.inFlight();
    const c = src.connections();
    const otlp = src.telemetry();
    const exported: Array<[Attributes, number]> = [];
    const dropped: Array<[Attributes, number]> = [];
    for (const [signal, counts] of [['traces', otlp?.spans], ['logs', otlp?.logs]] as const) {
      if (!counts) continue;
      exported.push([{ signal }, counts.exported]);
      dropped.push([{ signal, reason: 'export_failed' }, counts.dropped.export_failed]);
      dropped.push([{ signal, reason: 'ring_overrun' }, counts.dropped.ring_overrun]);
    }
    const workers = src.workers();
    const perWorker = (value: (w: (typeof workers)[number]) => number | null): Array<[Attributes, number]> => {
      const points: Array<[Attributes, number]> = [];
      for (const w of workers) {
        const v = value(w);
        if (v !== null) points.push([{ worker: w.worker, replica: w.replica }, v]);
      }
      return points;
    };
    const cpu: Array<[Attributes, number]> = [];
    for (const w of workers) {
      cpu.push([{ worker: w.worker, replica: w.replica, mode: 'user' }, w.cpuUserSeconds]);
      cpu.push([{ worker: w.worker, replica: w.replica, mode: 'system' }, w.cpuSystemSeconds]);
    }
    const stateOps: Array<[Attributes, number]> = [];
    const stateBytes: Array<[Attributes, number]> = [];
    const queueJobs: Array<[Attributes, number]> = [];
    const queueDepth: Array<[Attributes, number]> = [];
    for (const w of workers) {
      const who = { worker: w.worker, replica: w.replica };
      if (w.state) {
        for (const f of STATE_FIELDS) if (f !== 'set_bytes') stateOps.push([{ ...who, op: f.slice(0, -1) }, w.state[f]]);
        stateBytes.push([who, w.state.set_bytes]);
      }
      for (const q of w.queues) {
        for (const e of QUEUE_EVENTS) queueJobs.push([{ ...who, queue: q.queue, event: e }, q[e]]);
        for (const st of QUEUE_STATES) queueDepth.push([{ ...who, queue: q.queue, state: st }, q[st]]);
      }
    }
    const metrics: MetricData[] = [
      sum('svc.engine.calls', '{call}', 'Calls that ended, by function id (bounded: _other) and status.', calls),
      {
        descriptor: { name: 'svc.engine.call.duration', unit: 's', description: 'Call latency in the engine, from dispatch to its end, by function id.', valueType: ValueType.DOUBLE },
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints: durations,
      },
      sum('svc.engine.errors', '{call}', 'Calls that ended with an error or were refused, by error code.', [...src.calls.errorCounts()].map(([code, n]) => [{ code }, n])),
      sum('svc.engine.call_refusals', '{call}', 'Calls refused before they started.', [[{}, src.calls.refusals]]),
      gauge('svc.engine.calls_in_flight', '{call}', 'Calls in flight.', [[{}, inFlight.calls]]),
      gauge('svc.engine.in_flight_bytes', 'By', 'Bytes of the frames of the calls in flight.', [[{}, inFlight.bytes]]),
      gauge('svc.engine.connections', '{connection}', 'Open connections by kind.', [
        [{ kind: 'worker' }, c.worker],
        [{ kind: 'client' }, c.client],
        [{ kind: 'telemetry' }, c.telemetry],
      ]),
      gauge('svc.engine.functions', '{function}', 'Function ids registered.', [[{}, src.functions()]]),
      sum('svc.engine.frames_received', '{frame}', 'WebSocket frames received from peers.', [[{}, traffic.framesIn]]),
      sum('svc.engine.frames_sent', '{frame}', 'WebSocket frames sent to peers.', [[{}, traffic.framesOut]]),
      sum('svc.engine.received_bytes', 'By', 'Bytes read from peer sockets.', [[{}, traffic.bytesIn]]),
      sum('svc.engine.sent_bytes', 'By', 'Bytes written to peer sockets.', [[{}, traffic.bytesOut]]),
      sum('svc.engine.otlp.exported', '{item}', 'Spans and log lines the OTLP export sent.', exported),
      sum('svc.engine.otlp.dropped', '{item}', 'Spans and log lines the OTLP export dropped.', dropped),
      sum('svc.worker.cpu.time', 's', 'CPU time of each worker process, as it reports it, by mode (user, system).', cpu),
      gauge('svc.worker.memory.rss', 'By', 'Resident memory of each worker process.', perWorker((w) => w.rssBytes)),
      gauge('svc.worker.heap.used', 'By', 'Heap in use of each worker process (Node.js workers).', perWorker((w) => w.heapUsedBytes)),
      gauge('svc.worker.event_loop.lag', 's', 'Mean event-loop lag of each worker over its last report interval.', perWorker((w) => w.eventLoopLagMeanSeconds)),
      gauge('svc.worker.event_loop.lag_max', 's', 'Largest event-loop lag of each worker over its last report interval.', perWorker((w) => w.eventLoopLagMaxSeconds)),
      sum('svc.state.operations', '{operation}', 'svc-state operations served, by instance and op.', stateOps),
      sum('svc.state.set_bytes', 'By', 'JSON bytes of the values svc-state stored with state::set.', stateBytes),
      sum('svc.queue.jobs', '{job}', 'svc-queue jobs by instance, queue and event (enqueued, completed, retried, dead_lettered).', queueJobs),
      gauge('svc.queue.depth', '{job}', 'svc-queue jobs held now, by queue and state (waiting, delayed, running, dlq).', queueDepth),
    ];
    return Promise.resolve({ resourceMetrics: { resource: this.resource, scopeMetrics: [{ scope: { name: 'svc-engine', version: ENGINE_VERSION }, metrics }] }, errors: [] });
  }
}

/**
 * A MeterProvider whose periodic reader exports the engine's metrics every `exportIntervalMs` with
 * the official OTLP metric exporter of the protocol (endpoint and headers as the traces'; what
 * they leave out it reads from OTEL_EXPORTER_OTLP_[METRICS_]* itself). Shut it down to stop.
 */
export function startMetricExport(o: TelemetryOptions, src: EngineMetricSources, resource: Resource, startedAtMs: number, exportIntervalMs: number): MeterProvider {
  const exporter = o.protocol === 'grpc' ? new GrpcMetricExporter(grpcExporterOptions(o)) : new ProtobufMetricExporter(httpExporterOptions(o, 'v1/metrics'));
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: exportIntervalMs,
    exportTimeoutMillis: Math.min(exportIntervalMs, 30_000),
    metricProducers: [new EngineMetricProducer(src, resource, startedAtMs)],
  });
  return new MeterProvider({ resource, readers: [reader] });
}
