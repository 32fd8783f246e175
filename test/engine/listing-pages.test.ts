/**
 * Listings in pages (src/engine/listing-pages.ts): however much workers register, a listing answers
 * (a page and `next`) instead of failing with result_too_large; a small one is answered whole as
 * before. The engine runs with small frames so that a few hundred registrations fill one.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError, type Worker } from 'svc-sdk';
import { encodesWithin, listAll } from '../../src/engine/listing-pages.js';
import { startEngine } from '../helpers/engine.js';
import { eventually, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
type Page = { functions: Array<{ function_id: string; namespace: string }>; next?: string };

describe('listings in pages', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  let big: Worker;
  let caller: Worker;
  const N = 300;

  before(async () => {
    // Pages of at most 64 KiB / 4 characters: 300 functions with 200-character descriptions need several.
    eng = await startEngine({ maxFrameBytes: 64 * 1024 });
    big = pool.make('registers-a-lot', { maxFrameBytes: 64 * 1024 });
    for (let i = 0; i < N; i++) big.registerFunction(`many::f${String(i).padStart(3, '0')}`, () => null, { description: 'd'.repeat(200) });
    caller = pool.make('lister', { maxFrameBytes: 64 * 1024 });
    await Promise.all([big.ready(), caller.ready()]);
    await eventually(() => assert.ok(eng.engine.registry.get(`many::f${N - 1}`)), 5000);
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  const list = (payload: Record<string, unknown> = {}): Promise<Page> => caller.trigger<Page>({ function_id: 'engine::functions::list', payload: { include_builtins: false, ...payload } });

  test('a listing over one page answers its first page and next; following next gives every entry once, in id order', async () => {
    const first = await list();
    assert.ok(first.next, 'more than one page');
    assert.ok(first.functions.length > 0 && first.functions.length < N, `first page has ${first.functions.length}`);
    const all = await listAll<{ function_id: string }>((d) => list(d), 'functions');
    const ids = all.map((f) => f.function_id);
    assert.equal(ids.length, N);
    assert.equal(new Set(ids).size, N, 'no entry twice');
    assert.deepEqual(ids, [...ids].sort(), 'in id order');
  });

  test('limit bounds a page; after continues; a bad limit or after is invalid_payload naming it', async () => {
    const p1 = await list({ limit: 10 });
    assert.deepEqual(p1.functions.map((f) => f.function_id), Array.from({ length: 10 }, (_, i) => `many::f${String(i).padStart(3, '0')}`));
    const p2 = await list({ limit: 10, after: p1.next });
    assert.equal(p2.functions[0]!.function_id, 'many::f010');
    await assert.rejects(list({ limit: 0 }), (e: InvocationError) => e.code === 'invalid_payload' && /"limit" must be an integer from 1 to 10000, got 0/.test(e.message));
    await assert.rejects(list({ after: 5 }), (e: InvocationError) => e.code === 'invalid_payload' && /"after" must be the "next" of the previous page/.test(e.message));
  });

  test('a listing that fits is answered whole, in its usual order, without next', async () => {
    const r = await caller.trigger<{ workers: Array<{ name: string }>; next?: string }>({ function_id: 'engine::workers::list' });
    assert.equal(r.next, undefined);
    assert.deepEqual(r.workers.map((w) => w.name), ['registers-a-lot', 'lister'], 'connection order, as before');
  });
});

test("measuring a listing: encodesWithin agrees with the length of JSON.stringify exactly, at the bound and one under", () => {
  const entry = (i: number): Record<string, unknown> => ({ id: `e${i}`, text: 'é\n"'.repeat(i % 7), n: i, nested: i % 3 ? { a: [i] } : null });
  for (const n of [0, 1, 2, 63, 64, 65, 128, 129, 300]) {
    const all = Array.from({ length: n }, (_, i) => entry(i));
    const chars = JSON.stringify(all).length;
    assert.equal(encodesWithin(all, chars), true, `${n} entries in ${chars} characters`);
    assert.equal(encodesWithin(all, chars - 1), false, `${n} entries not in ${chars - 1} characters`);
  }
});
