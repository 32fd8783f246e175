import { performance } from 'node:perf_hooks';
import type { Connection } from './connection.js';
import { REPORT_WORKER_FUNCTION } from './protocol/constants.js';
import type { InvokeFunctionMsg } from './protocol/messages.js';

/**
 * Tells the engine about this process every `intervalMs` (engine::workers::report): CPU time, RSS,
 * V8 heap and event-loop lag, which the console's Workers page and the engine's /metrics show. One
 * small fire-and-forget frame per interval, off the call path. The lag is measured by a timer of
 * its own every LAG_TICK_MS, noting how much later than asked it runs (as the Python SDK does).
 * Not perf_hooks.monitorEventLoopDelay: resetting its histogram after a report also forgets the
 * delay under way, so a block that ended just before a report was lost from every report.
 * Nothing is sent while the worker is not connected.
 */
const LAG_TICK_MS = 100;

export class ProcessReporter {
  private timer: NodeJS.Timeout | undefined;
  private lagTimer: NodeJS.Timeout | undefined;
  /** Lag samples (ms) since the last report: their count, sum and largest. */
  private lagCount = 0;
  private lagSum = 0;
  private lagMax = 0;
  /** More fields for each report (Worker.reportAlso): svc-state's and svc-queue's counters. */
  extra: (() => Record<string, unknown> | Promise<Record<string, unknown>>) | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly connected: () => boolean,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(this.send, this.intervalMs);
    this.timer.unref();
    this.probeLag(performance.now() + LAG_TICK_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    clearTimeout(this.lagTimer);
    this.timer = undefined;
    this.lagTimer = undefined;
  }

  /** One lag sample: how late the timer asked for `due` ran; then the next one. */
  private probeLag(due: number): void {
    this.lagTimer = setTimeout(() => {
      const now = performance.now();
      const lag = Math.max(0, now - due);
      this.lagCount++;
      this.lagSum += lag;
      if (lag > this.lagMax) this.lagMax = lag;
      if (this.timer) this.probeLag(now + LAG_TICK_MS);
    }, LAG_TICK_MS);
    this.lagTimer.unref();
  }

  /** Report now (after connecting, so the console has numbers at once); the interval goes on. */
  readonly send = (): void => {
    if (!this.connected()) return;
    let cpu: NodeJS.CpuUsage;
    let mem: NodeJS.MemoryUsage;
    try {
      cpu = process.cpuUsage();
      mem = process.memoryUsage();
    } catch {
      // memoryUsage() reads /proc/self and throws EMFILE while every descriptor is taken (a flood
      // of connections to svc-http); thrown from this timer, it ended the worker. Skip this report.
      return;
    }
    const lagged = this.lagCount > 0;
    const sample = {
      cpu_user_seconds: cpu.user / 1e6,
      cpu_system_seconds: cpu.system / 1e6,
      rss_bytes: mem.rss,
      heap_used_bytes: mem.heapUsed,
      heap_total_bytes: mem.heapTotal,
      event_loop_lag_mean_ms: lagged ? this.lagSum / this.lagCount : null,
      event_loop_lag_max_ms: lagged ? this.lagMax : null,
      interval_ms: this.intervalMs,
    };
    this.lagCount = this.lagSum = this.lagMax = 0;
    const extra = this.extra;
    if (!extra) {
      this.write({ process: sample });
      return;
    }
    // A source that throws or rejects loses its fields for this report, not the report.
    void new Promise<Record<string, unknown>>((resolve) => resolve(extra())).then(
      (fields) => this.write({ ...fields, process: sample }),
      () => this.write({ process: sample }),
    );
  };

  private write(data: Record<string, unknown>): void {
    if (!this.connected()) return;
    const msg: InvokeFunctionMsg = { type: 'invokefunction', function_id: REPORT_WORKER_FUNCTION, action: { type: 'void' }, data };
    let text: string;
    try {
      text = this.conn.encode(msg);
    } catch {
      return; // fields JSON cannot encode, or over the frame limit: this report is skipped
    }
    this.conn.sendText(text);
  }
}
