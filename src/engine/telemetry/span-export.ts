import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { SamplingDecision, TraceIdRatioBasedSampler, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace';
import type { SpanRing } from '../hot/span-ring.js';
import { toReadableSpan } from './otlp-spans.js';
import type { TelemetryOptions } from './telemetry-options.js';

/** What the export did, for /metrics. */
export interface SpanExportCounts {
  exported: number;
  /** Spans not exported: their export failed, or the ring overwrote them before they were read. */
  dropped: { export_failed: number; ring_overrun: number };
}

const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;
const WARN_EVERY_MS = 30_000;

/**
 * OTLP export of the engine's spans, off the call path. Calls record their spans in the span ring
 * as they always do (hot/span-ring.ts); this reads the ring from a position of its own on a timer,
 * turns the spans it samples into OpenTelemetry spans and hands them to the official exporter, one
 * batch (max_batch_spans) in flight at a time.
 *
 * The ring is the export queue: nothing else holds spans waiting for export, so memory stays what
 * engine.trace_buffer_size and max_trace_bytes allow whatever the collector does. While the
 * collector is down, a failed batch is dropped and counted, and the next attempt waits (1 s
 * doubling to 30 s) without reading or converting anything: calls do not pay for an outage. Spans
 * the ring overwrote in the meantime are counted as dropped when reading resumes. Failures are
 * reported by `warn` at most every 30 s.
 */
export class SpanExport {
  private position: number;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private retryAt = 0;
  private backoffMs = 0;
  private lastWarnAt = -Infinity;
  private failedSinceWarn = 0;
  private readonly sampler: TraceIdRatioBasedSampler | null;
  readonly counts: SpanExportCounts = { exported: 0, dropped: { export_failed: 0, ring_overrun: 0 } };
  private stopped = false;

  constructor(
    private readonly ring: SpanRing,
    private readonly opts: TelemetryOptions,
    private readonly resource: Resource,
    private readonly exporter: SpanExporter,
    private readonly warn: (message: string) => void,
  ) {
    // Spans recorded before export started are not sent.
    this.position = ring.recorded;
    this.sampler = opts.samplingRatio >= 1 ? null : new TraceIdRatioBasedSampler(opts.samplingRatio);
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.opts.exportIntervalMs);
    this.timer.unref();
  }

  /** Read and export what the ring holds beyond our position, a batch at a time; resolves when done or on a failure. */
  tick(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (this.stopped || Date.now() < this.retryAt || this.position >= this.ring.recorded) return Promise.resolve();
    this.inFlight = this.drain().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private async drain(): Promise<void> {
    while (!this.stopped && this.position < this.ring.recorded) {
      const { spans, next, missed } = this.ring.readFrom(this.position, this.opts.maxBatchSpans);
      this.position = next;
      this.counts.dropped.ring_overrun += missed;
      const batch: ReadableSpan[] = [];
      for (const s of spans) if (this.sampled(s.trace_id)) batch.push(toReadableSpan(s, this.resource));
      if (batch.length === 0) continue;
      const result = await this.send(batch);
      if (result.code === ExportResultCode.SUCCESS) {
        this.counts.exported += batch.length;
        this.backoffMs = 0;
        continue;
      }
      this.counts.dropped.export_failed += batch.length;
      this.failedSinceWarn += batch.length;
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs === 0 ? FIRST_BACKOFF_MS : this.backoffMs * 2);
      this.retryAt = Date.now() + this.backoffMs;
      this.warnFailure(result.error);
      return;
    }
  }

  private sampled(traceId: string): boolean {
    return this.sampler === null || this.sampler.shouldSample(undefined, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED;
  }

  private send(batch: ReadableSpan[]): Promise<ExportResult> {
    return new Promise((resolve) => {
      try {
        this.exporter.export(batch, resolve);
      } catch (e) {
        resolve({ code: ExportResultCode.FAILED, error: e as Error });
      }
    });
  }

  private warnFailure(error: Error | undefined): void {
    const now = Date.now();
    if (now - this.lastWarnAt < WARN_EVERY_MS) return;
    this.lastWarnAt = now;
    this.warn(
      `OTLP span export failed (${error?.message ?? 'unknown error'}): ${this.failedSinceWarn} span(s) dropped since the last warning, ${this.counts.dropped.export_failed} in all; next attempt in ${this.backoffMs} ms (engine.telemetry)`,
    );
    this.failedSinceWarn = 0;
  }

  /** Stop reading; one last export of what is left (unless the collector is failing), then the exporter is shut down. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight;
    if (Date.now() >= this.retryAt) await this.tick();
    this.stopped = true;
    await this.exporter.shutdown().catch(() => undefined);
  }
}
