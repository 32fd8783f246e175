/**
 * Trace ids made from a random prefix and a counter (the engine's calls that start a trace, its log
 * fires, svc-http's requests, the console's calls): unique without a random draw per id.
 *
 * The counter's low 32 bits are spread by a bijection (murmur3's finalizer) before they are
 * written, because trace ids decide sampling: OpenTelemetry's TraceIdRatioBasedSampler (the
 * engine's `engine.telemetry.sampling_ratio`, and a worker's own OTel export) keeps a trace when
 * the xor of its id's four 32-bit words is below ratio × 2^32. With the plain counter in the last
 * word, consecutive ids differ only in their low bits, and one process's traces were all exported
 * or none, by its prefix, for its first 2^16 ids and more.
 */
import { randomBytes } from 'node:crypto';

/** A bijection of 32-bit integers whose outputs for consecutive inputs look random (murmur3 fmix32). */
export function mix32(n: number): number {
  let h = n >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const hex8 = (n: number): string => n.toString(16).padStart(8, '0');
/** Every byte as 2 hex digits: the mixed word is written from this table (the engine makes one id per call that starts a trace). */
const BYTE_HEX: readonly string[] = Array.from({ length: 256 }, (_, k) => k.toString(16).padStart(2, '0'));
/** The high word of the last counter written, and its hex: it changes once per 2^32 ids. */
let highOf = -1;
let highHex = '';

/** Counter `n` (below 2^53) as the 16 hex digits a trace id ends in: its high word, then its low 32 bits mixed. Distinct `n`, distinct digits. */
export function counterTraceTail(n: number): string {
  const high = Math.floor(n / 0x100000000);
  if (high !== highOf) {
    highOf = high;
    highHex = hex8(high);
  }
  const m = mix32(n);
  return highHex + BYTE_HEX[m >>> 24]! + BYTE_HEX[(m >>> 16) & 255]! + BYTE_HEX[(m >>> 8) & 255]! + BYTE_HEX[m & 255]!;
}

/** W3C Trace Context version 00, ids not all zeros (https://www.w3.org/TR/trace-context/#traceparent-header). */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Whether `tp` is a valid W3C traceparent of version 00 (lowercase hex, ids not all zeros). */
export function validTraceparent(tp: string): boolean {
  return TRACEPARENT.test(tp);
}

/**
 * A new traceparent per call of the function returned, for a caller with no span of its own: trace
 * id `<prefix><counterTraceTail>`, parent id the prefix again, which tells the engine the call's
 * span is the trace's root (docs/protocol.md; src/engine/traces.ts, namesNoParent). `prefix`: 16
 * hex digits, random by default.
 */
export function traceparentMaker(prefix: string = randomBytes(8).toString('hex')): () => string {
  const tail = `-${prefix}-01`;
  let n = 0;
  return () => `00-${prefix}${counterTraceTail(++n)}${tail}`;
}
