import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { WebSocket } from 'ws';
import type { Peer } from './peer.js';

/**
 * Channels (iii's streaming primitive, docs/protocol.md "Channels"): a one-way pipe of binary and
 * text frames between two WebSockets, the writer's and the reader's, that the engine relays. They
 * are a separate path from calls: nothing here touches the call path.
 *
 * Backpressure: what the engine holds for a channel (frames queued before the reader opened, plus
 * frames handed to the reader's socket and not yet written to the kernel) is bounded by a window
 * in bytes and in frames, and what all channels hold together by an engine-wide budget
 * (ChannelBudget). A frame is counted before it is read: the engine stops reading the writer's
 * socket (ws `pause()`) as soon as one more frame of the largest size could overrun either bound,
 * so TCP slows the writer; it resumes once the reader has taken half of the window and the
 * budget has room for a frame again.
 */

/** What `engine::channels::create` answers, and what a worker passes to another in a payload. */
export interface ChannelRef {
  channel_id: string;
  access_key: string;
  direction: 'read' | 'write';
}

export interface ChannelLimits {
  /** Bytes the engine holds per channel before it stops reading the writer. */
  windowBytes: number;
  /** The largest frame a channel socket takes: what one more read may add. */
  maxFrameBytes: number;
  /** A reader with bytes pending that takes none of them for this long is dropped (`channel_reader_lost`). */
  readerStallMs: number;
  /** A side not opened within this ends the channel (`channel_expired`). */
  openTimeoutMs: number;
  /** Channels one peer may have created and not yet ended. */
  maxPerWorker: number;
  /** Cluster mode: how long a relay waits for the engine holding a channel to answer its upgrade (channel-proxy.ts). */
  handshakeTimeoutMs: number;
}

/**
 * How a channel ends other than by its writer finishing, as the reason of the close its sockets get
 * (`<code>: <message>`), and why an upgrade onto one is refused (docs/errors.md, Channels).
 */
export type ChannelErrorCode =
  | 'channel_expired'
  | 'channel_owner_left'
  | 'channel_owner_closed'
  | 'channel_writer_lost'
  | 'channel_reader_closed'
  | 'channel_reader_lost'
  | 'channel_wrong_direction'
  | 'channel_key_invalid'
  | 'channel_in_use'
  | 'channel_not_found'
  | 'invalid_channel_ref'
  | 'shutting_down';

/** Close code of a channel that ended other than by its writer finishing; the reason starts with the error code. */
export const CHANNEL_ABORT_CLOSE = 1011;

/** iii's `buffer_size`: frames in the window (default 64, at most 1024). */
export const DEFAULT_CHANNEL_FRAMES = 64;
export const MAX_CHANNEL_FRAMES = 1024;

type Side = 'read' | 'write';

/**
 * Whether `held` (of `max`) is full: one more frame of `frame` bytes could take it over `max`.
 * Never full when empty, so a bound smaller than a frame still lets one frame through at a time.
 */
export function wouldOverrun(held: number, max: number, frame: number): boolean {
  return held > 0 && held + frame > max;
}

/** Where a full bound opens again: half of it, and room for a frame. */
export function reopensAt(max: number, frame: number): number {
  return Math.max(0, Math.min(max / 2, max - frame));
}

/**
 * The bytes all channels hold together (engine.limits.max_channel_bytes), which it never exceeds:
 * a writer is read only while one more frame of the largest size fits. Channels with no reader
 * yet (whose bytes only wait) may fill half of it; the other half is kept for channels being read,
 * so writers that nobody reads cannot stall the streams that flow. Held writers are paused, never
 * dropped: they resume as readers take bytes (or the waiting channels expire).
 */
export class ChannelBudget {
  held = 0;
  /** 0: room for every writer; 1: only for channels with a reader; 2: for none. */
  private level = 0;
  constructor(
    readonly maxBytes: number,
    private readonly frameBytes: number,
    private readonly onChange: () => void,
  ) {}

  /** Whether a writer may be read now; `read`: its channel has a reader. */
  admits(read: boolean): boolean {
    return this.level === 0 || (this.level === 1 && read);
  }

  charge(n: number): void {
    this.held += n;
    this.update();
  }

  release(n: number): void {
    this.held -= n;
    this.update();
  }

  private update(): void {
    const level = wouldOverrun(this.held, this.maxBytes, this.frameBytes) ? 2 : wouldOverrun(this.held, this.maxBytes / 2, this.frameBytes) ? 1 : 0;
    if (level === this.level) return;
    this.level = level;
    this.onChange();
  }
}

