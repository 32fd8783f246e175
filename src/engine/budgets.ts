import type { Peer } from './peer.js';

/**
 * Byte budgets of what the engine stores for its peers: descriptions, request and response formats,
 * metadata, binding configs, log lines, span errors. A value over its budget is not dropped but
 * replaced by a marker that says what was cut and how large it was, so a listing shows that
 * something was there. Sizes are the length of a value's JSON text (UTF-16 code units: the byte
 * count for ASCII, and at most what V8 holds for the string form).
 */

/** The config key every per-value marker names. */
export const VALUE_LIMIT_KEY = 'engine.limits.max_stored_value_bytes';
export const WORKER_LIMIT_KEY = 'engine.limits.max_stored_bytes_per_worker';

/** Characters of a cut value's JSON kept in its marker, so that one can still tell what it was. */
const HEAD_CHARS = 200;

/**
 * `s` as a string of its own. A slice of a longer string is, in V8, a view that keeps the whole of
 * it alive: the first 64 KiB of a 7 MiB description, kept as a slice, would hold all 7 MiB.
 */
export function detached(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string;
}

/** Up to `n` characters of `s`, as a string of its own (detached). */
export function head(s: string, n: number): string {
  return s.length <= n ? s : detached(s.slice(0, n));
}

/** The length of `v`'s JSON text; a string's own length (its quotes and escapes aside). */
export function jsonChars(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (v === undefined) return 0;
  return (JSON.stringify(v) ?? '').length;
}

/**
 * What replaces a JSON value over its budget: `{"svc_truncated": {what, size, limit, setting, head}}`.
 * `json`: the value's JSON text when already made (its head is kept).
 */
export function truncatedValue(what: string, size: number, limit: number, setting: string, json?: string): Record<string, unknown> {
  return { svc_truncated: { what, size, limit, setting, head: head(json ?? '', HEAD_CHARS) } };
}

/**
 * `s` cut to `limit` characters, with a note of what was cut and its size: `s` itself when it is
 * within `limit`. (A string stays a string: descriptions and messages are typed so.)
 */
export function cutString(s: string, limit: number, what: string): string {
  if (s.length <= limit) return s;
  return `${head(s, limit)}… [svc_truncated: ${what} of ${s.length} characters, over ${VALUE_LIMIT_KEY} = ${limit}]`;
}

/** `v` if its JSON is within `limit`, else its marker (a string is cut instead). */
export function boundValue(v: unknown, limit: number, what: string): { value: unknown; size: number } {
  if (typeof v === 'string') {
    const value = cutString(v, limit, what);
    return { value, size: value.length };
  }
  const json = v === undefined ? '' : (JSON.stringify(v) ?? '');
  if (json.length <= limit) return { value: v, size: json.length };
  const value = truncatedValue(what, json.length, limit, VALUE_LIMIT_KEY, json);
  return { value, size: jsonChars(value) };
}

/**
 * The registration data each peer stores (its functions' descriptions and formats, its trigger
 * types', its bindings' configs, its worker metadata): each value at most `maxValue` characters,
 * all of one peer's together at most `maxPerWorker`. Charged per key ("f:<id>" for a function,
 * …), so that registering the same id again replaces its charge; everything a peer holds goes with
 * its peer.
 */
export class StoredValues {
  constructor(
    readonly maxValue: number,
    readonly maxPerWorker: number,
  ) {}

  /**
   * The fields to store for `key` of `s`, each within the budgets (a marker in place of one that is
   * not), and charge them. `frameChars`: the length of the frame that carried them, an upper bound
   * of their size: when it is within `maxValue` no field needs measuring on its own.
   */
  bound<T extends object>(s: Peer, key: string, fields: T, frameChars = Infinity): { fields: T; over: string[] } {
    this.release(s, key);
    const out = { ...fields } as Record<string, unknown>;
    const over: string[] = [];
    if (frameChars <= this.maxValue && s.storedBytes + frameChars <= this.maxPerWorker) {
      this.charge(s, key, frameChars);
      return { fields: out as T, over };
    }
    let total = 0;
    for (const [name, v] of Object.entries(out)) {
      if (v === undefined || v === null) continue;
      let { value, size } = boundValue(v, this.maxValue, name);
      // Within its own budget but not within what is left of the peer's: a marker too.
      if (value === v && s.storedBytes + total + size > this.maxPerWorker) {
        value =
          typeof v === 'string'
            ? `${head(v, HEAD_CHARS)}… [svc_truncated: ${name} of ${v.length} characters: this worker's stored values reached ${WORKER_LIMIT_KEY} = ${this.maxPerWorker}]`
            : truncatedValue(name, size, this.maxPerWorker, WORKER_LIMIT_KEY);
        size = jsonChars(value);
      }
      if (value !== v) over.push(name);
      out[name] = value;
      total += size;
    }
    this.charge(s, key, total);
    return { fields: out as T, over };
  }

  release(s: Peer, key: string): void {
    const had = s.stored.get(key);
    if (had === undefined) return;
    s.stored.delete(key);
    s.storedBytes -= had;
  }

  private charge(s: Peer, key: string, size: number): void {
    s.stored.set(key, size);
    s.storedBytes += size;
  }
}
