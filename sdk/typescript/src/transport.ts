import type WebSocket from 'ws';

/**
 * Write coalescing for a `ws` socket: frames sent during one event-loop turn leave in one
 * syscall. Each `ws.send` otherwise costs a write of its own, which dominates at high call rates
 * (bench/RESULTS.md measures the difference). Shared by the engine and the SDK.
 *
 * It corks the underlying net.Socket (ws keeps it in `_socket`; cork/uncork nest, so ws's own
 * per-frame cork inside `send` is harmless) and uncorks it in `setImmediate`, after the current
 * batch of I/O callbacks has run.
 */
type Corkable = { cork(): void; uncork(): void; destroyed?: boolean };

const pending: Corkable[] = [];
let scheduled = false;

function flushAll(): void {
  scheduled = false;
  // Swap out first: an uncork may synchronously trigger more sends.
  const sockets = pending.splice(0, pending.length);
  for (const s of sockets) {
    if (!s.destroyed) s.uncork();
  }
}

const corked = new WeakSet<Corkable>();

export function sendCoalesced(ws: WebSocket, text: string): void {
  const sock = (ws as unknown as { _socket?: Corkable })._socket;
  if (sock && !corked.has(sock)) {
    sock.cork();
    corked.add(sock);
    pending.push(sock);
    if (!scheduled) {
      scheduled = true;
      setImmediate(() => {
        for (const s of pending) corked.delete(s);
        flushAll();
      });
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
