/**
 * The state store conformance suite: one function, run against every StateStore (store.test.ts).
 * It drives the `state::*` handlers of service.ts, so it checks what a caller sees: results,
 * error codes and messages, atomicity and concurrency.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { stateFunctions, type StateEvent, type StateFunctions } from '../../../src/workers/state/service.js';
import type { Entry, StateStore, StoreLimits } from '../../../src/workers/state/store.js';
import { MAX_UPDATE_OPS } from '../../../src/workers/state/store.js';
import type { ServiceLimits } from '../../../src/workers/state/service.js';

/** Opens a fresh, empty, isolated store. */
export type OpenStore = (limits: StoreLimits) => Promise<StateStore>;

interface Ctx {
  fn: StateFunctions;
  events: StateEvent[];
  store: StateStore;
}

const LIMITS: StoreLimits = { maxValueBytes: 1024 * 1024 };

async function rejectsWith(p: Promise<unknown>, code: string, ...mentions: string[]): Promise<Error> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof Error, `expected an error with code ${code}, got a result`);
  assert.equal((err as { code?: string }).code, code, `wrong code for: ${err.message}`);
  for (const m of mentions) assert.ok(err.message.includes(m), `message ${JSON.stringify(err.message)} should mention ${JSON.stringify(m)}`);
  return err;
}

