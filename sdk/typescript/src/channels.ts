import { Readable, Writable } from 'node:stream';
import WebSocket from 'ws';
import { SvcError } from './errors.js';

/**
 * Channels: streams of binary and text frames between two workers through the engine
 * (docs/protocol.md "Channels"). `engine::channels::create` gives a pair of refs; a ref travels in
 * any payload or result, and whoever holds it opens its side here: ChannelWriter is a Node
 * `Writable`, ChannelReader a Node `Readable` (binary chunks) that also emits `text` frames.
 */
export interface ChannelRef {
  channel_id: string;
  access_key: string;
  direction: 'read' | 'write';
}

export function isChannelRef(v: unknown): v is ChannelRef {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return typeof r.channel_id === 'string' && typeof r.access_key === 'string' && (r.direction === 'read' || r.direction === 'write');
}

/** iii's SDKs send 64 KiB frames; the engine takes up to 1 MiB (engine.limits.max_channel_frame_bytes). */
export const CHANNEL_FRAME_BYTES = 64 * 1024;
/** Unsent bytes a writer lets its socket hold before a write waits (Writable backpressure). */
const WRITER_HIGH_WATER = 1024 * 1024;

export interface ChannelSocketOptions {
  /** The engine's address (`ws://host:port`, its query kept: `?token=`). */
  url: string;
  /** Handshake headers: the worker's `Authorization`. */
  headers?: Record<string, string>;
}

/** `ws://host:port/ws/channels/<id>?key=…&dir=…`, keeping a query already on the engine's URL. */
export function channelUrl(engineUrl: string, ref: ChannelRef): string {
  const u = new URL(engineUrl);
  u.pathname = `/ws/channels/${encodeURIComponent(ref.channel_id)}`;
  u.searchParams.set('key', ref.access_key);
  u.searchParams.set('dir', ref.direction);
  return u.toString();
}

/** How the engine ended a channel: close 1000 is its end, any other code an error named in the reason. */
function closeError(code: number, reason: Buffer | string): SvcError {
  const text = reason.toString();
  const m = /^([a-z_]+): (.*)$/s.exec(text);
  if (m) return new SvcError(m[1]!, m[2]!);
  return new SvcError('channel_closed', `The channel's socket closed with code ${code}${text ? ` (${text})` : ''}`);
}

function openSocket(ref: ChannelRef, opts: ChannelSocketOptions, fail: (e: SvcError) => void): WebSocket {
  const ws = new WebSocket(channelUrl(opts.url, ref), { perMessageDeflate: false, handshakeTimeout: 10_000, ...(opts.headers ? { headers: opts.headers } : {}) });
  // The engine refuses an upgrade with an HTTP status and {error:{code,message}}: say its code.
  ws.on('unexpected-response', (_req, res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      if (body.length < 4096) body += c;
    });
    res.on('end', () => {
      let err = new SvcError('channel_refused', `The engine refused to open channel ${ref.channel_id}: HTTP ${res.statusCode}`);
      try {
        const e = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
        if (typeof e?.code === 'string' && typeof e.message === 'string') err = new SvcError(e.code, e.message);
      } catch {
        /* not JSON: the status says it */
      }
      fail(err);
      ws.terminate();
    });
  });
  ws.on('error', (e) => fail(e instanceof SvcError ? e : new SvcError('channel_closed', `Channel ${ref.channel_id}: ${e.message}`)));
  return ws;
}

/**
 * A channel failing from its far side (an HTTP client hanging up on a streaming route, the other
 * worker gone) fails this side's writes or reads: `errored` holds the error, `for await` and
 * `pipeline` throw it, a write's callback gets an error. It must not also end the process when the handler attached no
 * 'error' listener (Node's default for an unheard 'error'): then any client disconnecting
 * mid-stream would kill the worker and every call it runs. Node's http.ServerResponse does the same.
 */
function hearErrors(stream: Readable | Writable): void {
  stream.on('error', () => {});
}

/** The write side: a Node `Writable` of bytes (sent as binary frames of 64 KiB) plus `sendText`. */
export class ChannelWriter extends Writable {
  private readonly ws: WebSocket;
  private failure: SvcError | null = null;

