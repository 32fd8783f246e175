import type WebSocket from 'ws';

/**
 * Write coalescing for a `ws` socket: frames sent during one event-loop turn leave in few syscalls.
 * Each `ws.send` otherwise costs a write of its own, which dominates at high call rates
 * (the coalescing relay of `npm run bench` measures the difference). Shared by the engine and the SDK.
 *
 * Adaptive: the first frame of a turn is written at once, so a lone frame (one call in flight)
 * pays no extra latency; from the second frame of the same turn on, the underlying net.Socket is
 * corked (ws keeps it in `_socket`; cork/uncork nest, so ws's own per-frame cork inside `send` is
 * harmless) and uncorked in `setImmediate`, after the current batch of I/O callbacks has run.
 *
 * A long turn does not hold everything back to its end: every FLUSH_FRAMES frames (or FLUSH_BYTES
 * buffered) the socket is uncorked and corked again, so the peer starts on the first frames of a
 * large batch while this process works through the rest. Without it the processes of a call take
 * turns at high load instead of overlapping on the cores (measured: bench/RESULTS.md, "write
 * coalescing flushes long turns part-way").
 */
type Corkable = { cork(): void; uncork(): void; destroyed?: boolean; writableLength?: number };

/** A corked socket is flushed (and corked again) after this many frames of one turn... */
export const FLUSH_FRAMES = 16;
/** ...or once this many bytes wait in it. */
export const FLUSH_BYTES = 16 * 1024;

/** Sockets written to during this turn. */
const touched = new Set<Corkable>();
/** Corked ones among them, with the frames written since their last flush. */
const corked = new Map<Corkable, number>();
let scheduled = false;

function endTurn(): void {
  scheduled = false;
  touched.clear();
  if (corked.size === 0) return;
  // Copy first: an uncork may synchronously trigger more sends, which start a new turn.
  const sockets = [...corked.keys()];
  corked.clear();
  for (const s of sockets) if (!s.destroyed) s.uncork();
}

export function sendCoalesced(ws: WebSocket, text: string): void {
  const sock = (ws as unknown as { _socket?: Corkable })._socket;
  if (sock && touched.has(sock)) {
    let frames = corked.get(sock);
    if (frames === undefined) {
      sock.cork();
      frames = 0;
    }
    ws.send(text);
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
  ws.send(text);
  if (sock) {
    touched.add(sock);
    if (!scheduled) {
      scheduled = true;
      setImmediate(endTurn);
    }
  }
}

/** UTF-8 byte length, exact only when it might exceed `limit` (the common small frame skips the scan). */
export function exceedsBytes(text: string, limit: number): number | false {
  if (text.length * 3 <= limit) return false;
  const n = Buffer.byteLength(text, 'utf8');
  return n > limit ? n : false;
}
