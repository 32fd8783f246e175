import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { TelemetryOptions } from './telemetry-options.js';

/** A ring the export reads from a position of its own (hot/span-ring.ts, hot/log-ring.ts). */
export interface ExportSource<T> {
  /** Items recorded so far: the position after the newest. */
  readonly recorded: number;
  /** Up to `max` items from position `from` on, oldest first; `missed`: those the ring no longer holds. */
  readFrom(from: number, max: number): { items: T[]; next: number; missed: number };
}

/** One of the official OTLP exporters (spans or log records). */
export interface OtlpExporter<R> {
  export(batch: R[], done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

/** What an export did, for /metrics. */
export interface ExportCounts {
  exported: number;
  /** Not exported: their export failed, or the ring overwrote them before they were read. */
  dropped: { export_failed: number; ring_overrun: number };
}

const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;
const WARN_EVERY_MS = 30_000;

/**
 * OTLP export of one of the engine's rings (spans, log lines), off the call path. Calls record
 * spans and lines in the rings as they always do; this reads a ring from a position of its own on
 * a timer, converts what `convert` keeps (null: sampled out) and hands it to the official
 * exporter, one batch (max_batch_spans) in flight at a time.
 *
 * The ring is the export queue: nothing else holds items waiting for export, so memory stays what
 * the ring's bounds allow whatever the collector does. While the collector is down, a failed batch
 * is dropped and counted, and the next attempt waits (1 s doubling to 30 s) without reading or
 * converting anything: calls do not pay for an outage. Items the ring overwrote in the meantime
 * are counted as dropped when reading resumes. Failures are reported by `warn` at most every 30 s.
 */
export class RingExport<T, R> {
  private position: number;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private retryAt = 0;
  private backoffMs = 0;
  private lastWarnAt = -Infinity;
  private failedSinceWarn = 0;
  readonly counts: ExportCounts = { exported: 0, dropped: { export_failed: 0, ring_overrun: 0 } };
  private stopped = false;

  constructor(
    /** What is exported, for the warning: "span", "log line". */
    private readonly what: string,
    private readonly ring: ExportSource<T>,
    private readonly opts: TelemetryOptions,
    private readonly convert: (item: T) => R | null,
    private readonly exporter: OtlpExporter<R>,
    private readonly warn: (message: string) => void,
  ) {
    // What was recorded before export started is not sent.
    this.position = ring.recorded;
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
      const { items, next, missed } = this.ring.readFrom(this.position, this.opts.maxBatchSpans);
      this.position = next;
      this.counts.dropped.ring_overrun += missed;
      const batch: R[] = [];
      for (const item of items) {
        const r = this.convert(item);
        if (r !== null) batch.push(r);
      }
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

  private send(batch: R[]): Promise<ExportResult> {
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
      `OTLP ${this.what} export failed (${error?.message ?? 'unknown error'}): ${this.failedSinceWarn} ${this.what}(s) dropped since the last warning, ${this.counts.dropped.export_failed} in all; next attempt in ${this.backoffMs} ms (engine.telemetry)`,
    );
    this.failedSinceWarn = 0;
  }

  /**
   * Stop reading: what is left is exported (unless the collector is failing) for at most
   * STOP_BUDGET_MS, then the exporter is shut down within as long: a collector that accepts and
   * never answers must not hold the engine's shutdown.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await within(Date.now() >= this.retryAt ? this.tick() : (this.inFlight ?? Promise.resolve()), STOP_BUDGET_MS);
    this.stopped = true;
    await within(this.exporter.shutdown().catch(() => undefined), STOP_BUDGET_MS);
  }
}

const STOP_BUDGET_MS = 2000;

/** `p`, or nothing once `ms` have passed. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
