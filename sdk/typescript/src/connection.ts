import WebSocket from 'ws';
import { describeValue, InvocationError } from './errors.js';
import { MAX_FRAME_DEPTH, MAX_RECEIVED_FRAME_DEPTH, STALE_WORKER_CLOSE, UNAUTHORIZED_CLOSE } from './protocol/constants.js';
import { decodeFrame } from './protocol/decode.js';
import type { Message } from './protocol/messages.js';
import { exceedsBytes, sendCoalesced } from './transport.js';

export interface ReconnectOptions {
  /** First delay after a close. */
  initialDelayMs: number;
  /** Cap of the exponential backoff. */
  maxDelayMs: number;
  factor: number;
  /**
   * Share of each delay taken off at random (0.3: each delay is 70–100 % of its step), so a fleet
   * that lost its engine together does not come back in step, and the cap still holds.
   */
  jitter: number;
}

/** The Python SDK's ReconnectOptions() has the same defaults (a test compares them). */
export const DEFAULT_RECONNECT: ReconnectOptions = { initialDelayMs: 200, maxDelayMs: 30_000, factor: 2, jitter: 0.3 };

/** Attempts counted after a refusal (`unauthorized`): the backoff is then at its cap at once. */
const REFUSED_ATTEMPTS = 64;

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

/** What a Connection tells its owner (the Worker). */
export interface ConnectionHandler {
  /** A socket is being opened to `url`. */
  onConnecting(url: string): void;
  /** The socket is open: send the handshake and the replay. */
  onOpen(): void;
  onMessage(msg: Message): void;
  /** The socket closed (code 1006 when it was lost without a close frame). Unless stopped, a reconnect follows. */
  onDown(code: number, reason: string): void;
  /**
   * The engine refused this connection (close 4401 `unauthorized`, 4410 `stale_worker`); `final`:
   * no reconnect follows. Called after onDown.
   */
  onRefused(code: 'unauthorized' | 'stale_worker', reason: string, final: boolean): void;
  /** Connecting cannot ever work (a malformed URL): the connection has stopped. */
  onFatal(err: Error): void;
  /** A socket to `url` closed before it opened (nothing listens, a DNS name that does not resolve); `why` says what failed. A reconnect follows. */
  onUnreachable(url: string, why: string): void;
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

/**
 * Milliseconds before reconnect attempt `attempt` (0 for the first after a close):
 * initialDelayMs × factor^attempt, capped at maxDelayMs, less a random share of at most `jitter`.
 * The Python SDK's backoff_delay computes the same (it counts attempts from 1).
 */
export function backoffDelay(attempt: number, o: ReconnectOptions): number {
  const base = Math.min(o.maxDelayMs, o.initialDelayMs * Math.pow(o.factor, Math.min(attempt, REFUSED_ATTEMPTS)));
  return Math.max(0, Math.round(base * (1 - Math.random() * o.jitter)));
}

/**
 * One logical connection to the engine that survives the socket: reconnects after every close
 * (clean ones included: a proxy closing with 1000/1001 is not the user asking us to stop) until
 * `close()` is called or the engine refuses it for good. It knows nothing of functions or calls:
 * it tells its ConnectionHandler what happens to the socket, and sends what it is given.
 */
export class Connection {
  private ws: WebSocket | null = null;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private alive = true;
  private stopped = false;
  /** Every engine address given; `url` is the one in use. */
  readonly urls: string[];
  /**
   * The engine's `max_frame_bytes` from its `hello` on this connection (undefined until then, and
   * from an engine that does not answer `hello`). Frames are held to the smaller of it and the
   * `maxFrameBytes` option, as the Python SDK does: a frame the engine would refuse is refused here,
   * before its bytes are sent, with a message naming the call and the limit.
   */
  engineMaxFrameBytes: number | undefined;
  private index = 0;

  constructor(
    url: string | readonly string[],
    private readonly opts: ConnectionOptions,
    private readonly handler: ConnectionHandler,
  ) {
    this.urls = parseEngineUrls(url);
  }

  get url(): string {
    return this.urls[this.index]!;
  }

