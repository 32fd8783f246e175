import { randomBytes } from 'node:crypto';
import { counterTraceTail } from 'svc-sdk/internal';
import { hex12 } from './hot/hex12.js';

/**
 * The ids of a call: one number per call, from a counter under random per-run prefixes, gives its
 * invocation id (what the callee sees), its span id and, for a call that starts a trace, its trace
 * id. Unique per run and random across engines, without a crypto call per invocation (randomBytes
 * costs microseconds). Ids are handed out as numbers and rendered as text where they are sent, so
 * the in-flight tables and the span ring keep numbers, not strings. A trace id writes its number
 * mixed (counterTraceTail), so that sampling by trace id (engine.telemetry.sampling_ratio) keeps the
 * ratio asked for rather than all of one engine's traces or none.
 */

/** 2^48: counters render as 12 hex digits. At a million calls a second that is nine years. */
const COUNTER_LIMIT = 2 ** 48;

/** `xxxxxxxx-xxxx-4xxx-yxxx-` from 10 random bytes' hex (y in 8–b, the RFC 4122 variant). */
function uuidPrefix(): string {
  const h = randomBytes(10).toString('hex');
  const variant = ((parseInt(h[15]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-${variant}${h.slice(16, 19)}-`;
}

/**
 * The number an id of IdGenerator ends in (its last 12 hex digits); NaN or a wrong number for
 * other strings, so a lookup by it must still compare the whole id.
 */
export function counterOf(id: string): number {
  return parseInt(id.slice(-12), 16);
}

export class IdGenerator {
  /** Prefixes are public so that the hot path renders a number's hex once for all three ids. */
  tracePrefix = randomBytes(8).toString('hex');
  spanPrefix = randomBytes(2).toString('hex');
  /**
   * Invocation ids sent to callees are UUID-shaped (8-4-4-4-12 hex, version 4 nibble), because iii
   * clients may parse them as UUIDs.
   */
  invocationPrefix = uuidPrefix();
  /** `00-<trace prefix>` and `-<span prefix>`: a new trace's traceparent in four concatenations. */
  private rootHead = '00-' + this.tracePrefix;
  private spanHead = '-' + this.spanPrefix;
  private counter = 0;
  /** Bumped when the counter wraps and the prefixes are drawn anew; numbers of an older epoch render wrongly. */
  epoch = 0;

  /** A fresh number, used for one call's invocation id, span id and (for a new trace) trace id. */
  next(): number {
    if (++this.counter >= COUNTER_LIMIT) {
      this.tracePrefix = randomBytes(8).toString('hex');
      this.spanPrefix = randomBytes(2).toString('hex');
      this.invocationPrefix = uuidPrefix();
      this.rootHead = '00-' + this.tracePrefix;
      this.spanHead = '-' + this.spanPrefix;
      this.counter = 1;
      this.epoch++;
    }
    return this.counter;
  }

  /** The traceparent of call `n` (`hex`: hex12 of it) when it starts a trace: its trace and span ids are both made from it. */
  rootTraceparent(n: number, hex: string): string {
    return this.rootHead + counterTraceTail(n) + this.spanHead + hex + '-01';
  }

  traceId(n: number): string {
    return this.tracePrefix + counterTraceTail(n);
  }

  spanId(n: number): string {
    return this.spanPrefix + hex12(n);
  }

  invocationId(n: number): string {
    return this.invocationPrefix + hex12(n);
  }
}