export function conformance(name: string, open: OpenStore): void {
  describe(`state store conformance: ${name}`, () => {
    const withStore = (title: string, body: (c: Ctx) => Promise<void>, limits: ServiceLimits = LIMITS) =>
      test(title, async () => {
        const store = await open(limits);
        const events: StateEvent[] = [];
        try {
          await body({ fn: stateFunctions(store, limits, (e) => events.push(e)), events, store });
        } finally {
          await store.close();
        }
      });

    withStore('get, set, delete and their results', async ({ fn, events }) => {
      assert.equal(await fn['state::get']({ scope: 's', key: 'k' }), null);
      // Deleting an absent key answers null and is an event (iii fires state:deleted, old_value null).
      assert.equal(await fn['state::delete']({ scope: 's', key: 'k' }), null);
      assert.deepEqual(await fn['state::set']({ scope: 's', key: 'k', value: { a: 1 } }), { old_value: null, new_value: { a: 1 } });
      assert.deepEqual(await fn['state::get']({ scope: 's', key: 'k' }), { a: 1 });
      assert.deepEqual(await fn['state::set']({ scope: 's', key: 'k', value: [1, 'two'] }), { old_value: { a: 1 }, new_value: [1, 'two'] });
      assert.deepEqual(await fn['state::delete']({ scope: 's', key: 'k' }), [1, 'two']);
      assert.equal(await fn['state::get']({ scope: 's', key: 'k' }), null);
      assert.deepEqual(
        events.map((e) => [e.event_type, e.old_value, e.new_value]),
        [
          ['state:deleted', null, null],
          ['state:created', null, { a: 1 }],
          ['state:updated', { a: 1 }, [1, 'two']],
          ['state:deleted', [1, 'two'], null],
        ],
      );
      assert.ok(events.every((e) => e.type === 'state' && e.scope === 's' && e.key === 'k'));
    });

    withStore('every JSON value round-trips exactly', async ({ fn }) => {
      const values = [null, true, false, 0, -1.5, 1e300, 2 ** 53 - 1, 0.1, '', 'text', [], {}, [[], {}], { z: 1, a: { b: [null, 'x'] } }, 'ünïcødé ✓ 🔑', 'quote " back \\ nl \n /'];
      for (const [i, v] of values.entries()) {
        await fn['state::set']({ scope: 'types', key: `k${i}`, value: v });
        assert.deepEqual(await fn['state::get']({ scope: 'types', key: `k${i}` }), v, `value #${i}`);
      }
      // A stored null is a value: listed, and deleting it is an event.
      assert.deepEqual(await fn['state::list']({ scope: 'types' }), [...values.entries()].sort(([a], [b]) => Buffer.compare(Buffer.from(`k${a}`), Buffer.from(`k${b}`))).map(([, v]) => v));
    });

    withStore('list and list_groups: ordered, isolated scopes, unicode', async ({ fn }) => {
      assert.deepEqual(await fn['state::list_groups'](undefined), { groups: [] });
      assert.deepEqual(await fn['state::list']({ scope: 'a' }), []);
      const keys = ['b', 'a', 'ключ', '🔑', 'a.b', 'with space', 'nul\u0000key', 'Z'];
      for (const k of keys) await fn['state::set']({ scope: 'a', key: k, value: k.length });
      await fn['state::set']({ scope: 'ab', key: 'x', value: 'other scope' }); // "a" is a prefix of "ab"
      await fn['state::set']({ scope: 'ü-scope', key: 'x', value: 1 });
      // Unpaged, as iii answers it: the values alone, in key order; a page holds the keys too.
      const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      assert.deepEqual(await fn['state::list']({ scope: 'a' }), sorted.map((k) => k.length));
      assert.deepEqual(await fn['state::list']({ scope: 'a', limit: 100 }), { entries: sorted.map((k) => ({ key: k, value: k.length })), next_cursor: null });
      for (const k of keys) assert.equal(await fn['state::get']({ scope: 'a', key: k }), k.length, `key ${JSON.stringify(k)}`);
      assert.deepEqual(await fn['state::list']({ scope: 'ab' }), ['other scope']);
      assert.deepEqual(await fn['state::list_groups']({}), { groups: ['a', 'ab', 'ü-scope'] });
      // An emptied scope is no longer a group.
      await fn['state::delete']({ scope: 'ab', key: 'x' });
      await fn['state::update']({ scope: 'ü-scope', key: 'x', ops: [{ type: 'remove' }] });
      assert.deepEqual(await fn['state::list_groups']({}), { groups: ['a'] });
    });

    type Page = { entries: Entry[]; next_cursor: string | null };
    const page = async (fn: StateFunctions, payload: Record<string, unknown>): Promise<Page> => (await fn['state::list']({ scope: 'p', ...payload })) as Page;
    /** Every page of scope "p", following next_cursor. */
    const allPages = async (fn: StateFunctions, limit: number): Promise<Page[]> => {
      const pages: Page[] = [await page(fn, { limit })];
      while (pages.at(-1)!.next_cursor !== null) pages.push(await page(fn, { limit, cursor: pages.at(-1)!.next_cursor }));
      return pages;
    };

    withStore('list with limit and cursor: pages in key order, next_cursor null on the last', async ({ fn }) => {
      assert.deepEqual(await page(fn, { limit: 10 }), { entries: [], next_cursor: null });
      const keys = ['b', 'a', 'ключ', '🔑', 'a.b', 'Z', 'k10', 'k9', '\uffff', '\u{10000}'];
      for (const k of keys) await fn['state::set']({ scope: 'p', key: k, value: { k } });
      await fn['state::set']({ scope: 'p2', key: 'a', value: 'other scope' });
      const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      const pages = await allPages(fn, 3);
      assert.deepEqual(pages.map((p) => p.entries.length), [3, 3, 3, 1]);
      assert.deepEqual(pages.flatMap((p) => p.entries), sorted.map((k) => ({ key: k, value: { k } })));
      assert.deepEqual(pages.map((p) => p.next_cursor), [sorted[2], sorted[5], sorted[8], null]);
      // Exactly a page's worth: the last full page already says there is no more.
      assert.deepEqual((await allPages(fn, 10)).map((p) => [p.entries.length, p.next_cursor]), [[10, null]]);
      // Default limit; the unpaged call answers the plain array as before.
      assert.equal(((await fn['state::list']({ scope: 'p', cursor: null, limit: null })) as unknown[]).length, keys.length);
      assert.equal((await page(fn, { cursor: sorted[8] })).entries.length, 1);
      // A cursor whose key was deleted meanwhile still continues after it.
      await fn['state::delete']({ scope: 'p', key: sorted[3]! });
      assert.deepEqual((await page(fn, { limit: 2, cursor: sorted[2] })).entries.map((e) => e.key), [sorted[4], sorted[5]]);
      // A cursor past the end: an empty last page.
      assert.deepEqual(await page(fn, { cursor: '\u{10ffff}' }), { entries: [], next_cursor: null });
      await rejectsWith(page(fn, { limit: 0 }), 'invalid_payload', '"limit" must be an integer from 1 to 10000');
      await rejectsWith(page(fn, { limit: 1.5 }), 'invalid_payload', '"limit"');
      await rejectsWith(page(fn, { limit: 10_001 }), 'invalid_payload', '"limit"');
      await rejectsWith(page(fn, { cursor: 7 }), 'invalid_payload', '"cursor"');
      await rejectsWith(page(fn, { cursor: '' }), 'invalid_payload', '"cursor"');
      await rejectsWith(page(fn, { cursor: 'c'.repeat(1025) }), 'invalid_payload', '"cursor"', 'at most 1024 bytes');
    });

    withStore(
      'list pages are bounded in bytes too, and the unpaged list of a scope over the bound refuses with a hint',
      async ({ fn }) => {
        const big = 'v'.repeat(1500);
        for (let i = 0; i < 10; i++) await fn['state::set']({ scope: 'p', key: `k${i}`, value: big });
        // 4096 bytes of answer: two entries of ~1.5 KB per page, whatever the limit.
        const pages = await allPages(fn, 1000);
        assert.deepEqual(pages.map((p) => p.entries.length), [2, 2, 2, 2, 2]);
        assert.deepEqual(pages.flatMap((p) => p.entries.map((e) => e.key)), Array.from({ length: 10 }, (_, i) => `k${i}`));
        await rejectsWith(fn['state::list']({ scope: 'p' }), 'result_too_large', 'scope "p" holds more than fits in one answer (4096 bytes)', 'cursor');
        // A value larger than the bound alone still comes, alone on its page.
        await fn['state::set']({ scope: 'huge', key: 'one', value: 'h'.repeat(5000) });
        const alone = (await fn['state::list']({ scope: 'huge', limit: 5 })) as Page;
        assert.deepEqual([alone.entries.length, alone.next_cursor], [1, null]);
      },
      { ...LIMITS, answerBytes: () => 4096 },
    );

    withStore('update: set and remove, at the root and on paths', async ({ fn, events }) => {
      const u = (key: string, ops: unknown[]) => fn['state::update']({ scope: 'u', key, ops });
      assert.deepEqual(await u('k', [{ type: 'set', value: { a: 1 } }]), { old_value: null, new_value: { a: 1 } });
      assert.deepEqual(await u('k', [{ type: 'set', path: ['b', 'c'], value: 2 }]), { old_value: { a: 1 }, new_value: { a: 1, b: { c: 2 } } });
      assert.deepEqual((await u('k', [{ type: 'set', path: ['x.y'], value: true }])).new_value, { a: 1, b: { c: 2 }, 'x.y': true });
      assert.deepEqual((await u('k', [{ type: 'remove', path: ['b', 'c'] }])).new_value, { a: 1, b: {}, 'x.y': true });
      assert.deepEqual((await u('k', [{ type: 'remove', path: ['no', 'such', 'path'] }])).new_value, { a: 1, b: {}, 'x.y': true });
      assert.deepEqual((await u('k', [{ type: 'remove', path: 'x.y' }])).new_value, { a: 1, b: {} });
      assert.deepEqual((await u('k', [{ type: 'set', path: 'x.y', value: true }])).new_value, { a: 1, b: {}, 'x.y': true });
      assert.deepEqual((await u('k', [{ type: 'remove', path: 'no.such.path' }])).new_value, { a: 1, b: {}, 'x.y': true });
      assert.deepEqual(await u('k', [{ type: 'remove' }]), { old_value: { a: 1, b: {}, 'x.y': true }, new_value: null });
      assert.equal(await fn['state::get']({ scope: 'u', key: 'k' }), null);
      // Removing what is absent writes nothing and is no event.
      const before = events.length;
      assert.deepEqual(await u('gone', [{ type: 'remove' }]), { old_value: null, new_value: null });
      assert.deepEqual(await u('gone', []), { old_value: null, new_value: null });
      assert.equal(events.length, before);
      assert.deepEqual(await fn['state::list']({ scope: 'u' }), []);
      assert.deepEqual(
        events.map((e) => e.event_type),
        ['state:created', 'state:updated', 'state:updated', 'state:updated', 'state:updated', 'state:updated', 'state:updated', 'state:updated', 'state:deleted'],
      );
    });

    withStore('update: merge', async ({ fn }) => {
      const u = (ops: unknown[]) => fn['state::update']({ scope: 'm', key: 'k', ops });
      assert.deepEqual((await u([{ type: 'merge', value: { a: 1, b: 2 } }])).new_value, { a: 1, b: 2 });
      assert.deepEqual((await u([{ type: 'merge', value: { b: 3, c: [] } }])).new_value, { a: 1, b: 3, c: [] });
      assert.deepEqual((await u([{ type: 'merge', path: ['n', 'o'], value: { p: {} } }])).new_value, { a: 1, b: 3, c: [], n: { o: { p: {} } } });
      await rejectsWith(fn['state::update']({ scope: 'm', key: 'k', atomic: true, ops: [{ type: 'merge', path: 'c', value: { x: 1 } }] }), 'type_error', '"c"', 'merge', 'array');
      await rejectsWith(u([{ type: 'merge', value: [1] }]), 'invalid_op', 'ops[0]', 'merge');
    });

    withStore('update: increment and decrement', async ({ fn }) => {
      const u = (ops: unknown[]) => fn['state::update']({ scope: 'n', key: 'k', ops });
      assert.deepEqual(await u([{ type: 'increment', by: 5 }]), { old_value: null, new_value: 5 });
      assert.deepEqual(await u([{ type: 'increment' }]), { old_value: 5, new_value: 6 });
      assert.deepEqual(await u([{ type: 'decrement', by: 10 }]), { old_value: 6, new_value: -4 });
      assert.equal((await u([{ type: 'increment', by: 0.25 }])).new_value, -3.75);
      await fn['state::set']({ scope: 'n', key: 'k', value: { hits: { total: 0.1 } } });
      assert.deepEqual((await u([{ type: 'increment', path: ['hits', 'total'], by: 0.2 }])).new_value, { hits: { total: 0.1 + 0.2 } });
      assert.deepEqual((await u([{ type: 'increment', path: ['hits', 'new'], by: 2 ** 52 }])).new_value, { hits: { total: 0.1 + 0.2, new: 2 ** 52 } });
      assert.equal(((await u([{ type: 'decrement', path: ['hits', 'other'], by: 3 }])).new_value as { hits: { other: number } }).hits.other, -3);
      await rejectsWith(u([{ type: 'increment', by: '1' }]), 'invalid_op', 'ops[0]', '"by"');
      await rejectsWith(fn['state::update']({ scope: 'n', key: 'k', atomic: true, ops: [{ type: 'increment', by: 1 }] }), 'type_error', 'ops[0]', 'an object');
      await fn['state::set']({ scope: 'n', key: 'max', value: 1.7e308 });
      await rejectsWith(fn['state::update']({ scope: 'n', key: 'max', atomic: true, ops: [{ type: 'increment', by: 1e308 }] }), 'type_error', 'finite');
      // Best-effort (the default), the root fast path reports it as the op's error and writes nothing.
      const inf = await fn['state::update']({ scope: 'n', key: 'max', ops: [{ type: 'increment', by: 1e308 }] });
      assert.deepEqual([inf.old_value, inf.new_value, inf.errors?.map((e) => [e.op_index, e.code])], [1.7e308, 1.7e308, [[0, 'type_error']]]);
      assert.equal(await fn['state::get']({ scope: 'n', key: 'max' }), 1.7e308);
    });

    withStore('update: append', async ({ fn }) => {
      const u = (key: string, ops: unknown[]) => fn['state::update']({ scope: 'ap', key, ops });
      assert.deepEqual((await u('list', [{ type: 'append', value: 1 }])).new_value, [1]);
      assert.deepEqual((await u('list', [{ type: 'append', value: { x: [] } }, { type: 'append', value: null }])).new_value, [1, { x: [] }, null]);
      assert.deepEqual(await fn['state::get']({ scope: 'ap', key: 'list' }), [1, { x: [] }, null]);
      assert.deepEqual((await u('doc', [{ type: 'append', path: ['tags'], value: 'a' }])).new_value, { tags: ['a'] });
      // On a field name (iii's string path), a string appended to nothing starts a string; others an array.
      assert.deepEqual((await u('doc', [{ type: 'append', path: 'text', value: 'he' }, { type: 'append', path: 'text', value: 'llo' }])).new_value, {
        tags: ['a'],
        text: 'hello',
      });
      assert.deepEqual((await u('doc', [{ type: 'append', path: 'nums', value: 1 }])).new_value, { tags: ['a'], text: 'hello', nums: [1] });
      assert.deepEqual((await u('root-text', [{ type: 'append', value: 'x' }])).new_value, ['x']);
      await fn['state::set']({ scope: 'ap', key: 's', value: 'ab' });
      assert.equal((await u('s', [{ type: 'append', value: 'cd"é' }])).new_value, 'abcd"é');
      await rejectsWith(fn['state::update']({ scope: 'ap', key: 's', atomic: true, ops: [{ type: 'append', value: 1 }] }), 'type_error', 'append', 'the string "abcd\\"é"');
    });

    withStore('update: arrays on paths', async ({ fn }) => {
      await fn['state::set']({ scope: 'arr', key: 'k', value: { items: [{ n: 1 }, { n: 2 }] } });
      const u = (ops: unknown[]) => fn['state::update']({ scope: 'arr', key: 'k', ops });
      const atomic = (ops: unknown[]) => fn['state::update']({ scope: 'arr', key: 'k', ops, atomic: true });
      assert.deepEqual((await u([{ type: 'increment', path: ['items', '1', 'n'], by: 10 }])).new_value, { items: [{ n: 1 }, { n: 12 }] });
      assert.deepEqual((await u([{ type: 'set', path: ['items', 2], value: { n: 3 } }])).new_value, { items: [{ n: 1 }, { n: 12 }, { n: 3 }] });
      assert.deepEqual((await u([{ type: 'remove', path: ['items', 0] }])).new_value, { items: [{ n: 12 }, { n: 3 }] });
      await rejectsWith(atomic([{ type: 'set', path: ['items', 5], value: 1 }]), 'invalid_path', '["items",5]', 'past the end');
      await rejectsWith(atomic([{ type: 'set', path: ['items', 'x'], value: 1 }]), 'type_error', '["items","x"]', 'integer');
      assert.deepEqual(await fn['state::get']({ scope: 'arr', key: 'k' }), { items: [{ n: 12 }, { n: 3 }] });
    });

    withStore('update, best-effort as iii defines it: a failed op is skipped and listed in errors, the others apply', async ({ fn, events }) => {
      await fn['state::set']({ scope: 'be', key: 'k', value: { name: 'ada', count: 1, tags: 'x' } });
      const n = events.length;
      const r = await fn['state::update']({
        scope: 'be',
        key: 'k',
        ops: [
          { type: 'increment', path: 'count', by: 2 },
          { type: 'increment', path: 'name' }, // a string: type_error
          { type: 'set', path: 'a.b', value: 1 }, // the first-level field named "a.b"
          { type: 'merge', path: ['name', 'x'], value: { y: 1 } }, // steps into a string: type_error
          { type: 'append', path: 'tags', value: 'y' },
          { type: 'set', path: ['list'], value: [] },
          { type: 'set', path: ['list', 3], value: 1 }, // past the end: invalid_path
        ],
      });
      const want = { name: 'ada', count: 3, tags: 'xy', 'a.b': 1, list: [] };
      assert.deepEqual([r.old_value, r.new_value], [{ name: 'ada', count: 1, tags: 'x' }, want]);
      assert.deepEqual(r.errors?.map((e) => [e.op_index, e.code]), [[1, 'type_error'], [3, 'type_error'], [6, 'invalid_path']]);
      assert.match(r.errors![0]!.message, /scope "be" key "k": ops\[1\] \(increment at "name"\): .*the string "ada"/);
      assert.match(r.errors![1]!.message, /ops\[3\] \(merge at \["name","x"\]\): cannot step into \["name"\]/);
      assert.match(r.errors![2]!.message, /ops\[6\] .*index 3 is past the end of an array of length 0/);
      assert.deepEqual(await fn['state::get']({ scope: 'be', key: 'k' }), want);
      assert.equal(events.length, n + 1);
      assert.deepEqual(events.at(-1)?.new_value, want);
      // No op failed: the answer has no errors field (iii leaves it out when empty).
      const ok = await fn['state::update']({ scope: 'be', key: 'k', ops: [{ type: 'remove', path: 'a.b' }] });
      assert.deepEqual(ok, { old_value: want, new_value: { name: 'ada', count: 3, tags: 'xy', list: [] } });
      // atomic: false is the default, said explicitly.
      const explicit = await fn['state::update']({ scope: 'be', key: 'k', atomic: false, ops: [{ type: 'increment', path: 'tags' }] });
      assert.deepEqual(explicit.errors?.map((e) => e.code), ['type_error']);
    });

    withStore('ops per update are bounded: each failing op is answered with an error, so a long list would answer many times its size', async ({ fn }) => {
      await fn['state::set']({ scope: 'many', key: 'k', value: { n: 'a string' } });
      const failing = (n: number) => Array.from({ length: n }, () => ({ type: 'increment', path: 'n' }));
      const r = await fn['state::update']({ scope: 'many', key: 'k', ops: failing(MAX_UPDATE_OPS) });
      assert.equal(r.errors?.length, MAX_UPDATE_OPS);
      await rejectsWith(fn['state::update']({ scope: 'many', key: 'k', ops: failing(MAX_UPDATE_OPS + 1) }), 'invalid_payload', `at most ${MAX_UPDATE_OPS} ops`, `got ${MAX_UPDATE_OPS + 1}`);
      assert.deepEqual(await fn['state::get']({ scope: 'many', key: 'k' }), { n: 'a string' });
    });

    withStore('atomic: a type error leaves the value unchanged, and a failed op undoes earlier ops', async ({ fn, events }) => {
      await fn['state::set']({ scope: 't', key: 'k', value: { name: 'ada', count: 1 } });
      const n = events.length;
      const atomic = (key: string, ops: unknown[]) => fn['state::update']({ scope: 't', key, ops, atomic: true });
      await rejectsWith(atomic('k', [{ type: 'increment', path: 'name' }]), 'type_error', 'ops[0]', '"name"', 'the string "ada"', 'scope "t"', 'key "k"');
      await rejectsWith(atomic('k', [{ type: 'increment', path: 'count' }, { type: 'set', path: ['name', 'first'], value: 'x' }]), 'type_error', 'ops[1]', '["name"]');
      await fn['state::set']({ scope: 't', key: 'str', value: 'a string' });
      await rejectsWith(atomic('str', [{ type: 'increment' }]), 'type_error', 'increment');
      await rejectsWith(fn['state::update']({ scope: 't', key: 'k', ops: [], atomic: 'yes' }), 'invalid_payload', '"atomic"', 'the string "yes"');
      assert.deepEqual(await fn['state::get']({ scope: 't', key: 'k' }), { name: 'ada', count: 1 });
      assert.equal(await fn['state::get']({ scope: 't', key: 'str' }), 'a string');
      assert.equal(events.length, n + 1); // only the set of "str"
    });

    withStore('invalid payloads name the offending input', async ({ fn }) => {
      await rejectsWith(fn['state::get']('nope'), 'invalid_payload', 'state::get', 'object');
      await rejectsWith(fn['state::get']({ key: 'k' }), 'invalid_payload', '"scope"');
      await rejectsWith(fn['state::set']({ scope: 's', key: 7, value: 1 }), 'invalid_payload', '"key"', 'number 7');
      await rejectsWith(fn['state::set']({ scope: 's', key: 'k' }), 'invalid_payload', '"value"', 'key "k"');
      await rejectsWith(fn['state::update']({ scope: 's', key: 'k', ops: {} }), 'invalid_payload', '"ops"');
      await rejectsWith(fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'multiply' }] }), 'invalid_op', 'ops[0]', 'multiply');
      await rejectsWith(fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'set', path: ['a', '', 'b'], value: 1 }] }), 'invalid_path', 'empty segment');
      await rejectsWith(fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'set', path: '__proto__', value: 1 }] }), 'invalid_path', '__proto__');
      await rejectsWith(fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'set', path: ['x', '__proto__'], value: 1 }] }), 'invalid_path', '__proto__');
      await rejectsWith(fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'set', path: [-1], value: 1 }] }), 'invalid_path', '-1');
      await rejectsWith(fn['state::list']({ scope: '' }), 'invalid_payload', '"scope"');
      await rejectsWith(fn['state::get']({ scope: 's', key: 'x'.repeat(1025) }), 'key_too_large', 'key', '1025');
      await rejectsWith(fn['state::get']({ scope: 'é'.repeat(129), key: 'k' }), 'key_too_large', 'scope', '258');
      await rejectsWith(fn['state::set']({ scope: 's', key: 'bad\uD800', value: 1 }), 'invalid_payload', 'surrogate');
      assert.deepEqual(await fn['state::list_groups']({}), { groups: [] });
    });

    withStore(
      'large values: stored up to max_value_bytes, refused above it with value_too_large',
      async ({ fn }) => {
        const big = 'é'.repeat(30_000); // 60,000 bytes of UTF-8
        assert.equal((await fn['state::set']({ scope: 'big', key: 'k', value: big })).new_value, big);
        assert.equal(await fn['state::get']({ scope: 'big', key: 'k' }), big);
        await rejectsWith(fn['state::set']({ scope: 'big', key: 'k2', value: 'x'.repeat(64 * 1024) }), 'value_too_large', 'scope "big"', 'key "k2"', '65538', '65536');
        await rejectsWith(fn['state::update']({ scope: 'big', key: 'k', ops: [{ type: 'append', value: 'é'.repeat(3000) }] }), 'value_too_large', 'scope "big"', 'key "k"');
        assert.equal(await fn['state::get']({ scope: 'big', key: 'k' }), big);
        assert.equal(await fn['state::get']({ scope: 'big', key: 'k2' }), null);
      },
      { maxValueBytes: 64 * 1024 },
    );

    withStore('a 900 KiB value under the default 1 MiB limit', async ({ fn }) => {
      const value = { rows: Array.from({ length: 9000 }, (_, i) => ({ i, text: 'x'.repeat(80) })) };
      await fn['state::set']({ scope: 'big', key: 'doc', value });
      const r = await fn['state::update']({ scope: 'big', key: 'doc', ops: [{ type: 'increment', path: ['rows', 8999, 'i'] }] });
      assert.equal((r.new_value as typeof value).rows[8999]!.i, 9000);
      assert.deepEqual((await fn['state::get']({ scope: 'big', key: 'doc' }) as typeof value).rows.length, 9000);
    });

    withStore('key order, empty containers and exact numbers survive an update elsewhere in the value', async ({ fn }) => {
      const value = { zeta: [], alpha: {}, big: 2 ** 53 - 1, tiny: 5e-324, neg: -0.000001, s: 'a/b\u2028', n: { m: 1 } };
      await fn['state::set']({ scope: 'o', key: 'k', value });
      const r = await fn['state::update']({ scope: 'o', key: 'k', ops: [{ type: 'increment', path: ['n', 'm'] }] });
      const got = await fn['state::get']({ scope: 'o', key: 'k' });
      const want = { ...value, n: { m: 2 } };
      assert.deepEqual(got, want);
      assert.deepEqual(r.new_value, want);
      assert.deepEqual(Object.keys(got as object), Object.keys(want));
    });

    withStore('1,000 concurrent increments on one key end exact', async ({ fn }) => {
      const calls = Array.from({ length: 1000 }, (_, i) => fn['state::update']({ scope: 'c', key: 'total', ops: [{ type: 'increment', path: 'sum', by: (i % 7) + 1 }] }));
      const results = await Promise.all(calls);
      const expected = Array.from({ length: 1000 }, (_, i) => (i % 7) + 1).reduce((a, b) => a + b, 0);
      assert.deepEqual(await fn['state::get']({ scope: 'c', key: 'total' }), { sum: expected });
      // Every call saw a distinct before-state: no two read the same old value.
      const olds = new Set(results.map((r) => JSON.stringify(r.old_value)));
      assert.equal(olds.size, 1000);
    });

    withStore('writes issued together apply in order, each on its own', async ({ fn, events }) => {
      // Issued in one event-loop turn, none awaited: both stores group such writes (one
      // transaction, one script), and each must still answer as if it had run alone.
      const u = (key: string, ops: unknown[]) => fn['state::update']({ scope: 'b', key, ops });
      const results = await Promise.allSettled([
        fn['state::set']({ scope: 'b', key: 'k', value: 1 }),
        u('k', [{ type: 'increment', by: 2 }]),
        fn['state::update']({ scope: 'b', key: 'k', ops: [{ type: 'append', value: 'x' }], atomic: true }), // a type error: writes nothing, the others go on
        u('k', [{ type: 'increment', by: 4 }]),
        fn['state::set']({ scope: 'other', key: 'k', value: 'o' }),
        fn['state::delete']({ scope: 'b', key: 'never-set' }),
        u('k2', [{ type: 'set', path: 'a', value: [] }]),
        fn['state::delete']({ scope: 'other', key: 'k' }),
        u('k2', [{ type: 'increment', path: 'a' }, { type: 'set', path: 'b', value: 1 }]), // best-effort: ops[0] fails
      ]);
      const value = (i: number) => {
        const r = results[i]!;
        assert.equal(r.status, 'fulfilled', `write #${i}: ${r.status === 'rejected' ? (r.reason as Error).message : ''}`);
        return (r as PromiseFulfilledResult<unknown>).value;
      };
      assert.deepEqual(value(0), { old_value: null, new_value: 1 });
      assert.deepEqual(value(1), { old_value: 1, new_value: 3 });
      assert.equal(results[2]!.status, 'rejected');
      await rejectsWith(Promise.reject((results[2] as PromiseRejectedResult).reason), 'type_error', 'ops[0]', 'append', 'number 3');
      assert.deepEqual(value(3), { old_value: 3, new_value: 7 });
      assert.deepEqual(value(4), { old_value: null, new_value: 'o' });
      assert.equal(value(5), null);
      assert.deepEqual(value(6), { old_value: null, new_value: { a: [] } });
      assert.equal(value(7), 'o');
      const partial = value(8) as { new_value: unknown; errors: Array<{ op_index: number; code: string }> };
      assert.deepEqual([partial.new_value, partial.errors.map((e) => [e.op_index, e.code])], [{ a: [], b: 1 }, [[0, 'type_error']]]);
      assert.equal(await fn['state::get']({ scope: 'b', key: 'k' }), 7);
      assert.deepEqual(await fn['state::list']({ scope: 'b' }), [7, { a: [], b: 1 }]);
      assert.deepEqual(await fn['state::list_groups']({}), { groups: ['b'] });
      assert.deepEqual(
        events.map((e) => [e.event_type, e.scope, e.key, e.old_value, e.new_value]),
        [
          ['state:created', 'b', 'k', null, 1],
          ['state:updated', 'b', 'k', 1, 3],
          ['state:updated', 'b', 'k', 3, 7],
          ['state:created', 'other', 'k', null, 'o'],
          ['state:deleted', 'b', 'never-set', null, null],
          ['state:created', 'b', 'k2', null, { a: [] }],
          ['state:deleted', 'other', 'k', 'o', null],
          ['state:updated', 'b', 'k2', { a: [] }, { a: [], b: 1 }],
        ],
      );
    });

    test('close() lets the writes already issued finish first', async () => {
      const store = await open(LIMITS);
      const fn = stateFunctions(store, LIMITS);
      const writes = Array.from({ length: 50 }, () => fn['state::update']({ scope: 'c', key: 'n', ops: [{ type: 'increment' }] }));
      await store.close();
      const results = await Promise.all(writes);
      assert.deepEqual(
        results.map((r) => r.new_value as number).sort((a, b) => a - b),
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
    });

    withStore('concurrent appends and sets on one key lose nothing', async ({ fn }) => {
      await Promise.all(Array.from({ length: 300 }, (_, i) => fn['state::update']({ scope: 'c', key: 'log', ops: [{ type: 'append', path: 'items', value: i }] })));
      const got = (await fn['state::get']({ scope: 'c', key: 'log' })) as { items: number[] };
      assert.deepEqual([...got.items].sort((a, b) => a - b), Array.from({ length: 300 }, (_, i) => i));
      const sets = await Promise.all(Array.from({ length: 100 }, (_, i) => fn['state::set']({ scope: 'c', key: 'reg', value: i })));
      // The old values form one chain: each write saw exactly one predecessor.
      assert.equal(new Set(sets.map((s) => s.old_value)).size, 100);
    });
  });
}