  /** A socket is open (the engine may not have accepted it yet). */
  get open(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** The largest frame this SDK sends: the smaller of the `maxFrameBytes` option and the engine's. */
  get maxFrameBytes(): number {
    const engine = this.engineMaxFrameBytes;
    return engine !== undefined && engine > 0 && engine < this.opts.maxFrameBytes ? engine : this.opts.maxFrameBytes;
  }

  start(): void {
    if (!this.stopped && !this.ws && !this.retryTimer) this.connect();
  }

  private connect(): void {
    this.handler.onConnecting(this.url);
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
      this.stopped = true;
      this.handler.onFatal(err as Error);
      return;
    }
    this.ws = ws;
    let opened = false;
    let failure = '';
    ws.on('open', () => {
      opened = true;
      this.attempt = 0;
      this.alive = true;
      this.startPing(ws);
      this.handler.onOpen();
    });
    ws.on('message', (data, isBinary) => {
      this.alive = true;
      // Binary frames are tolerated (iii peers may send telemetry); only text carries protocol.
      if (isBinary) return;
      // The engine's answers are never refused for their depth (MAX_RECEIVED_FRAME_DEPTH), while
      // the cap still bounds what our code walks. A frame that does not decode is dropped.
      const decoded = decodeFrame(data.toString(), MAX_RECEIVED_FRAME_DEPTH);
      if (decoded.ok) this.handler.onMessage(decoded.msg);
    });
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('error', (e: Error) => {
      // 'close' always follows and drives the reconnect; this says why a socket never opened.
      failure ||= (e as NodeJS.ErrnoException).code ?? e.message;
    });
    ws.on('close', (code, reasonBuffer) => {
      this.stopPing();
      if (this.ws === ws) this.ws = null;
      if (this.stopped) return;
      const reason = reasonBuffer.toString();
      this.handler.onDown(code, reason);
      if (!opened) this.handler.onUnreachable(this.url, failure || `closed with code ${code}`);
      if (code === STALE_WORKER_CLOSE) {
        // Refused for presenting another engine run's secret: the engine that started this
        // worker is gone, and no engine will ever accept that secret again. Stop for good.
        const final = this.opts.staleIsFinal !== false;
        if (final) this.stopped = true;
        else this.attempt = Math.max(this.attempt, REFUSED_ATTEMPTS);
        this.handler.onRefused('stale_worker', reason, final);
        if (final) return;
      } else if (code === UNAUTHORIZED_CLOSE) {
        // Refused for its token: retrying at once cannot help; keep trying slowly, as a token may
        // be added to the engine's config and the engine restarted.
        this.attempt = Math.max(this.attempt, REFUSED_ATTEMPTS);
        this.handler.onRefused('unauthorized', reason, false);
      }
      if (this.stopped) return;
      // With several engines (a cluster), try the next one: the one that just closed or could
      // not be reached may be gone for good.
      if (this.urls.length > 1) this.index = (this.index + 1) % this.urls.length;
      this.scheduleReconnect();
    });
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = backoffDelay(this.attempt++, this.opts.reconnect);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.stopped) this.connect();
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

  /**
   * `msg` as frame text. Throws InvocationError `invalid_payload` (not JSON-serialisable) or
   * `payload_too_large` (over the limit, `maxFrameBytes`), naming `functionId` when given; the message names the
   * call or result, the size and the limit.
   */
  encode(msg: Message, functionId?: string): string {
    let text: string;
    try {
      text = JSON.stringify(msg);
    } catch (e) {
      throw new InvocationError('invalid_payload', `Payload is not JSON-serializable: ${whyNotSerializable(e)}`, functionId);
    }
    const tooLarge = this.oversize(text, msg.type, 'function_id' in msg ? msg.function_id : undefined, functionId);
    if (tooLarge !== null) throw tooLarge;
    return text;
  }

  /**
   * `payload_too_large` for frame `text` (of `type`, for `frameFunctionId`) over maxFrameBytes, or
   * null. For frames built as text (protocol/frame-layout.ts) and by encode().
   */
  oversize(text: string, type: string, frameFunctionId: string | null | undefined, functionId?: string): InvocationError | null {
    const size = exceedsBytes(text, this.maxFrameBytes);
    return size === false ? null : new InvocationError('payload_too_large', this.tooLarge(type, frameFunctionId, size), functionId);
  }

  /**
   * Why a frame is not sent, naming what a user must know to act: the call (or which function's
   * result), the size, the limit and the setting it comes from.
   */
  private tooLarge(type: string, functionId: string | null | undefined, size: number): string {
    const what = type === 'invokefunction' ? `Call of ${functionId}` : type === 'invocationresult' ? `Result of ${functionId}` : `A ${type} frame`;
    const engine = this.engineMaxFrameBytes;
    // The same words as the Python SDK's (connection.py, Session._too_large), the option's name aside.
    const source =
      engine !== undefined && engine <= this.opts.maxFrameBytes
        ? "the engine's max_frame_bytes, announced at connect"
        : `registerWorker option maxFrameBytes${engine === undefined ? '' : `; the engine announced max_frame_bytes ${engine} at connect`}`;
    return `${what}: frame of ${size} bytes exceeds the limit of ${this.maxFrameBytes} bytes (${source})`;
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

  /** Drop the current socket (as a network failure would); reconnect follows. Used by tests. */
  drop(): void {
    this.ws?.terminate();
  }

  /** Stop for good: no reconnect. Resolves once the socket has closed. */
  close(code = 1000): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.stopPing();
    const ws = this.ws;
    this.ws = null;
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

/**
 * Why JSON.stringify threw, in one line. It recurses: a value nested some thousands deep overflows
 * the stack, which the engine would refuse anyway (MAX_FRAME_DEPTH); that is said rather than "call
 * stack size". V8's message for a cycle spans lines (`--> starting at object …`): one line reads
 * better in a log or the CLI.
 */
export function whyNotSerializable(e: unknown): string {
  if (e instanceof RangeError && /call stack/i.test(e.message)) return `nested too deeply to encode (the engine accepts ${MAX_FRAME_DEPTH} levels of arrays and objects)`;
  // A toJSON or a getter may throw anything (a string, null): reading `.message` of that would
  // throw again, inside the catch of Invoker.reply (ending the worker) or Caller.sendFrame.
  return e instanceof Error ? String(e.message).replace(/\s*\n\s*/g, ' ') : `threw ${describeValue(e)}`;
}
