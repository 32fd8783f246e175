/**
 * Three engines on loopback sharing one real redis-server: calls, errors, deadlines, balancing,
 * listings and trigger bindings across engines. (Failure of an engine: failover.test.ts.)
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { InvocationError, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually, sleep } from '../helpers/util.js';
import { clusterWorkers, startClusterEngine, SVC_BIN, type ClusterEngine } from './helpers.js';

const run = promisify(execFile);

describe('cluster: three engines, one redis', () => {
  let redis: RedisServer;
  let e1: ClusterEngine, e2: ClusterEngine, e3: ClusterEngine;
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const { make, shutdownAll } = clusterWorkers();
  /** Wait until `engine` routes `id` (registrations propagate through Redis asynchronously). */
  const visible = (caller: Worker, id: string, engines: number) =>
    eventually(async () => {
      const f = await caller.trigger<{ engines: string[] }>({ function_id: 'engine::functions::info', payload: { function_id: id } });
      assert.equal(f.engines.length, engines, JSON.stringify(f));
    }, 5000);

  before(async () => {
    redis = await startRedis();
    e1 = await startClusterEngine(redis.url, 'n1', prefix);
    e2 = await startClusterEngine(redis.url, 'n2', prefix);
    e3 = await startClusterEngine(redis.url, 'n3', prefix);
  });
  after(async () => {
    await shutdownAll();
    await Promise.all([e1, e2, e3].map((e) => e?.stop()));
    await redis?.stop();
  });

  it('sees every engine', async () => {
    const c = make(e1.url, 'nodes-caller');
    await eventually(async () => {
      const r = await c.trigger<{ node_id: string; nodes: Array<{ node_id: string }> }>({ function_id: 'engine::cluster::nodes' });
      assert.equal(r.node_id, 'n1');
      assert.deepEqual(r.nodes.map((n) => n.node_id).sort(), ['n1', 'n2', 'n3']);
    });
  });

  it('a worker on engine 1 calls a function on engine 3, with its errors and deadlines', async () => {
    const callee = make(e3.url, 'callee-3');
    let cancelled = 0;
    callee.registerFunction('x3::add', (d: { a: number; b: number }) => ({ c: d.a + d.b, served_by: 'n3' }));
    callee.registerFunction('x3::fail', () => {
      throw Object.assign(new Error('no such thing'), { code: 'my_code' });
    });
    callee.registerFunction('x3::slow', async (_d, ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      cancelled++;
      return null;
    });
    const caller = make(e1.url, 'caller-1');
    await visible(caller, 'x3::add', 1);
    assert.deepEqual(await caller.trigger({ function_id: 'x3::add', payload: { a: 2, b: 3 } }), { c: 5, served_by: 'n3' });

    await assert.rejects(caller.trigger({ function_id: 'x3::fail' }), (e: InvocationError) => e.code === 'my_code' && /no such thing/.test(e.message));
    await assert.rejects(caller.trigger({ function_id: 'x3::nope' }), (e: InvocationError) => e.code === 'function_not_found');

    const t0 = Date.now();
    await assert.rejects(caller.trigger({ function_id: 'x3::slow', timeoutMs: 400 }), (e: InvocationError) => e.code === 'timeout' && /after 400ms/.test(e.message));
    const took = Date.now() - t0;
    assert.ok(took >= 390 && took < 1500, `timeout after ${took} ms`);
    // The callee on engine 3 is told to stop, as for a local deadline.
    await eventually(() => assert.equal(cancelled, 1));

    // Many in flight at once, all answered correctly.
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => caller.trigger<{ c: number }>({ function_id: 'x3::add', payload: { a: i, b: 1 } })));
    results.forEach((r, i) => assert.equal(r.c, i + 1));
  });

  it('svc trigger against engine 2 reaches a function on engine 3', async () => {
    const callee = make(e3.url, 'cli-target-3');
    callee.registerFunction('x3::echo', (d: unknown) => ({ echoed: d }));
    await visible(make(e2.url, 'probe-2'), 'x3::echo', 1);
    const { stdout } = await run(process.execPath, [SVC_BIN, 'trigger', 'x3::echo', 'a=1', 'word=hi', '--address', e2.url]);
    assert.deepEqual(JSON.parse(stdout), { echoed: { a: 1, word: 'hi' } });
  });

  it('prefers a local provider and balances replicas across engines', async () => {
    const served: string[] = [];
    for (const [e, n] of [
      [e1, 'n1'],
      [e3, 'n3'],
    ] as const) {
      const w = make(e.url, `replica-${n}`);
      w.registerFunction('rep::who', () => {
        served.push(n);
        return n;
      });
    }
    const local = make(e1.url, 'local-caller-1');
    const remote = make(e2.url, 'remote-caller-2');
    await visible(remote, 'rep::who', 2);
    await visible(local, 'rep::who', 2);
    for (let i = 0; i < 20; i++) assert.equal(await local.trigger({ function_id: 'rep::who' }), 'n1');
    served.length = 0;
    for (let i = 0; i < 40; i++) await remote.trigger({ function_id: 'rep::who' });
    const n1 = served.filter((x) => x === 'n1').length;
    assert.ok(n1 >= 10 && n1 <= 30, `engine 2 balanced its calls: ${n1} of 40 went to n1`);
  });

  it('lists the workers and functions of the whole cluster, with the engine of each', async () => {
    const w = make(e2.url, 'listed-2');
    w.registerFunction('list::two', () => null);
    const probe = make(e1.url, 'lister-1');
    await visible(probe, 'list::two', 1);
    const { workers: ws } = await probe.trigger<{ workers: Array<{ name: string; engine: string }> }>({ function_id: 'engine::workers::list' });
    assert.equal(ws.find((x) => x.name === 'listed-2')?.engine, 'n2');
    assert.equal(ws.find((x) => x.name === 'lister-1')?.engine, 'n1');
    const { functions } = await probe.trigger<{ functions: Array<{ function_id: string; workers: Array<{ worker_name: string; engine: string }> }> }>({
      function_id: 'engine::functions::list',
    });
    assert.deepEqual(functions.find((f) => f.function_id === 'list::two')?.workers.map((x) => [x.worker_name, x.engine]), [['listed-2', 'n2']]);
    const info = await probe.trigger<{ engine: string }>({ function_id: 'engine::workers::info', payload: { name: 'listed-2' } });
    assert.equal(info.engine, 'n2');
    // A function that leaves on its engine leaves every engine's registry.
    await w.shutdown();
    await eventually(async () => {
      await assert.rejects(probe.trigger({ function_id: 'list::two' }), (e: InvocationError) => e.code === 'function_not_found');
    }, 5000);
  });

  it('hands a trigger binding to the provider of its type on another engine', async () => {
    const seen: Array<{ op: string; id: string; config: unknown }> = [];
    const provider = make(e2.url, 'provider-2');
    await provider.registerTriggerType(
      { id: 'test-events', description: 'test events' },
      {
        registerTrigger: (b) => {
          if ((b.config as { refuse?: boolean }).refuse) throw Object.assign(new Error('refused by provider'), { code: 'bad_config' });
          seen.push({ op: 'register', id: b.id, config: b.config });
        },
        unregisterTrigger: (b) => void seen.push({ op: 'unregister', id: b.id, config: b.config }),
      },
    );
    const owner = make(e1.url, 'owner-1');
    owner.registerFunction('evt::handle', (d: { n: number }) => ({ handled: d.n }));
    await eventually(async () => {
      const r = await owner.trigger<{ trigger_types: Array<{ id: string }> }>({ function_id: 'engine::triggers::list' });
      assert.ok(r.trigger_types.some((t) => t.id === 'test-events'));
    }, 5000);
    const binding = await owner.registerTrigger({ type: 'test-events', function_id: 'evt::handle', config: { topic: 'a' } });
    assert.deepEqual(seen, [{ op: 'register', id: binding.id, config: { topic: 'a' } }]);
    // The provider fires the event: a call from engine 2 to the function on engine 1.
    await visible(provider, 'evt::handle', 1);
    assert.deepEqual(await provider.trigger({ function_id: 'evt::handle', payload: { n: 7 } }), { handled: 7 });
    // A refusal travels back to the owner.
    await assert.rejects(owner.registerTrigger({ type: 'test-events', function_id: 'evt::handle', config: { refuse: true } }), (e: InvocationError) => e.code === 'bad_config');
    binding.unregister();
    await eventually(() => assert.deepEqual(seen.at(-1), { op: 'unregister', id: binding.id, config: { topic: 'a' } }));
  });

  it('serves an http route registered on engine 1 from svc-http on every engine (http is binding_mode all)', async () => {
    const { startHttpWorker } = await import('../../src/workers/http/worker.js');
    const https = [await startHttpWorker({ url: e2.url, port: 0, host: '127.0.0.1', requestLog: false }), await startHttpWorker({ url: e3.url, port: 0, host: '127.0.0.1', requestLog: false })];
    try {
      const owner = make(e1.url, 'http-owner-1');
      owner.registerFunction('web::hello', (req: { body: { name: string } }) => ({ status_code: 200, body: { hello: req.body.name } }));
      await eventually(async () => {
        const r = await owner.trigger<{ trigger_types: Array<{ id: string; binding_mode: string }> }>({ function_id: 'engine::triggers::list' });
        assert.equal(r.trigger_types.find((t) => t.id === 'http')?.binding_mode, 'all');
      }, 5000);
      // Engine 3's svc-http may become known on engine 1 after the binding is made: it is handed the binding then.
      const binding = await owner.registerTrigger({ type: 'http', function_id: 'web::hello', config: { api_path: '/hello', http_method: 'POST' } });
      // A third svc-http, on engine 1 itself, after the binding: it is handed the route too.
      https.push(await startHttpWorker({ url: e1.url, port: 0, host: '127.0.0.1', requestLog: false }));
      const hello = (port: number) => fetch(`http://127.0.0.1:${port}/hello`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'cluster' }) });
      for (const h of https) {
        await eventually(async () => {
          const res = await hello(h.port);
          assert.equal(res.status, 200, await res.clone().text());
          assert.deepEqual(await res.json(), { hello: 'cluster' });
        }, 5000);
      }
      binding.unregister();
      for (const h of https) await eventually(async () => assert.equal((await hello(h.port)).status, 404), 5000);
    } finally {
      for (const h of https) await h.shutdown();
    }
  });

  it('an engine that stops leaves the others at once', async () => {
    const e4 = await startClusterEngine(redis.url, 'n4', prefix);
    const w = make(e4.url, 'short-lived-4');
    w.registerFunction('x4::f', () => 4);
    const probe = make(e1.url, 'probe-4');
    await visible(probe, 'x4::f', 1);
    assert.equal(await probe.trigger({ function_id: 'x4::f' }), 4);
    await w.shutdown();
    await e4.stop();
    const t0 = Date.now();
    await eventually(async () => {
      const r = await probe.trigger<{ nodes: Array<{ node_id: string }> }>({ function_id: 'engine::cluster::nodes' });
      assert.ok(!r.nodes.some((n) => n.node_id === 'n4'));
    }, 3000);
    assert.ok(Date.now() - t0 < 1000, 'a clean stop is seen without waiting for the lease');
    await sleep(0);
  });
});
