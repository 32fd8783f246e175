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
 */
type Corkable = { cork(): void; uncork(): void; destroyed?: boolean };

/** Sockets written to during this turn; corked ones among them. */
const touched = new Set<Corkable>();
const corked = new Set<Corkable>();
let scheduled = false;

function endTurn(): void {
  scheduled = false;
  touched.clear();
  if (corked.size === 0) return;
  // Copy first: an uncork may synchronously trigger more sends, which start a new turn.
  const sockets = [...corked];
  corked.clear();
  for (const s of sockets) if (!s.destroyed) s.uncork();
}

export function sendCoalesced(ws: WebSocket, text: string): void {
  const sock = (ws as unknown as { _socket?: Corkable })._socket;
  if (sock && touched.has(sock)) {
    if (!corked.has(sock)) {
      sock.cork();
      corked.add(sock);
    }
    ws.send(text);
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
