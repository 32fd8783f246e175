import type { Resource } from '@opentelemetry/resources';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import { SamplingDecision, TraceIdRatioBasedSampler, type ReadableSpan } from '@opentelemetry/sdk-trace';
import type { LogRing } from '../hot/log-ring.js';
import type { SpanRing } from '../hot/span-ring.js';
import type { LogEntry } from '../logs.js';
import type { EngineMetricSources } from '../metrics/prometheus.js';
import type { Span } from '../traces.js';
import { createLogExporter, toLogRecord } from './otlp-logs.js';
import { startMetricExport } from './otlp-metrics.js';
import { createSpanExporter, engineResource, toReadableSpan } from './otlp-spans.js';
import { RingExport, type ExportCounts } from './ring-export.js';
import type { TelemetryOptions } from './telemetry-options.js';

/**
 * engine.telemetry: the span ring and the log ring exported over OTLP (ring-export.ts), with one
 * resource and one sampling rule: a span, and a log line with a trace id, are exported when their
 * trace is sampled (sampling_ratio, by trace id); lines without a trace always are.
 */
export class EngineTelemetry {
  readonly spans: RingExport<Span, ReadableSpan>;
  readonly logs: RingExport<LogEntry, ReadableLogRecord> | null;
  private meters: MeterProvider | null = null;
  private readonly resource: Resource;

  constructor(
    private readonly opts: TelemetryOptions,
    traces: SpanRing,
    logRing: LogRing,
    runId: string,
    warn: (message: string) => void,
  ) {
    const resource = engineResource(opts.serviceName, runId);
    this.resource = resource;
    const sampler = opts.samplingRatio >= 1 ? null : new TraceIdRatioBasedSampler(opts.samplingRatio);
    const sampled = (traceId: string): boolean => sampler === null || sampler.shouldSample(undefined, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
    const ids = traces.ids;
    // The engine's invocation ids and span ids are made from the same number (ids.ts).
    const spanIdOf = (invocationId: string): string | undefined =>
      invocationId.length === ids.invocationPrefix.length + 12 && invocationId.startsWith(ids.invocationPrefix) ? ids.spanPrefix + invocationId.slice(-12) : undefined;
    this.spans = new RingExport('span', traces, opts, (s: Span) => (sampled(s.trace_id) ? toReadableSpan(s, resource) : null), createSpanExporter(opts), warn);
    this.logs = opts.logs
      ? new RingExport('log line', logRing, opts, (e: LogEntry) => (e.trace_id === undefined || sampled(e.trace_id) ? toLogRecord(e, resource, spanIdOf) : null), createLogExporter(opts), warn)
      : null;
  }

  /** Start the exports; `metrics`: what /metrics reads (null: the metrics are not exported). */
  start(metrics: EngineMetricSources | null, startedAtMs: number): void {
    this.spans.start();
    this.logs?.start();
    if (metrics && this.opts.metrics) this.meters = startMetricExport(this.opts, metrics, this.resource, startedAtMs, this.opts.metricsIntervalMs);
  }

  /** Export the metrics now (tests; the reader does it every metrics_interval_ms). */
  async flushMetrics(): Promise<void> {
    await this.meters?.forceFlush();
  }

  /** Read and export what is new now (tests; the timers do it every export_interval_ms). */
  async flush(): Promise<void> {
    await Promise.all([this.spans.tick(), this.logs?.tick()]);
  }

  counts(): { spans: ExportCounts; logs: ExportCounts | null } {
    return { spans: this.spans.counts, logs: this.logs?.counts ?? null };
  }

  async stop(): Promise<void> {
    // The metrics' last export, within 2 s: a collector that is down must not hold the shutdown.
    await Promise.all([this.spans.stop(), this.logs?.stop(), this.meters?.shutdown({ timeoutMillis: 2000 }).catch(() => undefined)]);
  }
}
