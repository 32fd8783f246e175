/**
 * svc-state through a real engine: functions called by another worker over WebSocket, errors with
 * their codes, the `state` trigger type, the quickstart's concurrent running total, and two engines
 * sharing one Redis.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startStateWorker, type RunningStateWorker } from '../../../src/workers/state/worker.js';
import { startRedis, type RedisServer } from './redis-server.js';
import type { StateEvent } from '../../../src/workers/state/service.js';

type Engine = Awaited<ReturnType<typeof startEngine>>;

async function callError(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code: string; message: string };
  }
  assert.fail('expected the call to fail');
}

async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('svc-state through the engine (embedded store)', () => {
  let engine: Engine;
  let state: RunningStateWorker;
  let client: Worker;
  let dir: string;
  const call = <T = unknown>(function_id: string, payload: unknown) => client.trigger<T>({ function_id, payload });

  before(async () => {
    engine = await startEngine();
    dir = mkdtempSync(join(tmpdir(), 'svc-state-w-'));
    state = await startStateWorker({ url: engine.url, config: { data_dir: dir, max_value_bytes: 4096 } });
    client = registerWorker(engine.url, { workerName: 'state-test-client', echoLogs: false });
    await client.ready();
  });
  after(async () => {
    await client?.shutdown();
    await state?.shutdown();
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every function answers over the wire', async () => {
    assert.equal(await call('state::get', { scope: 'w', key: 'k' }), null);
    assert.deepEqual(await call('state::set', { scope: 'w', key: 'k', value: { n: 1 } }), { old_value: null, new_value: { n: 1 } });
    assert.deepEqual(await call('state::update', { scope: 'w', key: 'k', ops: [{ type: 'increment', path: 'n', by: 2 }] }), {
      old_value: { n: 1 },
      new_value: { n: 3 },
    });
    assert.deepEqual(await call('state::list', { scope: 'w' }), [{ n: 3 }]);
    assert.ok((await call<{ groups: string[] }>('state::list_groups', {})).groups.includes('w'));
    assert.deepEqual(await call('state::delete', { scope: 'w', key: 'k' }), { n: 3 });
    assert.equal(await call('state::get', { scope: 'w', key: 'k' }), null);
  });

  test('errors reach the caller with their code and a message naming the input', async () => {
    const tooBig = await callError(call('state::set', { scope: 'w', key: 'big', value: 'x'.repeat(5000) }));
    assert.equal(tooBig.code, 'value_too_large');
    assert.match(tooBig.message, /key "big".*4096/);
    await call('state::set', { scope: 'w', key: 'name', value: 'ada' });
    const typeErr = await callError(call('state::update', { scope: 'w', key: 'name', ops: [{ type: 'increment' }], atomic: true }));
    assert.equal(typeErr.code, 'type_error');
    assert.match(typeErr.message, /key "name"/);
    // Best-effort (the default, as iii): the same failure is an entry of the answer's errors.
    const partial = await call<{ new_value: unknown; errors: Array<{ op_index: number; code: string; message: string }> }>('state::update', {
      scope: 'w',
      key: 'name',
      ops: [{ type: 'increment' }],
    });
    assert.deepEqual([partial.new_value, partial.errors.map((e) => [e.op_index, e.code])], ['ada', [[0, 'type_error']]]);
    assert.equal(await call('state::get', { scope: 'w', key: 'name' }), 'ada');
    const bad = await callError(call('state::get', { scope: 'w' }));
    assert.equal(bad.code, 'invalid_payload');
    assert.match(bad.message, /"key"/);
  });

  test('the quickstart running total is exact under 500 concurrent math::add calls', async () => {
    // As the quickstart's math::add does: add c to the total with one atomic increment.
    const math = registerWorker(engine.url, { workerName: 'math-worker', echoLogs: false });
    try {
      math.registerFunction('math::add', async (d: { a: number; b: number }, ctx) => {
        const c = d.a + d.b;
        const r = await ctx.worker.trigger<{ new_value: number }>({
          function_id: 'state::update',
          payload: { scope: 'quickstart', key: 'total', ops: [{ type: 'increment', by: c }] },
        });
        return { c, total: r.new_value };
      });
      await math.ready();
      const inputs = Array.from({ length: 500 }, (_, i) => ({ a: i, b: 1 }));
      // Retry only the very first call until math::add is registered in the engine.
      for (let i = 0; ; i++) {
        try {
          await call('math::add', { a: 0, b: 0 });
          break;
        } catch (e) {
          if ((e as { code?: string }).code !== 'function_not_found' || i > 100) throw e;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const results = await Promise.all(inputs.map((p) => call<{ c: number; total: number }>('math::add', p)));
      const sum = inputs.reduce((s, p) => s + p.a + p.b, 0);
      assert.equal(await call('state::get', { scope: 'quickstart', key: 'total' }), sum);
      assert.equal(new Set(results.map((r) => r.total)).size, 500, 'every call saw its own total');
    } finally {
      await math.shutdown();
    }
  });

  test('the state trigger fires bound functions on matching changes only', async () => {
    const watcher = registerWorker(engine.url, { workerName: 'watcher', echoLogs: false });
    const seen: StateEvent[] = [];
    const keyOnly: StateEvent[] = [];
    try {
      watcher.registerFunction('watch::scope', async (e: StateEvent) => void seen.push(e));
      watcher.registerFunction('watch::key', async (e: StateEvent) => void keyOnly.push(e));
      watcher.registerFunction('watch::only_big', async (e: StateEvent) => typeof e.new_value === 'number' && e.new_value > 100);
      await watcher.ready();
      await watcher.registerTrigger({ type: 'state', function_id: 'watch::scope', config: { scope: 'watched' } });
      await watcher.registerTrigger({ type: 'state', function_id: 'watch::key', config: { scope: 'watched', key: 'big', condition_function_id: 'watch::only_big' } });
      const refused = await callError(watcher.registerTrigger({ type: 'state', function_id: 'watch::scope', config: { scope: 7 } }));
      assert.equal(refused.code, 'invalid_payload');
      assert.match(refused.message, /config\.scope/);
      // state::* refuses such a scope, so this binding could never fire.
      const lone = await callError(watcher.registerTrigger({ type: 'state', function_id: 'watch::scope', config: { scope: 'half\uD800' } }));
      assert.equal(lone.code, 'invalid_payload');
      assert.match(lone.message, /config\.scope .* is not valid Unicode \(lone surrogate\)/);

      await call('state::set', { scope: 'watched', key: 'a', value: 1 });
      await call('state::update', { scope: 'watched', key: 'a', ops: [{ type: 'increment' }] });
      await call('state::set', { scope: 'elsewhere', key: 'a', value: 1 });
      await call('state::delete', { scope: 'watched', key: 'a' });
      await call('state::set', { scope: 'watched', key: 'big', value: 5 });
      await call('state::set', { scope: 'watched', key: 'big', value: 500 });
      await until(() => seen.length >= 5 && keyOnly.length >= 1, 'trigger events');
      await new Promise((r) => setTimeout(r, 100)); // nothing more arrives
      assert.deepEqual(
        seen.map((e) => [e.event_type, e.scope, e.key, e.old_value, e.new_value]),
        [
          ['state:created', 'watched', 'a', null, 1],
          ['state:updated', 'watched', 'a', 1, 2],
          ['state:deleted', 'watched', 'a', 2, null],
          ['state:created', 'watched', 'big', null, 5],
          ['state:updated', 'watched', 'big', 5, 500],
        ],
      );
      assert.deepEqual(keyOnly.map((e) => e.new_value), [500]);
      assert.ok(seen.every((e) => e.type === 'state'));
    } finally {
      await watcher.shutdown();
    }
    // The watcher left: its bindings are gone and writes still succeed.
    await call('state::set', { scope: 'watched', key: 'after', value: 1 });
  });

  test("a fired trigger is the write's child in the trace (svc-state passes its parent explicitly)", async () => {
    const watcher = registerWorker(engine.url, { workerName: 'trace-watcher', echoLogs: false });
    const traceparents: string[] = [];
    try {
      watcher.registerFunction('watch::traced', async (_e: StateEvent, ctx) => void traceparents.push(ctx.traceparent ?? ''));
      await watcher.ready();
      await watcher.registerTrigger({ type: 'state', function_id: 'watch::traced', config: { scope: 'traced' } });
      await call('state::update', { scope: 'traced', key: 'k', ops: [{ type: 'increment' }] });
      await until(() => traceparents.length === 1, 'the fired call');
      const traceId = traceparents[0]!.split('-')[1]!;
      type Spans = { spans: Array<{ function_id: string; span_id: string; parent_span_id: string | null }> };
      let spans: Spans['spans'] = [];
      // The fired call's span is recorded when its answer reaches the engine, just after the handler ran.
      for (let i = 0; i < 50 && !spans.some((s) => s.function_id === 'watch::traced'); i++) {
        spans = (await call<Spans>('engine::traces::get', { trace_id: traceId })).spans;
        if (!spans.some((s) => s.function_id === 'watch::traced')) await new Promise((r) => setTimeout(r, 20));
      }
      const update = spans.find((s) => s.function_id === 'state::update');
      const fired = spans.find((s) => s.function_id === 'watch::traced');
      assert.ok(update, `state::update is in trace ${traceId}: ${JSON.stringify(spans)}`);
      assert.equal(fired?.parent_span_id, update.span_id);
    } finally {
      await watcher.shutdown();
    }
  });
});

describe('state::list of a scope larger than a frame', () => {
  let engine: Engine;
  let state: RunningStateWorker;
  let client: Worker;
  let dir: string;
  const FRAME = 64 * 1024;

  before(async () => {
    // A small frame limit, so that a scope of twenty 8 KB values does not fit in one answer.
    engine = await startEngine({ maxFrameBytes: FRAME });
    dir = mkdtempSync(join(tmpdir(), 'svc-state-pages-'));
    state = await startStateWorker({ url: engine.url, config: { data_dir: dir } });
    client = registerWorker(engine.url, { workerName: 'pager', echoLogs: false });
    await client.ready();
    for (let i = 0; i < 20; i++) await client.trigger({ function_id: 'state::set', payload: { scope: 'big', key: `k${String(i).padStart(2, '0')}`, value: 'v'.repeat(8 * 1024) } });
  });
  after(async () => {
    await client?.shutdown();
    await state?.shutdown();
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('unpaged: refused with a hint to page, not a frame error', async () => {
    const e = await callError(client.trigger({ function_id: 'state::list', payload: { scope: 'big' } }));
    assert.equal(e.code, 'result_too_large');
    assert.match(e.message, /scope "big" holds more than fits in one answer \(\d+ bytes\); page through it/);
  });

  test('paged: every entry, in order, each page within the engine\'s frame limit', async () => {
    const keys: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { entries: Array<{ key: string; value: string }>; next_cursor: string | null } = await client.trigger({
        function_id: 'state::list',
        payload: { scope: 'big', limit: 100, ...(cursor ? { cursor } : {}) },
      });
      assert.ok(page.entries.length > 0 && page.entries.length < 20, `a page of ${page.entries.length}`);
      keys.push(...page.entries.map((e) => e.key));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null);
    assert.deepEqual(keys, Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}`));
    assert.ok(pages >= 3, `${pages} pages`);
  });
});

describe('svc-state on Redis: two engines share one store', () => {
  let redis: RedisServer;
  const engines: Engine[] = [];
  const states: RunningStateWorker[] = [];
  const clients: Worker[] = [];

  before(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i++) {
      const e = await startEngine();
      engines.push(e);
      states.push(await startStateWorker({ url: e.url, config: { store: 'redis', redis_url: redis.url } }));
      const c = registerWorker(e.url, { workerName: `client-${i}`, echoLogs: false });
      await c.ready();
      clients.push(c);
    }
  });
  after(async () => {
    for (const c of clients) await c.shutdown();
    for (const s of states) await s.shutdown();
    for (const e of engines) await e.stop();
    await redis?.stop();
  });

  test('writes through either engine land in one exact total', async () => {
    const [a, b] = clients as [Worker, Worker];
    await a.trigger({ function_id: 'state::set', payload: { scope: 'shared', key: 'greeting', value: 'hello' } });
    assert.equal(await b.trigger({ function_id: 'state::get', payload: { scope: 'shared', key: 'greeting' } }), 'hello');
    const inc = (w: Worker) => w.trigger({ function_id: 'state::update', payload: { scope: 'shared', key: 'n', ops: [{ type: 'increment' }] } });
    await Promise.all(Array.from({ length: 400 }, (_, i) => inc(i % 2 ? a : b)));
    assert.equal(await a.trigger({ function_id: 'state::get', payload: { scope: 'shared', key: 'n' } }), 400);
  });
});
