import type { EngineOptions } from './options.js';
import type { Session } from './session.js';

export interface SessionWatchDeps {
  opts: EngineOptions;
  sessions(): Iterable<Session>;
  /** Ends a session: the engine's cleanup, with the socket terminated. */
  drop(s: Session, why: string): void;
  warn(message: string, data?: Record<string, unknown>): void;
  /** The `/otel` sockets are pinged with the sessions. */
  pingTelemetry(): void;
}

/**
 * The engine's two watches over its sessions, on timers rather than per frame: liveness (a peer
 * that answers no ping for a whole interval is dropped) and slow consumers.
 */
export class SessionWatch {
  private liveness: NodeJS.Timeout | null = null;
  private sendBuffers: NodeJS.Timeout | null = null;

  constructor(private readonly deps: SessionWatchDeps) {}

  start(): void {
    const { opts } = this.deps;
    this.liveness = setInterval(() => this.checkLiveness(), opts.pingIntervalMs);
    this.liveness.unref();
    // Not checked per frame: the call path stays as it was, and a buffer grows at most a tick's worth.
    this.sendBuffers = setInterval(() => this.checkSendBuffers(), Math.max(20, Math.min(250, opts.slowConsumerMs / 4)));
    this.sendBuffers.unref();
  }

  stop(): void {
    if (this.liveness) clearInterval(this.liveness);
    if (this.sendBuffers) clearInterval(this.sendBuffers);
  }

  private checkLiveness(): void {
    for (const s of this.deps.sessions()) {
      if (!s.alive) {
        this.deps.drop(s, 'did not answer pings');
        continue;
      }
      s.alive = false;
      s.ping();
    }
    this.deps.pingTelemetry();
  }

  /**
   * Slow consumers (as NATS names them): a peer that does not read what the engine writes to it
   * makes the engine hold it. One whose unsent bytes stay over max_send_buffer_bytes for
   * slow_consumer_ms, or reach four times that, is closed; its calls end as on any disconnect.
   */
  private checkSendBuffers(): void {
    const { maxSendBufferBytes: limit, slowConsumerMs } = this.deps.opts;
    const now = Date.now();
    for (const s of this.deps.sessions()) {
      const bytes = s.buffered;
      if (bytes <= limit) {
        s.slowSince = 0;
        continue;
      }
      if (s.slowSince === 0) s.slowSince = now;
      const ms = now - s.slowSince;
      if (ms < slowConsumerMs && bytes <= 4 * limit) continue;
      const why = `slow consumer: ${bytes} bytes not read for ${ms} ms (engine.limits.max_send_buffer_bytes = ${limit}, slow_consumer_ms = ${slowConsumerMs})`;
      this.deps.warn(`closing ${s.name}: ${why}`, { worker_id: s.id });
      s.close(1008, 'slow consumer');
      this.deps.drop(s, why);
    }
  }
}
