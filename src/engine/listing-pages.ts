import { EngineError } from './errors.js';
import type { Registry } from './registry.js';

type Entry = Record<string, unknown>;

/** The listings that grow with what workers register, the key of their array, and what orders an entry (unique). */
const LISTINGS: Array<[string, string, (e: Entry) => string]> = [
  ['engine::workers::list', 'workers', (e) => String(e.worker_id)],
  // One function id may be registered in several namespaces.
  ['engine::functions::list', 'functions', (e) => `${String(e.function_id)}\u0000${String(e.namespace)}`],
  ['engine::triggers::list', 'trigger_types', (e) => String(e.id)],
  ['engine::registered-triggers::list', 'triggers', (e) => String(e.id)],
];

/** A page holds at most this many entries when `limit` asks for fewer. */
export const MAX_PAGE_ENTRIES = 10_000;

/**
 * Listings in pages, so that no number or size of registrations can make a listing fail with
 * `result_too_large` (workers register up to max_stored_bytes_per_worker each, and there may be
 * many): each listing takes `{limit?, after?}` besides its own fields. A listing that fits in
 * `maxChars` and was asked for no page is answered whole, in its usual order, as before. Otherwise
 * its entries are sorted by id, those after `after` are taken up to `limit` and `maxChars`, and
 * `next` (the last id) says there are more: ask again with `after: next`. Installed last, over the
 * cluster's wrappers too, so a page covers the whole cluster.
 */
export function installListingPages(registry: Registry, maxChars: number): void {
  for (const [fid, key, id] of LISTINGS) {
    const entry = registry.get(fid);
    const original = entry?.builtin;
    if (!original) continue;
    registry.addBuiltin(fid, entry.description ?? fid, async (data, caller, frameChars) => {
      const { limit, after } = pageArgs(fid, data);
      const answer = (await original(data, caller, frameChars)) as Entry;
      const all = answer[key] as Entry[];
      if (limit === undefined && after === undefined && encodesWithin(all, maxChars)) return answer;
      const rest = all.filter((e) => after === undefined || id(e) > after).sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));
      const page: Entry[] = [];
      let chars = 0;
      for (const e of rest) {
        if (page.length >= (limit ?? MAX_PAGE_ENTRIES)) break;
        const n = JSON.stringify(e).length + 1;
        if (page.length > 0 && chars + n > maxChars) break;
        page.push(e);
        chars += n;
      }
      return { ...answer, [key]: page, ...(page.length < rest.length ? { next: id(page[page.length - 1]!) } : {}) };
    }, entry.inOrder === true);
  }
}

/** Entries encoded together while measuring a listing: fewer calls than one per entry, and little encoded past the bound. */
const MEASURE_CHUNK = 64;

/**
 * Whether `entries` encode to at most `maxChars` characters as a JSON array (as JSON.stringify of
 * it), without encoding a listing far over it whole: the count stops at the first chunk past the
 * bound, so deciding costs about `maxChars` of encoding at most, whatever the registrations.
 */
export function encodesWithin(entries: Entry[], maxChars: number): boolean {
  // A chunk of k entries encodes to their text, k - 1 commas and 2 brackets: less 1, its entries with a comma
  // each. The array is all entries, one comma fewer, and its 2 brackets: 1 more than the sum.
  let chars = entries.length === 0 ? 2 : 1;
  for (let i = 0; i < entries.length; i += MEASURE_CHUNK) {
    chars += JSON.stringify(entries.slice(i, i + MEASURE_CHUNK)).length - 1;
    if (chars > maxChars) return false;
  }
  return chars <= maxChars;
}

function pageArgs(fid: string, data: unknown): { limit: number | undefined; after: string | undefined } {
  const m = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Entry) : {};
  const limit = m.limit ?? undefined;
  if (limit !== undefined && !(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_PAGE_ENTRIES)) {
    throw new EngineError('invalid_payload', `${fid}: "limit" must be an integer from 1 to ${MAX_PAGE_ENTRIES}, got ${JSON.stringify(limit)?.slice(0, 40)}`);
  }
  const after = m.after ?? undefined;
  if (after !== undefined && typeof after !== 'string') {
    throw new EngineError('invalid_payload', `${fid}: "after" must be the "next" of the previous page (a string), got ${JSON.stringify(after)?.slice(0, 40)}`);
  }
  return { limit: limit as number | undefined, after };
}

/** Every page of listing `key` through `call` (the engine's own use, e.g. engine::functions-available). */
export async function listAll<T>(call: (data: Entry) => Promise<unknown>, key: string, data: Entry = {}): Promise<T[]> {
  const out: T[] = [];
  let after: string | undefined;
  do {
    const page = (await call(after === undefined ? data : { ...data, after })) as Entry;
    out.push(...(page[key] as T[]));
    after = typeof page.next === 'string' ? page.next : undefined;
  } while (after !== undefined);
  return out;
}
