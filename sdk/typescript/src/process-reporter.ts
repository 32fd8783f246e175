import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Connection } from './connection.js';
import { REPORT_WORKER_FUNCTION } from './protocol/constants.js';
import type { InvokeFunctionMsg } from './protocol/messages.js';

/**
 * Tells the engine about this process every `intervalMs` (engine::workers::report): CPU time, RSS,
 * V8 heap and event-loop lag, which the console's Workers page and the engine's /metrics show. One
 * small fire-and-forget frame per interval, off the call path; the lag comes from Node's own
 * sampler (perf_hooks.monitorEventLoopDelay, a libuv timer), reset after each report so that each
 * report covers its own interval. Nothing is sent while the worker is not connected.
 */
export class ProcessReporter {
  private timer: NodeJS.Timeout | undefined;
  private lag: IntervalHistogram | undefined;
  /** More fields for each report (Worker.reportAlso): svc-state's and svc-queue's counters. */
  extra: (() => Record<string, unknown> | Promise<Record<string, unknown>>) | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly connected: () => boolean,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.timer) return;
    this.lag = monitorEventLoopDelay({ resolution: 20 });
    this.lag.enable();
    this.timer = setInterval(this.send, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.lag?.disable();
    this.lag = undefined;
  }

  /** Report now (after connecting, so the console has numbers at once); the interval goes on. */
  readonly send = (): void => {
    if (!this.connected()) return;
    const cpu = process.cpuUsage();
    const mem = process.memoryUsage();
    const lag = this.lag;
    // The histogram's values are nanoseconds and include the sampling resolution itself (20 ms).
    const lagMs = (ns: number): number | null => (lag && lag.count > 0 && Number.isFinite(ns) ? Math.max(0, ns / 1e6 - 20) : null);
    const sample = {
      cpu_user_seconds: cpu.user / 1e6,
      cpu_system_seconds: cpu.system / 1e6,
      rss_bytes: mem.rss,
      heap_used_bytes: mem.heapUsed,
      heap_total_bytes: mem.heapTotal,
      event_loop_lag_mean_ms: lag ? lagMs(lag.mean) : null,
      event_loop_lag_max_ms: lag ? lagMs(lag.max) : null,
      interval_ms: this.intervalMs,
    };
    lag?.reset();
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
