/**
 * svc-queue follows the trigger-binding rule (docs/security.md, "Trigger bindings"): binding
 * `durable:subscriber` needs the right to read what a subscription delivers (queue::jobs), and every
 * delivery of a topic's copy is made for a live binding of its subscription, so it runs with the
 * subscriber's rights, never svc-queue's. Plain jobs run with svc-queue's rights: the engine checks
 * at enqueue time that the caller may call the job's function. A real engine with tokens, the real
 * svc-queue (embedded store) on a token that may not call the subscribers' functions.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvocationError, publish, TriggerAction, type Worker } from 'svc-sdk';
import { adminToken, bindingRequires, token } from '../../helpers/tokens.js';
import { startEngine } from '../../helpers/engine.js';
import { WorkerPool } from '../../helpers/util.js';
import { startQueueWorker, type RunningQueueWorker } from '../../../src/workers/queue/worker.js';
import { parseQueueConfig } from '../../../src/workers/queue/config.js';
import { openEmbeddedQueueStore } from '../../../src/workers/queue/embedded-store.js';
import { UndeliverableCopyError } from '../../../src/workers/queue/policy.js';
import type { ClaimedJob, JobView } from '../../../src/workers/queue/store.js';
import { HEARTBEAT_MS, Subscriptions } from '../../../src/workers/queue/topics.js';
import { sleep, until } from './helpers.js';

const ADMIN = 'admin-secret-0123456789';
const QUEUE = 'queue-secret-0123456789';
const SUB = 'sub-secret-01234567890a';
const SPY = 'spy-secret-0123456789ab';
const PUB = 'pub-secret-0123456789ab';

describe('svc-queue: durable:subscriber bindings and deliveries follow the binder’s rights', { timeout: 60_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let queue: RunningQueueWorker;
  let admin: Worker;
  let dir: string;
  const pool = new WorkerPool(() => eng.url);
  const jobs = (state: 'waiting' | 'dlq') => admin.trigger<{ jobs: JobView[] }>({ function_id: 'queue::jobs', payload: { queue: 'default', state } }).then((r) => r.jobs);

  before(async () => {
    eng = await startEngine({
      tokens: [
        adminToken(ADMIN),
        // svc-queue may run the `plain::*` jobs, and nothing of the subscribers (`sub::*`).
        token('queue', QUEUE, {
          call: ['engine::functions::info', 'queue::list', 'plain::*'],
          register: ['engine::queue::enqueue', 'queue::*', 'iii::durable::publish', 'iii::queue::*'],
          trigger_types: ['durable:subscriber'],
          names: ['svc-queue'],
        }),
        token('sub', SUB, { call: ['queue::jobs'], register: ['sub::*', 'plain::*'] }),
        token('spy', SPY, { register: ['spy::*'] }),
        token('pub', PUB, { call: ['queue::publish'] }),
      ],
    });
    dir = mkdtempSync(join(tmpdir(), 'svc-queue-rights-'));
    queue = await startQueueWorker({ url: `${eng.url}/?token=${QUEUE}`, config: { data_dir: dir } });
    admin = pool.make('admin', { token: ADMIN });
    await admin.ready();
  });
  after(async () => {
    await pool.closeAll();
    await queue?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('durable:subscriber declares what a binder needs: queue::jobs', async () => {
    assert.deepEqual(await bindingRequires(admin, 'durable:subscriber'), ['queue::jobs']);
  });

  test('a token that may not read queued jobs cannot subscribe, and gets no copy', async () => {
    const spy = pool.make('spy', { token: SPY });
    spy.on('error', () => {});
    const seen: unknown[] = [];
    spy.registerFunction('spy::orders', (d: unknown) => void seen.push(d));
    await assert.rejects(spy.registerTrigger({ type: 'durable:subscriber', function_id: 'spy::orders', config: { topic: 'orders' } }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'forbidden');
      assert.match(e.message, /Token "spy" may not bind a "durable:subscriber" trigger: binding one needs the right to call queue::jobs/);
      return true;
    });
    assert.equal((await publish(admin, 'orders', { card: '4242' })).copies, 0);
    await sleep(200);
    assert.deepEqual(seen, []);
  });

  test('a subscriber with the right gets its copies, delivered with its rights (svc-queue may not call its function)', async () => {
    const sub = pool.make('billing', { token: SUB });
    const seen: unknown[] = [];
    sub.registerFunction('sub::billing', (d: unknown) => void seen.push(d));
    await sub.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::billing', config: { topic: 'invoices' } });
    assert.equal((await publish(admin, 'invoices', { n: 1 })).copies, 1);
    await until('the copy to be delivered', () => seen.length === 1);
    assert.deepEqual(seen, [{ n: 1 }]);
    assert.deepEqual(await jobs('dlq'), [], 'no attempt failed');
  });

  test('a copy made while its subscriber was away waits, burning no attempt, and goes with the new binding when it is back', async () => {
    const first = pool.make('away', { token: SUB });
    first.registerFunction('sub::away', () => null);
    await first.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::away', config: { topic: 'away' } });
    await first.shutdown();
    await until('the binding to be gone', async () => {
      const { triggers } = await admin.trigger<{ triggers: Array<{ function_id: string }> }>({ function_id: 'engine::registered-triggers::list' });
      return !triggers.some((t) => t.function_id === 'sub::away');
    });
    // The function is served again, but not bound yet: the copy must not go out without a binding.
    const early: unknown[] = [];
    const unbound = pool.make('away-unbound', { token: SUB });
    unbound.registerFunction('sub::away', (d: unknown) => void early.push(d));
    await unbound.ready();
    assert.equal((await publish(admin, 'away', { n: 2 })).copies, 1, 'the subscription is kept while its subscriber is away');
    await sleep(1500);
    assert.deepEqual(early, [], 'not delivered before a binding is back');
    const waiting = (await jobs('waiting')).filter((j) => j.function_id === 'sub::away');
    assert.deepEqual(waiting.map((j) => [j.topic, j.attempts, j.failures]), [['away', 0, 0]], 'it waits, with no attempt counted');

    const back = pool.make('away-back', { token: SUB });
    const delivered: Array<{ d: unknown; attempt: number }> = [];
    back.registerFunction('sub::away', (d: unknown, ctx) => void delivered.push({ d, attempt: (ctx.metadata as { attempt: number }).attempt }));
    await unbound.shutdown();
    await back.registerTrigger({ type: 'durable:subscriber', function_id: 'sub::away', config: { topic: 'away' } });
    await until('the copy to be delivered after the subscriber is back', () => delivered.length === 1);
    assert.deepEqual(delivered, [{ d: { n: 2 }, attempt: 1 }]);
    assert.deepEqual(early, []);
  });

  test('a copy is never delivered for a binding the engine does not know: it waits, burning no attempt', async () => {
    // plain::forged is a function svc-queue's own token may call: only the binding rule keeps the
    // copy of a subscription it holds no engine-known binding of from going out with svc-queue's rights.
    const w = pool.make('forged', { token: SUB });
    const seen: unknown[] = [];
    w.registerFunction('plain::forged', (d: unknown) => void seen.push(d));
    await w.ready();
    await queue.subscriptions.register({ id: 'forged-binding', trigger_type: 'durable:subscriber', function_id: 'plain::forged', config: { topic: 'forged' } });
    assert.equal((await publish(admin, 'forged', { secret: 1 })).copies, 1);
    await until('plain::forged to be left out of claims', async () => {
      const l = await admin.trigger<{ absent_functions: string[] }>({ function_id: 'queue::list' });
      return l.absent_functions.includes('plain::forged');
    });
    await sleep(1500);
    assert.deepEqual(seen, [], 'the handler never ran');
    const waiting = (await jobs('waiting')).filter((j) => j.function_id === 'plain::forged');
    assert.deepEqual(waiting.map((j) => [j.topic, j.attempts, j.failures]), [['forged', 0, 0]]);
    await admin.trigger({ function_id: 'queue::purge', payload: { queue: 'default' } });
  });

  test('plain jobs: a caller that may not call a function cannot enqueue it; one that may, can', async () => {
    const runs: unknown[] = [];
    const w = pool.make('plain', { token: SUB });
    w.registerFunction('plain::work', (d: unknown) => void runs.push(d));
    await w.ready();
    const pub = pool.make('publisher', { token: PUB });
    await pub.ready();
    await assert.rejects(pub.trigger({ function_id: 'plain::work', payload: { n: 1 }, action: TriggerAction.Enqueue({ queue: 'default' }) }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'forbidden');
      assert.match(e.message, /Token "pub" may not call plain::work/);
      return true;
    });
    // The job's function runs with svc-queue's rights (its token may call plain::*).
    await admin.trigger({ function_id: 'plain::work', payload: { n: 2 }, action: TriggerAction.Enqueue({ queue: 'default' }) });
    await until('the admin’s job to run', () => runs.length === 1);
    assert.deepEqual(runs, [{ n: 2 }]);
  });
});

test('a copy without a binding here waits while its subscription lives, and is dead once it ended', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-queue-ended-'));
  const store = await openEmbeddedQueueStore({ dataDir: dir });
  try {
    const config = parseQueueConfig({ data_dir: dir, subscriber_retention_ms: 60_000 });
    let now = 1_000_000;
    const subs = new Subscriptions(store, config, () => {}, () => now);
    await store.subscribe([{ topic: 'news', function_id: 'sub::news', queue: 'default', binding: 'gone' }], now);
    const copy: ClaimedJob & { topic: string } = { id: 'c.1', queue: 'default', functionId: 'sub::news', data: '{}', attempt: 1, failures: 0, group: null, enqueuedAt: now, traceparent: null, metadata: null, topic: 'news', binding: 'gone' };
    const verdict = (p: Promise<unknown>) =>
      p.then(
        () => 'delivered',
        (e: unknown) => (e instanceof UndeliverableCopyError ? `${e.verdict} ${e.code}` : String(e)),
      );
    assert.equal(await verdict(subs.bindingForCopy(copy)), 'unbound binding_not_found');
    now += config.subscriberRetentionMs + 3 * HEARTBEAT_MS + 1; // just past the retention and its slack
    assert.equal(await verdict(subs.bindingForCopy(copy)), 'ended subscription_ended');
    // Bound again (here, by this process): the copy goes with that binding.
    await subs.register({ id: 'again', trigger_type: 'durable:subscriber', function_id: 'sub::news', config: { topic: 'news' } });
    assert.equal(await subs.bindingForCopy(copy), 'again');
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
