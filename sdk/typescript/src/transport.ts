import type WebSocket from 'ws';

/**
 * Write coalescing for a `ws` socket: frames sent during one event-loop turn leave in few syscalls.
 * Each `ws.send` otherwise costs a write of its own, which dominates at high call rates
 * (bench/RESULTS.md measures the difference). Shared by the engine and the SDK.
 *
 * Adaptive: a socket that was sent at most one frame in its previous turn (one call in flight) has
 * its first frame of a turn written at once, so a lone frame pays no extra latency; from the second
 * frame of the same turn on, the underlying net.Socket is corked (ws keeps it in `_socket`;
 * cork/uncork nest, so ws's own per-frame cork inside `send` is harmless) and uncorked in
 * `setImmediate`, after the current batch of I/O callbacks has run. A socket that was sent several
 * frames in its previous turn is busy: it is corked from its first frame, so a busy turn costs one
 * write instead of two (the lone first write also split the peer's batch in two).
 */
type Corkable = { cork(): void; uncork(): void; destroyed?: boolean };

/** Per-socket state, kept on the socket object (no Map lookup per frame). */
interface Coalesced extends Corkable {
  [TURN]?: number;
  [FRAMES]?: number;
  [BUSY]?: boolean;
  [CORKED]?: boolean;
}
const TURN = Symbol('svc.turn');
const FRAMES = Symbol('svc.frames');
const BUSY = Symbol('svc.busy');
const CORKED = Symbol('svc.corked');

/** Sockets written to during this turn. */
let touched: Coalesced[] = [];
let turn = 1;
let scheduled = false;

function endTurn(): void {
  scheduled = false;
  turn++;
  // Swap first: an uncork may synchronously trigger more sends, which start a new turn.
  const sockets = touched;
  touched = [];
  for (const s of sockets) {
    s[BUSY] = s[FRAMES]! > 1;
    s[FRAMES] = 0;
    if (s[CORKED]) {
      s[CORKED] = false;
      if (!s.destroyed) s.uncork();
    }
  }
}

export function sendCoalesced(ws: WebSocket, text: string): void {
  const sock = (ws as unknown as { _socket?: Coalesced })._socket;
  if (sock) {
    if (sock[TURN] !== turn) {
      sock[TURN] = turn;
      sock[FRAMES] = 1;
      touched.push(sock);
      if (!scheduled) {
        scheduled = true;
        setImmediate(endTurn);
      }
      if (sock[BUSY]) {
        sock.cork();
        sock[CORKED] = true;
      }
    } else {
      sock[FRAMES]!++;
      if (!sock[CORKED]) {
        sock.cork();
        sock[CORKED] = true;
      }
    }
  }
  ws.send(text);
}

/** UTF-8 byte length, exact only when it might exceed `limit` (the common small frame skips the scan). */
export function exceedsBytes(text: string, limit: number): number | false {
  if (text.length * 3 <= limit) return false;
  const n = Buffer.byteLength(text, 'utf8');
  return n > limit ? n : false;
}
