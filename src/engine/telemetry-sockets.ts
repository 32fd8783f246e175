import type { WebSocket } from 'ws';
import { storeTelemetryFrame } from './otlp-logs.js';

type Sinks = Parameters<typeof storeTelemetryFrame>[1];
type Limits = Parameters<typeof storeTelemetryFrame>[2];

/**
 * iii SDKs stream OTLP telemetry on a second socket (`/otel`), never a worker: its log lines and
 * spans are stored (otlp-logs.ts, otlp-spans-in.ts), metrics drained. Each socket is a connection
 * like any other: counted against max_connections and dropped when it stops answering pings.
 */
export class TelemetrySockets {
  /** true: answered since the last ping. */
  private readonly sockets = new Map<WebSocket, boolean>();

  constructor(
    private readonly sinks: Sinks,
    /** Read per frame: the engine's limits as they are now. */
    private readonly limits: () => Limits,
  ) {}

  get size(): number {
    return this.sockets.size;
  }

  get all(): Iterable<WebSocket> {
    return this.sockets.keys();
  }

  accept(ws: WebSocket): void {
    this.sockets.set(ws, true);
    const alive = (): void => {
      if (this.sockets.has(ws)) this.sockets.set(ws, true);
    };
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      alive();
      if (isBinary) storeTelemetryFrame(data, this.sinks, this.limits());
    });
    ws.on('pong', alive);
    ws.on('error', () => {});
    ws.on('close', () => this.sockets.delete(ws));
  }

  /** One liveness round: a socket that did not answer the last ping is dropped, the others pinged. */
  ping(): void {
    for (const [ws, alive] of this.sockets) {
      if (!alive) {
        this.sockets.delete(ws);
        ws.terminate();
        continue;
      }
      this.sockets.set(ws, false);
      try {
        ws.ping();
      } catch {
        /* closing already */
      }
    }
  }

  closeAll(code: number, reason: string): void {
    for (const ws of this.sockets.keys()) ws.close(code, reason);
  }
}
