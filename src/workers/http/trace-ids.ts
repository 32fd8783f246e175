/**
 * The traceparents svc-http starts its calls' traces with: one per request's call, so that an error
 * response can name the trace (trace_id) before the engine answers.
 *
 * A trace id is a random prefix (per svc-http) and a counter: unique without a random draw per
 * request. The counter's low 32 bits are spread by a bijection (murmur3's finalizer), because the
 * engine samples traces (`engine.telemetry.sampling_ratio`) with OpenTelemetry's
 * TraceIdRatioBasedSampler, which decides by the xor of the id's four 32-bit words: with the plain
 * counter there, consecutive ids differ only in low bits, and one svc-http's traces were all
 * exported or none for the first 2^16 requests and more.
 *
 * The parent span id repeats the prefix: svc-http has no span of its own, and that form tells the
 * engine the call's span is the trace's root (src/engine/traces.ts, namesNoParent).
 */
import { randomBytes } from 'node:crypto';

/** A bijection of 32-bit integers whose outputs for consecutive inputs look random (murmur3 fmix32). */
function spread(n: number): number {
  let h = n >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const hex8 = (n: number): string => n.toString(16).padStart(8, '0');

/** A new traceparent per call of the function returned; ids unique for 2^53 calls. */
export function traceparentMaker(prefix: string = randomBytes(8).toString('hex')): () => string {
  const tail = `-${prefix}-01`;
  let n = 0;
  return () => {
    n++;
    return `00-${prefix}${hex8(Math.floor(n / 0x100000000))}${hex8(spread(n))}${tail}`;
  };
}
