/**
 * Numbers as 12 hex digits, for the ids of every routed call (src/engine/ids.ts). Rendering a whole
 * number with toString(16) and padStart on every call cost ten times a table lookup of its low
 * three digits: the upper nine change once per 4096 numbers, and the last rendering is kept.
 */

/** The last 3 hex digits of every number, rendered once. */
const LOW_HEX: readonly string[] = Array.from({ length: 4096 }, (_, k) => k.toString(16).padStart(3, '0'));
/** The upper 9 digits of the last number rendered, and which block of 4096 they belong to. */
let highOf = -1;
let highHex = '';

/** `n` (below 2^48) as 12 hex digits. */
export function hex12(n: number): string {
  const high = Math.floor(n / 4096);
  if (high !== highOf) {
    highOf = high;
    highHex = high.toString(16).padStart(9, '0');
  }
  return highHex + LOW_HEX[n & 4095]!;
}

/**
 * The once-per-4096 branch runs here, at load, often enough for V8 to record type feedback for it
 * (it records feedback only once a function has run a few times). Unprimed, the 4097th call
 * reached optimised code with no feedback for the branch and deoptimised the whole call path that
 * had inlined hex12 (README.md in this directory; `npm run bench:jit` probes it).
 */
function primeHex12(): void {
  for (let k = 0; k < 64; k++) hex12(k * 4096);
  highOf = -1;
}
primeHex12();