export class Channel {
  private readonly keys: Record<Side, Buffer> = { read: randomBytes(32), write: randomBytes(32) };
  /** A ref is spent once opened: a second socket with it is refused. */
  private readonly used: Record<Side, boolean> = { read: false, write: false };
  private writer: WebSocket | null = null;
  private reader: WebSocket | null = null;
  private readonly queue: Array<{ data: Buffer; binary: boolean }> = [];
  private heldBytes = 0;
  private heldFrames = 0;
  /** The writer's socket is paused (its window or the engine-wide budget is full). */
  private paused = false;
  /** When the writer's socket was last resumed: its pong waits behind the bytes it queued meanwhile. */
  private resumedAt = 0;
  private writerDone = false;
  /** When the reader last took bytes (a send completed), or when it started waiting. */
  private readerProgressAt = Date.now();
  /** Some bytes went to the reader's socket: from then on its silence may be a pause, not a loss. */
  private readerFed = false;
  ended = false;
  /** Ends the channel when it fires: a side not opened in time, or its owner gone for good. */
  private openTimer: NodeJS.Timeout | null;

  constructor(
    /** Unique; in cluster mode it starts with the engine's node id (channel-endpoint.ts). */
    readonly id: string,
    readonly owner: Peer,
    private readonly maxFrames: number,
    private readonly limits: ChannelLimits,
    private readonly budget: ChannelBudget,
    private readonly onEnd: (c: Channel) => void,
  ) {
    this.openTimer = setTimeout(
      () => this.abort('channel_expired', `channel ${this.id}: a side did not open within ${limits.openTimeoutMs} ms (engine.limits.channel_open_timeout_ms)`),
      limits.openTimeoutMs,
    );
    this.openTimer.unref();
  }

  /** End with `code` after `ms` unless it ends before (its owner left: channel-endpoint.ts). */
  endAfter(ms: number, code: ChannelErrorCode, message: string): void {
    if (this.ended || this.openTimer) return;
    this.openTimer = setTimeout(() => this.abort(code, message), ms);
    this.openTimer.unref();
  }

  ref(direction: Side): ChannelRef {
    return { channel_id: this.id, access_key: this.keys[direction].toString('base64url'), direction };
  }

  /** Why `key` may not open `side` now, or null. The key is compared in constant time. */
  refusal(side: Side, key: string): { status: number; code: ChannelErrorCode; message: string } | null {
    const given = Buffer.from(key, 'base64url');
    const mine = this.keys[side];
    if (given.length !== mine.length || !timingSafeEqual(given, mine)) {
      return { status: 403, code: 'channel_key_invalid', message: `The key presented does not open the ${side} side of channel ${this.id}` };
    }
    if (this.used[side] || this.ended) return { status: 409, code: 'channel_in_use', message: `The ${side} side of channel ${this.id} was already opened` };
    return null;
  }

  get opened(): boolean {
    return this.used.read && this.used.write;
  }

  attach(side: Side, ws: WebSocket): void {
    this.used[side] = true;
    if (this.opened && this.openTimer) {
      clearTimeout(this.openTimer);
      this.openTimer = null;
    }
    ws.on('error', () => {
      /* 'close' follows */
    });
    if (side === 'write') {
      this.writer = ws;
      ws.on('message', (data: Buffer, isBinary) => this.fromWriter(data, isBinary));
      this.updatePause();
      ws.on('close', (code) => this.writerClosed(code));
    } else {
      this.reader = ws;
      // A reader sends nothing: data from it is a protocol error, not something to relay or hold.
      ws.on('message', () => ws.close(1008, 'channel_wrong_direction: the read side of a channel sends nothing'));
      ws.on('close', () => this.readerClosed());
      this.flush();
      this.updatePause();
    }
  }

  private fromWriter(data: Buffer, binary: boolean): void {
    if (this.ended || this.writerDone) return;
    if (this.reader && this.queue.length === 0) this.relay(data, binary);
    else {
      this.queue.push({ data, binary });
      this.hold(data.length);
    }
    this.updatePause();
  }

  private hold(n: number): void {
    // The reader's stall is measured from when it first had something to take.
    if (this.heldBytes === 0) this.readerProgressAt = Date.now();
    this.heldBytes += n;
    this.heldFrames++;
    this.budget.charge(n);
  }

  /** The window could be overrun by one more frame (in bytes or frames). */
  private get windowFull(): boolean {
    return wouldOverrun(this.heldBytes, this.limits.windowBytes, this.limits.maxFrameBytes) || this.heldFrames >= this.maxFrames;
  }

