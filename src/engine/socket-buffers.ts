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
 * Frames peers have begun and not finished sending, all peers together, at most
 * max_partial_frame_bytes. ws holds a message until its last byte (up to four times
 * max_frame_bytes), and a peer sending one in fragments answers pings between them: before, twelve
 * connections holding 60 MiB each kept 630 MiB in the engine for as long as they liked. Over the
 * budget, the peers with the largest unfinished messages are closed (1013, `overloaded`) until it
 * holds again: the largest are the likeliest abuse, and a peer retrying later is served.
 */
export function closeOverPartialFrames(sessions: Iterable<Session>, opts: EngineOptions, close: ClosePeer): void {
  const limit = opts.maxPartialFrameBytes;
  let total = 0;
  let partial: Array<{ s: Session; bytes: number }> | null = null;
  for (const s of sessions) {
    const bytes = s.receiving;
    if (bytes === 0) continue;
    total += bytes;
    (partial ??= []).push({ s, bytes });
  }
  if (partial === null || total <= limit) return;
  partial.sort((a, b) => b.bytes - a.bytes);
  for (const { s, bytes } of partial) {
    if (total <= limit) return;
    const why = `The frames peers have begun and not finished sending hold ${total} bytes (engine.limits.max_partial_frame_bytes = ${limit}); this connection's unfinished message holds ${bytes}: retry later`;
    s.sendError({ code: 'overloaded', message: why });
    close(s, 1013, 'overloaded: engine.limits.max_partial_frame_bytes', why);
    total -= bytes;
  }
}
