import type { WebSocket } from 'ws';
import type { EngineOptions } from './options.js';
import type { Session } from './session.js';

/**
 * What peers make the engine hold in their sockets' buffers, both ways, checked on a timer (every
 * 20–250 ms: not per frame, so the call path stays as it was, and a buffer grows at most a tick's
 * worth past its bound). `close` ends a peer: its calls end as on any disconnect.
 */
export type ClosePeer = (s: Session, code: number, reason: string, why: string) => void;

/**
 * Slow consumers (as NATS names them): a peer that does not read what the engine writes to it
 * makes the engine hold it. One whose unsent bytes stay over max_send_buffer_bytes for
 * slow_consumer_ms, or reach four times that, is closed.
 */
export function closeSlowConsumers(sessions: Iterable<Session>, opts: EngineOptions, close: ClosePeer): void {
  const limit = opts.maxSendBufferBytes;
  const now = Date.now();
  for (const s of sessions) {
    const bytes = s.buffered;
    if (bytes <= limit) {
      s.slowSince = 0;
      continue;
    }
    if (s.slowSince === 0) s.slowSince = now;
    const ms = now - s.slowSince;
    if (ms < opts.slowConsumerMs && bytes <= 4 * limit) continue;
    close(s, 1008, 'slow consumer', `slow consumer: ${bytes} bytes not read for ${ms} ms (engine.limits.max_send_buffer_bytes = ${limit}, slow_consumer_ms = ${opts.slowConsumerMs})`);
  }
}

/**
 * Bytes of the message `ws` is in the middle of receiving, as its receiver holds them (ws
 * internals, read on a timer, never per frame): the lengths the frames' headers declared so far (the
 * fragments held, and the frame under way counted whole: what the peer committed to send), or the
 * bytes buffered when more. 0 between messages.
 */
export function receivingOf(ws: WebSocket): number {
  const r = (ws as unknown as { _receiver?: { _totalPayloadLength?: number; _bufferedBytes?: number } })._receiver;
  return r === undefined ? 0 : Math.max(r._totalPayloadLength ?? 0, r._bufferedBytes ?? 0);
}

/**
 * Frames peers have begun and not finished sending, all sockets together (workers' and `/otel`),
 * at most max_partial_frame_bytes. ws holds a message until its last byte (up to four times
 * max_frame_bytes), and a peer sending one in fragments answers pings between them: before, twelve
 * connections holding 60 MiB each kept 630 MiB in the engine for as long as they liked. Over the
 * budget, the sockets with the largest unfinished messages are refused (`refuse`: told why, closed
 * 1013) until it holds again: the largest are the likeliest abuse, and a peer retrying later is served.
 */
export function closeOverPartialFrames<T>(peers: Iterable<T>, socketOf: (p: T) => WebSocket, limit: number, refuse: (p: T, why: string) => void): void {
  let total = 0;
  let partial: Array<{ p: T; bytes: number }> | null = null;
  for (const p of peers) {
    const bytes = receivingOf(socketOf(p));
    if (bytes === 0) continue;
    total += bytes;
    (partial ??= []).push({ p, bytes });
  }
  if (partial === null || total <= limit) return;
  partial.sort((a, b) => b.bytes - a.bytes);
  for (const { p, bytes } of partial) {
    if (total <= limit) return;
    refuse(p, `The frames peers have begun and not finished sending hold ${total} bytes (engine.limits.max_partial_frame_bytes = ${limit}); this connection's unfinished message holds ${bytes}: retry later`);
    total -= bytes;
  }
}

/** `a` then `b`, without copying either. */
export function* both<A, B>(a: Iterable<A>, b: Iterable<B>): Iterable<A | B> {
  yield* a;
  yield* b;
}
