import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import type { Call } from './call.js';
import { sendCoalesced } from './hot/shared-with-sdk.js';
import { Peer } from './peer.js';

/**
 * A peer connected to this engine over a WebSocket: a worker, the CLI, the console. Frames to it
 * are written to its socket, coalesced per event-loop turn (hot/README.md).
 */
export class Session extends Peer {
  readonly node = undefined;
  readonly reattachToken = randomUUID();
  readonly connectedAt = Date.now();
  /** Answered the last ping (or sent anything) since the previous liveness tick. */
  alive = true;
  /** Since when (ms) its send buffer has been over the slow-consumer limit; 0: it is not. */
  slowSince = 0;
  /** Frames received from it and sent to it (engine.metrics); bytes are read from `socket`. */
  framesIn = 0;
  framesOut = 0;

  constructor(
    private readonly ws: WebSocket,
    readonly ip: string,
    /** The TCP socket under the WebSocket: its byte counts (bytesRead, bytesWritten) feed /metrics. */
    readonly socket: Socket | null = null,
  ) {
    super();
  }

  /** Bytes written to this peer and not yet handed to the kernel (ws's bufferedAmount). */
  get buffered(): number {
    return this.ws.bufferedAmount;
  }

  /** Its socket (socket-buffers.ts reads what its receiver holds). */
  get webSocket(): WebSocket {
    return this.ws;
  }

  get open(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  sendText(text: string): void {
    if (!this.open) return;
    this.framesOut++;
    sendCoalesced(this.ws, text);
  }

  /** The frame is all a worker needs: the engine keeps the call's deadline. */
  sendCall(_call: Call, frame: string): void {
    this.sendText(frame);
  }

  ping(): void {
    if (!this.open) return;
    try {
      this.ws.ping();
    } catch {
      /* closing already; the close handler cleans up */
    }
  }

  close(code: number, reason: string): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(code, reason);
  }

  terminate(): void {
    this.ws.terminate();
  }

  /** What `engine::workers::list` shows. */
  describe(): Record<string, unknown> {
    return {
      worker_id: this.id,
      name: this.name,
      role: this.role,
      namespace: this.namespace,
      runtime: this.metadata.runtime ?? 'unknown',
      version: this.metadata.version ?? null,
      pid: this.metadata.pid ?? null,
      os: this.metadata.os ?? null,
      ip: this.ip,
      status: this.open ? 'connected' : 'disconnected',
      connected_at: new Date(this.connectedAt).toISOString(),
      uptime_ms: Date.now() - this.connectedAt,
      functions: [...this.functions],
      trigger_types: [...this.triggerTypes],
      in_flight: this.incoming.size,
      features: [...this.features],
      token: this.access.token ? this.access.name : null,
      // Verified by its run secret, unlike `name` and `pid`, which the peer reports itself.
      supervised: this.identity?.kind === 'instance' ? { worker: this.identity.worker, replica: this.identity.replica } : null,
      metadata: this.metadata,
      // What the worker last said of its process (engine::workers::report); null until it reports.
      process: this.processReport,
    };
  }
}
