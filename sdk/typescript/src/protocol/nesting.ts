/**
 * The nesting depth of JSON: how decodeFrame (decode.ts) finds a frame nested deeper than it
 * accepts (MAX_FRAME_DEPTH) at a fraction of the parse's cost, and names the depth of one it refuses.
 */

/**
 * Whether `text` holds at least `n` of "{" and "[" (inside strings too: a bound, not a count of
 * arrays and objects). indexOf finds each with a vectorised search, so a frame of few brackets (a
 * long string, an array of numbers) costs a fraction of its parse.
 */
export function openingsAtLeast(text: string, n: number): boolean {
  let count = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++count >= n) return true;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++count >= n) return true;
  return false;
}

/**
 * Whether the parsed value `v` nests arrays and objects deeper than `limit` (itself counted as one
 * level when it is one). Walks the parsed value, not the text: its cost follows the number of
 * arrays, objects and their members, a fraction of what the parse cost (bench/decode.ts), and it
 * stops descending at `limit`, so a frame nested a million deep costs no more than one 129 deep.
 */
export function deeperThan(v: unknown, limit: number): boolean {
  return typeof v === 'object' && v !== null && over(v, limit - 1);
}

/** `o` is an array or object with `left` more levels allowed below it. */
function over(o: object, left: number): boolean {
  if (Array.isArray(o)) {
    for (let i = 0; i < o.length; i++) {
      const x: unknown = o[i];
      if (typeof x === 'object' && x !== null && (left === 0 || over(x, left - 1))) return true;
    }
    return false;
  }
  const r = o as Record<string, unknown>;
  for (const k in r) {
    const x = r[k];
    if (typeof x === 'object' && x !== null && (left === 0 || over(x, left - 1))) return true;
  }
  return false;
}

/**
 * The nesting depth of arrays and objects in `text`, valid JSON, if it exceeds `limit`; else 0:
 * what a refusal names. One pass over the characters outside strings (a string is skipped with
 * indexOf to its closing quote, one not preceded by an odd number of backslashes); it costs about
 * half a parse, so the check of every frame walks the parsed value instead (deeperThan).
 */
export function jsonDepthOver(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return max > limit ? max : 0;
        let b = i - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        if (((i - 1 - b) & 1) === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return max > limit ? max : 0;
}
