import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { decodeFrame, MAX_FRAME_DEPTH, type Message } from './protocol.js';
import { STALE_WORKER_CLOSE } from './supervised.js';
import { sendCoalesced } from './transport.js';

/** WebSocket close code the engine uses when it refuses a connection's token. */
export const UNAUTHORIZED_CLOSE = 4401;

export type ConnectionState = 'connecting' | 'connected' | 'disconnected' | 'closed';

export interface ReconnectOptions {
  /** First delay after a close. */
  initialDelayMs: number;
  /** Cap of the exponential backoff. */
  maxDelayMs: number;
  factor: number;
  /** Fraction of the delay randomised either way (0.3 = ±30 %), so a fleet does not reconnect in step. */
  jitter: number;
}

export const DEFAULT_RECONNECT: ReconnectOptions = { initialDelayMs: 200, maxDelayMs: 30_000, factor: 2, jitter: 0.3 };

export interface ConnectionOptions {
  reconnect: ReconnectOptions;
  maxFrameBytes: number;
  /** WebSocket ping period; a peer silent for two periods is dropped and we reconnect. */
  pingIntervalMs: number;
  /** Upgrade request headers; a function is asked again at every connect. */
  headers?: Record<string, string> | (() => Record<string, string>);
  /** Close code 4410 (`stale_worker`) ends the connection for good (default) rather than backing off. */
  staleIsFinal?: boolean;
}

/**
 * Engine addresses: one URL, a comma-separated list (`SVC_URL=ws://a:49134,ws://b:49134`) or an
 * array. Several are the engines of one cluster (docs/cluster.md): the connection moves on to the
 * next one whenever the current one closes or cannot be reached.
 */
export function parseEngineUrls(input: string | readonly string[]): string[] {
  const list = (typeof input === 'string' ? input.split(',') : input.flatMap((u) => u.split(','))).map((u) => u.trim()).filter((u) => u.length > 0);
  if (list.length === 0) throw new TypeError(`No engine URL given (got ${JSON.stringify(input)})`);
  return list;
}

export function backoffDelay(attempt: number, o: ReconnectOptions): number {
  const base = Math.min(o.maxDelayMs, o.initialDelayMs * Math.pow(o.factor, attempt));
  const spread = base * o.jitter;
  return Math.max(0, Math.round(base - spread + Math.random() * 2 * spread));
}

/**
 * One logical connection to the engine that survives the socket: reconnects after every close
 * (clean ones included: a proxy closing with 1000/1001 is not the user asking us to stop) until
 * `close()` is called. Emits `open` on each new socket, `message` per decoded frame, `down` when a
 * socket is lost, and `state` on every state change.
 */
export class Connection extends EventEmitter {
  private ws: WebSocket | null = null;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private alive = true;
  private _state: ConnectionState = 'disconnected';
  /** Every engine address given; `url` is the one in use. */
  readonly urls: string[];
  private index = 0;

  constructor(
    url: string | readonly string[],
    private readonly opts: ConnectionOptions,
  ) {
    super();
    this.urls = parseEngineUrls(url);
  }

  get url(): string {
    return this.urls[this.index]!;
  }

  get state(): ConnectionState {
    return this._state;
  }

  start(): void {
    if (this._state === 'closed') return;
    this.connect();
  }

  private setState(s: ConnectionState): void {
    if (this._state === s) return;
    this._state = s;
    this.emit('state', s);
  }

  private connect(): void {
    this.setState('connecting');
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url, {
        maxPayload: this.opts.maxFrameBytes * 4,
        perMessageDeflate: false,
        handshakeTimeout: 10_000,
        ...(this.opts.headers ? { headers: typeof this.opts.headers === 'function' ? this.opts.headers() : this.opts.headers } : {}),
      });
    } catch (err) {
      // A malformed URL never becomes valid by retrying.
      this.emit('fatal', err);
      this.close();
      return;
    }
    this.ws = ws;
    ws.on('open', () => {
      this.attempt = 0;
      this.alive = true;
      this.setState('connected');
      this.startPing(ws);
      this.emit('open');
    });
    ws.on('message', (data, isBinary) => {
      this.alive = true;
      // Binary frames are tolerated (iii peers may send telemetry); only text carries protocol.
      if (isBinary) return;
      // The engine accepts frames MAX_FRAME_DEPTH deep, and its listings nest what it stored a few
      // levels deeper (a worker's metadata inside {result:{workers:[{metadata}]}}): an answer of
      // the engine must never be refused here, while the cap still bounds what our code walks.
      const decoded = decodeFrame(data.toString(), 2 * MAX_FRAME_DEPTH);
      if (decoded.ok) this.emit('message', decoded.msg as Message);
      else this.emit('protocol-error', decoded.error);
    });
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', (err) => {
      // 'close' always follows; the error is only reported.
      this.emit('socket-error', err);
    });
    ws.on('close', (code, reason) => {
      this.stopPing();
      if (this.ws === ws) this.ws = null;
      const wasConnected = this._state === 'connected';
      if (this._state !== 'closed') {
        this.setState('disconnected');
        this.emit('down', { code, reason: reason.toString(), wasConnected });
        // Refused for presenting another engine run's secret: the engine that started this
        // worker is gone, and no engine will ever accept that secret again. Stop for good.
        if (code === STALE_WORKER_CLOSE) {
          this.emit('stale', reason.toString());
          if (this.opts.staleIsFinal !== false) {
            this.setState('closed');
            return;
          }
          this.attempt = Math.max(this.attempt, 30);
        }
        // Refused for its token (4401): retrying at once cannot help; keep trying slowly, as a
        // token may be added to the engine's config and the engine restarted.
        if (code === UNAUTHORIZED_CLOSE) {
          this.emit('unauthorized', reason.toString());
          this.attempt = Math.max(this.attempt, 30);
        }
        // With several engines (a cluster), try the next one: the one that just closed or could
        // not be reached may be gone for good.
        if (this.urls.length > 1) this.index = (this.index + 1) % this.urls.length;
        this.scheduleReconnect();
      }
    });
  }

  private scheduleReconnect(): void {
    if (this._state === 'closed' || this.retryTimer) return;
    const delay = backoffDelay(this.attempt++, this.opts.reconnect);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this._state !== 'closed') this.connect();
    }, delay);
  }

  private startPing(ws: WebSocket): void {
    this.stopPing();
    this.pingTimer = setInterval(() => {
      if (!this.alive) {
        ws.terminate();
        return;
      }
      this.alive = false;
      try {
        ws.ping();
      } catch {
        /* socket already closing; 'close' handles it */
      }
    }, this.opts.pingIntervalMs);
    this.pingTimer.unref();
  }

  private stopPing(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
  }

  /** Send one frame now. Returns false when no socket is open (the caller decides what that means). */
  sendText(text: string): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    sendCoalesced(ws, text);
    return true;
  }

  send(msg: Message): boolean {
    return this.sendText(JSON.stringify(msg));
  }

  /** Drop the current socket (as a network failure would); reconnect follows. Used by tests and by liveness. */
  drop(): void {
    this.ws?.terminate();
  }

  /** Stop for good: no reconnect. Resolves once the socket has closed. */
  close(code = 1000): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.stopPing();
    const ws = this.ws;
    this.setState('closed');
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2000);
      ws.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(code);
    });
  }
}
