import type { WebSocket } from 'ws';
import type { EngineOptions } from './options.js';
import { Session } from './session.js';
import { both, closeOverPartialFrames, closeSlowConsumers } from './socket-buffers.js';

export interface SessionWatchDeps {
  opts: EngineOptions;
  sessions(): Iterable<Session>;
  /** Ends a session: the engine's cleanup, with the socket terminated. */
  drop(s: Session, why: string): void;
  warn(message: string, data?: Record<string, unknown>): void;
  /** The `/otel` sockets are pinged with the sessions, and their unfinished frames count with theirs. */
  pingTelemetry(): void;
  telemetrySockets(): Iterable<WebSocket>;
}

/**
 * The engine's watches over its sessions, on timers rather than per frame: liveness (a peer that
 * answers no ping for a whole interval is dropped), and what peers make it hold in their sockets'
 * buffers (socket-buffers.ts: slow consumers, unfinished frames).
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

  private checkSendBuffers(): void {
    const { opts } = this.deps;
    closeSlowConsumers(this.deps.sessions(), opts, this.closeForBuffers);
    closeOverPartialFrames(both(this.deps.sessions(), this.deps.telemetrySockets()), (p) => (p instanceof Session ? p.webSocket : p), opts.maxPartialFrameBytes, this.refusePartial);
  }

  /** A socket over max_partial_frame_bytes (socket-buffers.ts): a worker's, or an `/otel` one. */
  private readonly refusePartial = (p: Session | WebSocket, why: string): void => {
    const reason = 'overloaded: engine.limits.max_partial_frame_bytes';
    if (p instanceof Session) {
      p.sendError({ code: 'overloaded', message: why });
      return this.closeForBuffers(p, 1013, reason, why);
    }
    this.deps.warn(`closing an /otel socket: ${why}`);
    p.close(1013, reason);
  };

  /** A peer closed for what it makes the engine hold in its socket's buffers. */
  private readonly closeForBuffers = (s: Session, code: number, reason: string, why: string): void => {
    this.deps.warn(`closing ${s.name}: ${why}`, { worker_id: s.id });
    s.close(code, reason);
    this.deps.drop(s, why);
  };
}
