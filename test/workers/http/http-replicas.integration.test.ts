/**
 * Several svc-http replicas on one engine, as behind a load balancer (a Kubernetes Service): the
 * `http` trigger type is `binding_mode: "all"`, so every replica holds every route and answers it;
 * a replica that comes later gets the routes already bound, one that leaves takes nothing with it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { eventually } from '../../helpers/util.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';

const FAST = { reconnect: { initialDelayMs: 50, maxDelayMs: 200 }, echoLogs: false };

let engine: Awaited<ReturnType<typeof startEngine>>;
let app: Worker;
const replicas: HttpWorkerHandle[] = [];

function startReplica(replica: number): Promise<HttpWorkerHandle> {
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica });
  return startHttpWorker({ url: engine.url, port: 0, timeoutMs: 2000, bodyLimitBytes: 64 * 1024, runSecret });
}

async function add(h: HttpWorkerHandle, a: number, b: number): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${h.port}/math/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a, b }) });
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() };
}

interface ListedBinding {
  id: string;
  status: string;
  provider: { worker_name: string } | null;
  providers: Array<{ worker_id: string }>;
}
const bindings = async () => ((await app.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: ListedBinding[] }).triggers;

describe('svc-http replicas behind one address', () => {
  before(async () => {
    engine = await startEngine();
    replicas.push(await startReplica(0), await startReplica(1));
    app = registerWorker(engine.url, { workerName: 'app', ...FAST });
    app.registerFunction('math::add', (req: { body: { a: number; b: number } }) => ({ status_code: 200, body: { c: req.body.a + req.body.b } }));
  });
  after(async () => {
    await app?.shutdown();
    for (const r of replicas) await r.shutdown();
    await engine?.stop();
  });

  test('every replica serves a route bound after both were up, and the listings say so', async () => {
    const t = await app.registerTrigger({ type: 'http', function_id: 'math::add', config: { api_path: '/math/add', http_method: 'POST' } });
    await eventually(async () => {
      for (const r of replicas) assert.deepEqual(await add(r, 2, 3), { status: 200, body: { c: 5 } });
    });
    const b = (await bindings()).find((x) => x.id === t.id);
    assert.equal(b?.status, 'active');
    assert.equal(b?.providers.length, 2);
    const types = (await app.trigger({ function_id: 'engine::triggers::list' })) as { trigger_types: Array<{ id: string; binding_mode: string; standby_providers: unknown[] }> };
    const http = types.trigger_types.find((x) => x.id === 'http');
    assert.equal(http?.binding_mode, 'all');
    assert.deepEqual(http?.standby_providers, []);
  });

  test('a replica started later gets the routes already bound; one that leaves takes nothing with it', async () => {
    const late = await startReplica(2);
    replicas.push(late);
    await eventually(async () => assert.deepEqual(await add(late, 4, 5), { status: 200, body: { c: 9 } }));
    const first = replicas.shift()!;
    await first.shutdown();
    await eventually(async () => assert.equal((await bindings()).find((x) => x.provider !== null)?.providers.length, 2));
    for (const r of replicas) assert.deepEqual(await add(r, 1, 1), { status: 200, body: { c: 2 } });
  });

  test('two replicas of a worker bind one route: when one leaves, the other keeps serving it', async () => {
    // Each replica of a worker (replicas: 2, or a copy started by hand) binds the same route to the
    // same function; svc-http used to drop the route when the one bound last left.
    const handler = (req: { body: { a: number; b: number } }) => ({ status_code: 200, body: { c: req.body.a + req.body.b } });
    const copies = [0, 1].map(() => registerWorker(engine.url, { workerName: 'adder', ...FAST }));
    const post = (h: HttpWorkerHandle) =>
      fetch(`http://127.0.0.1:${h.port}/adder/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":2,"b":2}' }).then(async (r) => ({ status: r.status, body: await r.text() }));
    const adderRoutes = (h: HttpWorkerHandle) => h.routes.list().filter((x) => x.function_id === 'adder::add').map((x) => x.trigger_id);
    try {
      const ids: string[] = [];
      for (const w of copies) {
        w.registerFunction('adder::add', handler);
        ids.push((await w.registerTrigger({ type: 'http', function_id: 'adder::add', config: { api_path: '/adder/add', http_method: 'POST' } })).id);
      }
      await eventually(async () => {
        for (const r of replicas) assert.deepEqual(adderRoutes(r), [ids[1]]);
        for (const r of replicas) assert.deepEqual(await post(r), { status: 200, body: '{"c":4}' });
      });
      await copies[1]!.shutdown();
      // The engine tells every svc-http that the second binding left; the first one serves the route.
      await eventually(async () => {
        for (const r of replicas) assert.deepEqual(adderRoutes(r), [ids[0]]);
      });
      for (const r of replicas) assert.deepEqual(await post(r), { status: 200, body: '{"c":4}' });
      await copies[0]!.shutdown();
      await eventually(async () => {
        for (const r of replicas) assert.equal((await post(r)).status, 404);
      });
    } finally {
      for (const w of copies) await w.shutdown();
    }
  });

  test('unbinding a route removes it from every replica', async () => {
    const t = await app.registerTrigger({ type: 'http', function_id: 'math::add', config: { api_path: '/math/sum', http_method: 'GET' } });
    const sum = (h: HttpWorkerHandle) => fetch(`http://127.0.0.1:${h.port}/math/sum`).then((r) => r.status);
    await eventually(async () => {
      for (const r of replicas) assert.notEqual(await sum(r), 404);
    });
    t.unregister();
    await eventually(async () => {
      for (const r of replicas) assert.equal(await sum(r), 404);
    });
  });
});
