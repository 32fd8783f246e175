/** How the built-ins' error messages show a value a caller sent: its kind, and short strings and numbers as they are. */
export function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

/**
 * A lone surrogate (half of a UTF-16 pair) cannot be encoded as UTF-8: stored or sent, it comes back
 * as U+FFFD, so two different names would become one. The built-ins refuse names that hold one.
 * (With the `u` flag a well-paired surrogate is one code point and does not match.)
 */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
