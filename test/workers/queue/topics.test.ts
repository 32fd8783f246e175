/**
 * Durable topics through a real engine: durable:subscriber bindings, one copy per subscriber with
 * its own retries, replicas of a subscriber competing for its copy, a later subscriber getting only
 * later messages, and a subscriber that was briefly away getting what was published meanwhile.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publish, registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startQueueWorker, type RunningQueueWorker } from '../../../src/workers/queue/worker.js';
import { sleep, until } from './helpers.js';

type Engine = Awaited<ReturnType<typeof startEngine>>;

describe('durable topics (durable:subscriber)', () => {
  let engine: Engine;
  let queue: RunningQueueWorker;
  let client: Worker;
  let dir: string;
  const workers: Worker[] = [];
  const make = (name: string): Worker => {
    const w = registerWorker(engine.url, { workerName: name, echoLogs: false });
    workers.push(w);
    return w;
  };

  before(async () => {
    engine = await startEngine();
    dir = mkdtempSync(join(tmpdir(), 'svc-queue-t-'));
    queue = await startQueueWorker({ url: engine.url, config: { data_dir: dir, queues: { events: { max_attempts: 3, backoff_ms: 50 } } } });
    client = make('topic-client');
    await client.ready();
  });
  after(async () => {
    for (const w of workers) await w.shutdown(0);
    await queue?.shutdown();
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('each subscriber gets its own copy with its own retries; replicas of one subscriber compete for it', async () => {
    const a: unknown[] = [];
    const b: Array<{ replica: number; data: unknown; topic: unknown }> = [];
    let bFailures = 0;
    const subA = make('sub-a');
    subA.registerFunction('sub::a', async (data: unknown) => void a.push(data));
    await subA.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::a', config: { topic: 'orders' } });
    for (const replica of [1, 2]) {
      const w = make(`sub-b-${replica}`);
      w.registerFunction('sub::b', async (data: unknown, ctx) => {
        // The first run of each copy fails: b retries on its own, a is not affected.
        if ((ctx.metadata as { attempt: number }).attempt === 1) {
          bFailures++;
          throw new Error('b is flaky');
        }
        b.push({ replica, data, topic: (ctx.metadata as { topic: unknown }).topic });
      });
      await w.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::b', config: { topic: 'orders', queue: 'events' } });
    }
    const sent = await Promise.all(Array.from({ length: 20 }, (_, n) => publish(client, 'orders', { n })));
    assert.ok(sent.every((r) => r.copies === 2 && r.topic === 'orders' && typeof r.message_id === 'string'), JSON.stringify(sent[0]));
    await until('every copy to run', () => a.length === 20 && b.length === 20);
    await sleep(200);
    assert.equal(a.length, 20, 'a got each message once');
    assert.equal(b.length, 20, 'b got each message once, over both replicas');
    assert.equal(bFailures, 20);
    assert.deepEqual(new Set(b.map((x) => x.topic)), new Set(['orders']));
    assert.deepEqual(b.map((x) => (x.data as { n: number }).n).sort((x, y) => x - y), Array.from({ length: 20 }, (_, n) => n));
    assert.ok(new Set(b.map((x) => x.replica)).size === 2, 'both replicas of sub::b ran copies');
  });

  test('a subscriber added later gets only later messages; one briefly away gets what was published meanwhile', async () => {
    const seen: Record<string, number[]> = { early: [], late: [] };
    const early = make('sub-early');
    early.registerFunction('sub::early', async (d: { n: number }) => void seen.early!.push(d.n));
    await early.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::early', config: { topic: 'news' } });
    assert.equal((await publish(client, 'news', { n: 1 })).copies, 1);
    await until('early to get n=1', () => seen.early!.length === 1);

    const late = make('sub-late');
    late.registerFunction('sub::late', async (d: { n: number }) => void seen.late!.push(d.n));
    await late.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::late', config: { topic: 'news' } });
    assert.equal((await publish(client, 'news', { n: 2 })).copies, 2);
    await until('both to get n=2', () => seen.early!.length === 2 && seen.late!.length === 1);
    assert.deepEqual(seen.late, [2], 'the later subscriber did not get n=1');

    // early goes away (its binding is removed by the engine), and comes back as a new worker.
    await early.shutdown(0);
    await until('the binding to be gone', async () => {
      const t = await client.trigger<{ triggers: Array<{ function_id: string }> }>({ function_id: 'engine::registered-triggers::list', payload: {} });
      return !t.triggers.some((x) => x.function_id === 'sub::early');
    });
    assert.equal((await publish(client, 'news', { n: 3 })).copies, 2, 'the subscription is kept while its worker is away');
    await until('late to get n=3', () => seen.late!.length === 2);
    const back = make('sub-early-again');
    back.registerFunction('sub::early', async (d: { n: number }) => void seen.early!.push(d.n));
    await back.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::early', config: { topic: 'news' } });
    await until('early to get n=3 after coming back', () => seen.early!.length === 3);
    assert.deepEqual(seen.early, [1, 2, 3]);

    const l = await client.trigger<{ topics: Array<{ topic: string; subscribers: Array<{ function_id: string; live: boolean; queue: string }> }> }>({ function_id: 'queue::list', payload: {} });
    const news = l.topics.find((t) => t.topic === 'news')!;
    assert.deepEqual(news.subscribers.map((s) => [s.function_id, s.queue, s.live]).sort(), [
      ['sub::early', 'default', true],
      ['sub::late', 'default', true],
    ]);
  });

  test('a message published without data reaches the subscriber as {}, as a call without payload does', async () => {
    const got: unknown[] = [];
    const sub = make('sub-empty');
    sub.registerFunction('sub::empty', async (data: unknown) => void got.push(data));
    await sub.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::empty', config: { topic: 'empty' } });
    assert.equal((await publish(client, 'empty')).copies, 1);
    assert.equal((await client.trigger<{ copies: number }>({ function_id: 'queue::publish', payload: { topic: 'empty', data: null } })).copies, 1);
    await client.trigger({ function_id: 'sub::empty' });
    await until('both copies and the call', () => got.length === 3);
    assert.deepEqual(got, [{}, {}, {}]);
  });

  test('bindings with a bad config are refused with a clear error', async () => {
    const w = make('sub-bad');
    w.registerFunction('sub::bad', async () => null);
    await assert.rejects(w.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::bad', config: { topic: 'x', queue: 'nope' } }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'unknown_queue');
      assert.match(e.message, /config\.queue "nope" is not configured; configured queues: events, default; add it to svc-queue's config \(svc worker add svc-queue --set queues\.nope\.max_attempts=3\)/);
      return true;
    });
    await assert.rejects(w.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::bad', config: {} }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'invalid_payload');
      assert.match(e.message, /config\.topic must be a non-empty string/);
      return true;
    });
    // A lone surrogate would be stored as U+FFFD: two topics would become one.
    await assert.rejects(w.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::bad', config: { topic: 'half\ud800' } }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'invalid_payload');
      assert.match(e.message, /config\.topic .*lone surrogates/);
      return true;
    });
    await assert.rejects(client.trigger({ function_id: 'queue::publish', payload: { topic: 'half\udc00', data: {} } }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'invalid_payload');
      assert.match(e.message, /"topic" .* is not valid Unicode \(lone surrogate\)/);
      return true;
    });
    // The function id is held to a job's bound (256 bytes): a longer one (up to the engine's 1,024
    // characters: 2,000 bytes of UTF-8 here) failed the embedded store's commit, its key too long.
    for (const function_id of ['💥'.repeat(500), 'f'.repeat(300), 'sub::\u0000x']) {
      await assert.rejects(w.registerTrigger({ type: 'durable:subscriber', function_id, config: { topic: 'x' } }), (e: Error & { code?: string }) => {
        assert.equal(e.code, 'invalid_payload', e.message);
        assert.match(e.message, /function_id must be at most 256 bytes without control characters or lone surrogates/);
        assert.ok(e.message.length < 400, e.message.slice(0, 400));
        return true;
      });
    }
    // iii's shape: queue_config is accepted (settings come from svc-queue's config).
    await w.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::bad', config: { topic: 'iii-style', queue_config: { max_retries: 5 } } });
    assert.equal((await client.trigger<{ copies: number }>({ function_id: 'iii::durable::publish', payload: { topic: 'iii-style', data: { ok: true } } })).copies, 1);
  });
});