  /**
   * Pause the writer while its window or the budget is full; resume once the window is back
   * under half and the budget has room (called on every change of either).
   */
  updatePause(): void {
    if (!this.writer || this.ended) return;
    const budgetRoom = this.budget.admits(this.reader !== null);
    if (!this.paused) {
      if (this.windowFull || !budgetRoom) {
        this.paused = true;
        this.writer.pause();
      }
      return;
    }
    const windowOpen = this.heldBytes <= reopensAt(this.limits.windowBytes, this.limits.maxFrameBytes) && this.heldFrames <= this.maxFrames / 2;
    if (windowOpen && budgetRoom) {
      this.paused = false;
      this.resumedAt = Date.now();
      this.writer.resume();
    }
  }

  /** Hand a frame to the reader's socket; it stays counted until ws has written it. */
  private relay(data: Buffer, binary: boolean, counted = false): void {
    if (!counted) this.hold(data.length);
    this.reader!.send(data, { binary }, () => {
      this.readerFed = true;
      this.heldBytes -= data.length;
      this.heldFrames--;
      this.readerProgressAt = Date.now();
      this.budget.release(data.length);
      this.updatePause();
    });
  }

  private flush(): void {
    if (!this.reader) return;
    for (const f of this.queue.splice(0)) this.relay(f.data, f.binary, true);
    if (this.writerDone) this.finish();
  }

  private writerClosed(code: number): void {
    this.writer = null;
    if (this.ended) return;
    // 1000 (and 1005, a close without a code) is the writer finishing; anything else is it failing.
    if (code !== 1000 && code !== 1005) {
      this.abort('channel_writer_lost', `channel ${this.id}: the writer's connection ended (code ${code}) before it finished`);
      return;
    }
    this.writerDone = true;
    if (this.reader) this.finish();
  }

  private readerClosed(): void {
    this.reader = null;
    if (this.ended) return;
    if (this.writerDone && this.queue.length === 0) this.end();
    else this.abort('channel_reader_closed', `channel ${this.id}: the reader closed the channel`);
  }

  /** The writer finished and everything is handed to the reader: the reader's close follows its data. */
  private finish(): void {
    this.reader?.close(1000, 'stream_complete');
    this.end();
  }

  /** End it for both sides with `code` (both are told: close CHANNEL_ABORT_CLOSE, reason `code: message`). */
  abort(code: ChannelErrorCode, message: string): void {
    if (this.ended) return;
    const reason = `${code}: ${message}`;
    // A close reason is at most 123 bytes.
    const shown = Buffer.from(reason).subarray(0, 123).toString().replace(/\uFFFD$/, '');
    for (const ws of [this.writer, this.reader]) {
      if (!ws) continue;
      ws.close(CHANNEL_ABORT_CLOSE, shown);
      // A socket we stopped reading cannot take part in a close handshake: cut it after a moment.
      setTimeout(() => ws.terminate(), 1000).unref();
    }
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.openTimer) clearTimeout(this.openTimer);
    this.openTimer = null;
    // Frames never handed to the reader go now; those handed over are released by their send callbacks.
    for (const f of this.queue.splice(0)) {
      this.heldBytes -= f.data.length;
      this.heldFrames--;
      this.budget.release(f.data.length);
    }
    if (this.paused) this.writer?.resume();
    this.onEnd(this);
  }

  /** The sockets open on it (liveness pings, shutdown). */
  sockets(): WebSocket[] {
    return [this.writer, this.reader].filter((w): w is WebSocket => w !== null);
  }

  /**
   * How a socket that did not answer the last ping is judged. A writer we paused cannot answer
   * (we do not read it), nor can one resumed less than readerStallMs ago whose pong still waits
   * behind the bytes it queued while paused (any frame counts as an answer: channel-endpoint.ts).
   * A reader with bytes pending is being slowed by its own backpressure (an SDK pauses its
   * socket), so it is given readerStallMs without taking anything before it goes. So is one that
   * took bytes less than readerStallMs ago with none pending here: what it has not read yet may all
   * sit in the kernel's socket buffers (on loopback several MB), where the engine cannot see it,
   * and a reader pausing its socket meanwhile answers no ping. Judging that by the engine's own
   * buffer alone cut slow readers whenever the writer idled (or was paused) at a ping.
   */
  silence(ws: WebSocket): 'excused' | 'lost' {
    if (ws === this.writer) return this.paused || Date.now() - this.resumedAt < this.limits.readerStallMs ? 'excused' : 'lost';
    if ((this.heldBytes > 0 || this.readerFed) && Date.now() - this.readerProgressAt < this.limits.readerStallMs) return 'excused';
    return 'lost';
  }

  /** A side that stopped answering: the channel ends with the code that says which. */
  lost(ws: WebSocket): void {
    if (ws === this.reader) {
      this.abort('channel_reader_lost', `channel ${this.id}: the reader stopped answering pings and taking data`);
    } else ws.terminate();
  }
}