  constructor(readonly ref: ChannelRef, opts: ChannelSocketOptions) {
    super({ highWaterMark: CHANNEL_FRAME_BYTES });
    hearErrors(this);
    if (ref.direction !== 'write') throw new SvcError('invalid_channel_ref', `Channel ${ref.channel_id}: a writer needs the ref with direction "write", got "${ref.direction}"`);
    this.ws = openSocket(ref, opts, (e) => this.fail(e));
    this.ws.on('close', (code, reason) => {
      if (code !== 1000) this.fail(closeError(code, reason));
    });
  }

  private fail(e: SvcError): void {
    this.failure ??= e;
    if (!this.destroyed) this.destroy(e);
  }

  private opened(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.CONNECTING) return reject(this.failure ?? new SvcError('channel_closed', `Channel ${this.ref.channel_id} is closed`));
      this.ws.once('open', () => resolve());
      this.ws.once('close', () => reject(this.failure ?? new SvcError('channel_closed', `Channel ${this.ref.channel_id} closed before it opened`)));
    });
  }

  /** A text frame (iii's `sendMessage`: control frames such as `set_status` are text). */
  async sendText(text: string): Promise<void> {
    await this.opened();
    await new Promise<void>((resolve, reject) => this.ws.send(text, { binary: false }, (err) => (err ? reject(err) : resolve())));
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk;
    this.opened().then(() => {
      let last: Promise<void> = Promise.resolve();
      for (let at = 0; at < buf.length; at += CHANNEL_FRAME_BYTES) {
        const part = buf.subarray(at, at + CHANNEL_FRAME_BYTES);
        last = new Promise((resolve, reject) => this.ws.send(part, { binary: true }, (err) => (err ? reject(err) : resolve())));
        // A failed send also closes the socket, which fails this stream; the rejection itself is
        // only awaited for the last frame, and only over WRITER_HIGH_WATER.
        last.catch(() => {});
      }
      // The socket holds up to WRITER_HIGH_WATER unsent; beyond it the write waits for the kernel,
      // which the engine stops reading when its reader is slow: that is how backpressure reaches us.
      if (this.ws.bufferedAmount <= WRITER_HIGH_WATER) callback();
      else last.then(() => callback(), callback);
    }, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.opened().then(() => {
      this.ws.once('close', (code, reason) => callback(code === 1000 ? null : closeError(code, reason)));
      this.ws.close(1000, 'stream_complete');
    }, callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Ended without finishing: the reader is told the stream failed, not that it is complete.
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(4000, 'writer_aborted');
    else if (this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
    callback(error);
  }
}

/** The read side: a Node `Readable` of the binary frames; text frames are `text` events. */
export class ChannelReader extends Readable {
  private readonly ws: WebSocket;

  constructor(readonly ref: ChannelRef, opts: ChannelSocketOptions) {
    super();
    hearErrors(this);
    if (ref.direction !== 'read') throw new SvcError('invalid_channel_ref', `Channel ${ref.channel_id}: a reader needs the ref with direction "read", got "${ref.direction}"`);
    this.ws = openSocket(ref, opts, (e) => {
      if (!this.destroyed) this.destroy(e);
    });
    this.ws.on('message', (data: Buffer, isBinary) => {
      if (this.destroyed) return;
      if (!isBinary) {
        this.emit('text', data.toString('utf8'));
        return;
      }
      // Not reading the socket is what slows the writer: the engine's window fills and it stops reading it.
      if (!this.push(data)) this.ws.pause();
    });
    this.ws.on('close', (code, reason) => {
      if (code === 1000) this.push(null);
      else if (!this.destroyed) this.destroy(closeError(code, reason));
    });
  }

  override _read(): void {
    if (this.ws.isPaused) this.ws.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // A socket paused by backpressure would never read the engine's close reply: read (and drop) on.
    if (this.ws.isPaused) this.ws.resume();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000, 'reader_closed');
    else if (this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
    callback(error);
  }

  /** Everything to its end, as one Buffer (for small streams). */
  async readAll(): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const c of this) parts.push(c as Buffer);
    return Buffer.concat(parts);
  }
}
