import { randomFillSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type WebSocket from 'ws';

/**
 * Write coalescing for a `ws` socket: frames sent during one event-loop turn leave in few syscalls.
 * Each `ws.send` otherwise costs a write of its own, which dominates at high call rates
 * (the coalescing relay of `npm run bench` measures the difference). Shared by the engine and the SDK.
 *
 * Adaptive: the first frame to a socket in an event-loop turn is written at once, so a lone frame
 * (one call in flight) pays no extra latency; from the second frame on, the underlying net.Socket is
 * corked (ws keeps it in `_socket`; cork/uncork nest, so ws's own per-frame cork inside `send` is
 * harmless) and uncorked in `setImmediate`, once the event loop has run every callback of this turn,
 * so that frames to one socket from many reads of one turn (an engine answering many workers' calls
 * to one caller) share a write.
 *
 * Which sockets this turn has written to is forgotten when the event loop has waited for I/O since
 * (libuv's idle time, `performance.nodeTiming.idleTime`, has grown: one native read per frame) or by
 * the immediate that uncorks. An immediate scheduled per frame only to forget them (Node's check
 * phase, a native call to ref its handle and one to unref it) cost ~1.5 µs a frame at one call in
 * flight, all of it on the call's path, because the peer woken by the write runs on this core only
 * once this process sleeps (bench/RESULTS.md, fourteenth session). Only a socket that is corked
 * costs an immediate. A loop that never waits (always busy) forgets them at each turn's immediate.
 *
 * Nothing may wait for a turn's end that never comes. Node's own `setImmediate` is taken at
 * load: a test framework's fake timers (sinon, jest, vitest) replace the global, and under them a
 * corked socket would keep its frames until the test ticked the fake clock, where a plain
 * `ws.send` writes at once. And the process's 'exit' uncorks every corked
 * socket, and no socket is corked from then on, since no immediate runs after it: frames sent before
 * `process.exit()`, or in an 'exit' listener, leave as they would with `ws.send`. (Hooked at load,
 * not at the first cork: a listener added while 'exit' is emitted would not be called.)
 *
 * A long turn does not hold everything back to its end: every FLUSH_FRAMES frames (or FLUSH_BYTES
 * buffered) the socket is uncorked and corked again, so the peer starts on the first frames of a
 * large batch while this process works through the rest. Without it the processes of a call take
 * turns at high load instead of overlapping on the cores (measured: bench/RESULTS.md, "write
 * coalescing flushes long turns part-way").
 */
type Corkable = { cork(): void; uncork(): void; destroyed?: boolean; writableLength?: number; write(chunk: Buffer): boolean };

/**
 * What this module reads of a `ws` (8.x) WebSocket besides its public API: the net.Socket under it,
 * whether it is the server's end, its extensions, and its sender's state (0: nothing queued).
 */
type WsInternals = {
  _socket?: Corkable | null;
  _isServer?: boolean;
  _extensions?: Record<string, unknown>;
  _sender?: { _state?: number } | null;
  readyState: number;
};

/** A corked socket is flushed (and corked again) after this many frames of one turn... */
export const FLUSH_FRAMES = 16;
/** ...or once this many bytes wait in it. */
export const FLUSH_BYTES = 16 * 1024;

/**
 * Sockets written to during this turn (see above): nearly always one, kept apart from the Set,
 * which only holds the others, so that one call in flight touches no Set (a Set's clear() makes a
 * new table).
 */
let touchedFirst: Corkable | null = null;
const touchedMore = new Set<Corkable>();
/** The event loop's idle time (ms) when `touchedFirst` was written to: grown since, the loop has waited. */
let touchedAtIdle = 0;
const timing = performance.nodeTiming;
/** Corked ones, with the frames written since their last flush (uncorked by `endTurn`). */
const corked = new Map<Corkable, number>();
let turnEndScheduled = false;
/** Set by the process's 'exit': no immediate runs after it, so nothing is corked any more. */
let exiting = false;

// Node's own, before a test framework's fake timers can replace the global (see above).
const setImmediateOfNode = setImmediate;

function forgetTouched(): void {
  touchedFirst = null;
  if (touchedMore.size !== 0) touchedMore.clear();
}

function endTurn(): void {
  turnEndScheduled = false;
  forgetTouched();
  // Copy first: an uncork may synchronously trigger more sends, which start a new turn.
  const sockets = [...corked.keys()];
  corked.clear();
  for (const s of sockets) if (!s.destroyed) s.uncork();
}

process.on('exit', () => {
  exiting = true;
  endTurn();
});

/** Masking keys for the client's frames, drawn from the system's CSPRNG a pool at a time (as `ws` does). */
const maskPool = Buffer.alloc(8192);
let maskAt = maskPool.length;

/**
 * One text frame written as one Buffer on an open socket whose sender has nothing queued (no
 * compression: the engine and the SDK turn it off): the frame the `ws` sender would write, without
 * its per-frame options object, its header written apart from the payload, and the string's UTF-8
 * encoding inside `writev` (bench/RESULTS.md, thirteenth session). Anything else goes through `ws.send`.
 */
function sendText(ws: WebSocket, sock: Corkable | undefined, text: string): void {
  const raw = ws as unknown as WsInternals;
  if (sock === undefined || raw.readyState !== 1 || raw._sender?._state !== 0 || raw._extensions?.['permessage-deflate'] !== undefined) {
    ws.send(text);
    return;
  }
  sock.write(textFrame(text, raw._isServer !== true));
}

/**
 * A WebSocket text frame (RFC 6455 §5.2), FIN set: a client's (`masked`) with a fresh random key,
 * as the RFC requires of every frame a client sends; a server's unmasked.
 */
export function textFrame(text: string, masked: boolean): Buffer {
  const n = Buffer.byteLength(text);
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const head = 2 + lengthBytes + (masked ? 4 : 0);
  const frame = Buffer.allocUnsafe(head + n);
  frame[0] = 0x81; // FIN, text
  frame[1] = (masked ? 0x80 : 0) | (lengthBytes === 0 ? n : lengthBytes === 2 ? 126 : 127);
  if (lengthBytes === 2) frame.writeUInt16BE(n, 2);
  else if (lengthBytes === 8) {
    frame.writeUInt32BE(Math.floor(n / 0x1_0000_0000), 2);
    frame.writeUInt32BE(n >>> 0, 6);
  }
  frame.write(text, head, 'utf8');
  if (masked) {
    if (maskAt === maskPool.length) {
      randomFillSync(maskPool);
      maskAt = 0;
    }
    maskPool.copy(frame, head - 4, maskAt, maskAt + 4);
    maskAt += 4;
    maskInPlace(frame, head, head + n);
  }
  return frame;
}

/**
 * XOR `frame[start, end)` with the 4-byte key just before it (RFC 6455 §5.3), in place. A function of
 * its own, so that a long frame's loop is optimised apart from textFrame.
 */
function maskInPlace(frame: Buffer, start: number, end: number): void {
  const m0 = frame[start - 4]!;
  const m1 = frame[start - 3]!;
  const m2 = frame[start - 2]!;
  const m3 = frame[start - 1]!;
  let i = start;
  for (; i + 3 < end; i += 4) {
    frame[i] = frame[i]! ^ m0;
    frame[i + 1] = frame[i + 1]! ^ m1;
    frame[i + 2] = frame[i + 2]! ^ m2;
    frame[i + 3] = frame[i + 3]! ^ m3;
  }
  // At most three bytes are left, masked with the key's first three.
  if (i < end) frame[i] = frame[i]! ^ m0;
  if (i + 1 < end) frame[i + 1] = frame[i + 1]! ^ m1;
  if (i + 2 < end) frame[i + 2] = frame[i + 2]! ^ m2;
}

/**
 * Every length class and mask remainder built at load, with type feedback, so that the first frame
 * of 64 KiB or more (rare) does not deoptimise the optimised frame writer (src/engine/hot/README.md,
 * "Priming at load"; probed by `npm run bench:jit`). Only short frames are masked here: masking a
 * long one would compile textFrame on stack (OSR) in the middle of its loop, and that code, entered
 * again by every later frame's loop, deoptimised on each (bench/RESULTS.md, thirteenth session).
 */
function primeTextFrame(): void {
  const short = ['', 'a', 'ab', 'abc', 'abcd', 'x'.repeat(130), '☃'.repeat(50)];
  // 65,536 bytes: the smallest frame with an 8-byte length.
  const long = 'x'.repeat(65_536);
  for (let i = 0; i < 16; i++) {
    for (const t of short) for (const masked of [false, true]) textFrame(t, masked);
    textFrame(long, false);
  }
}
primeTextFrame();

export function sendCoalesced(ws: WebSocket, text: string): void {
  const sock = (ws as unknown as WsInternals)._socket;
  // null until a client connects: taken for a socket, it would match `touchedFirst`'s null.
  if (sock == null) {
    sendText(ws, undefined, text);
    return;
  }
  let idle = 0;
  if (touchedFirst !== null) {
    idle = timing.idleTime;
    if (idle !== touchedAtIdle) forgetTouched();
  }
  let frames = corked.size === 0 ? undefined : corked.get(sock);
  if (frames !== undefined || sock === touchedFirst || (touchedMore.size !== 0 && touchedMore.has(sock))) {
    if (frames === undefined) {
      if (exiting) {
        sendText(ws, sock, text);
        return;
      }
      sock.cork();
      // Known as corked before the write, which may throw (a text that is no string): a socket corked
      // and not in `corked` would stay corked for good, every later frame with it.
      corked.set(sock, 0);
      frames = 0;
      if (!turnEndScheduled) {
        turnEndScheduled = true;
        setImmediateOfNode(endTurn);
      }
    }
    sendText(ws, sock, text);
    if (++frames >= FLUSH_FRAMES || (sock.writableLength ?? 0) >= FLUSH_BYTES) {
      sock.uncork();
      sock.cork();
      frames = 0;
    }
    corked.set(sock, frames);
    return;
  }
  // The turn's first frame to this socket is written before the bookkeeping: at one call in
  // flight that is the frame a peer waits for.
  sendText(ws, sock, text);
  if (touchedFirst === null) {
    touchedFirst = sock;
    touchedAtIdle = idle === 0 ? timing.idleTime : idle;
  } else touchedMore.add(sock);
}

/** UTF-8 byte length, exact only when it might exceed `limit` (the common small frame skips the scan). */
export function exceedsBytes(text: string, limit: number): number | false {
  if (text.length * 3 <= limit) return false;
  const n = Buffer.byteLength(text, 'utf8');
  return n > limit ? n : false;
}
