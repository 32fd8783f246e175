/**
 * Trigger rights across engines: a binder on one engine, svc-state (the provider) on another. The
 * binding is checked where the binder connects, and the provider's calls for it, made on the other
 * engine, run with the binder's rights, which travel with the binding. Real redis-server.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { registerWorker, type Worker } from 'svc-sdk';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually, sleep } from '../helpers/util.js';
import { startClusterEngine, type ClusterEngine } from './helpers.js';

const ADMIN = 'admin-secret-0123456789';
const SPY = 'spy-secret-0123456789ab';
const WATCH = 'watch-secret-0123456789';
const TOKENS = [
  { name: 'admin', token: ADMIN, admin: true, call: [], register: [], trigger_types: [] },
  { name: 'spy', token: SPY, admin: false, call: [], register: ['spy::*'], trigger_types: [] },
  { name: 'watch', token: WATCH, admin: false, call: ['state::get', 'watch::*'], register: ['watch::*'], trigger_types: [] },
];

describe('cluster: trigger bindings run with the binder’s rights on the provider’s engine', { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let near: ClusterEngine;
  let far: ClusterEngine;
  let state: RunningStateWorker;
  let dir: string;
  const workers: Worker[] = [];
  const make = (url: string, name: string, token: string): Worker => {
    const w = registerWorker(url, { workerName: name, token, echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
    w.on('error', () => {});
    workers.push(w);
    return w;
  };
  let allowCalls = 0;

  before(async () => {
    redis = await startRedis();
    const prefix = `test-${randomUUID().slice(0, 8)}`;
    near = await startClusterEngine(redis.url, 'near', prefix, { tokens: TOKENS });
    far = await startClusterEngine(redis.url, 'far', prefix, { tokens: TOKENS });
    dir = mkdtempSync(join(tmpdir(), 'svc-cluster-rights-'));
    state = await startStateWorker({ url: `${far.url}/?token=${ADMIN}`, config: { data_dir: dir } });
    const admin = make(far.url, 'admin', ADMIN);
    admin.registerFunction('admin::allow', () => {
      allowCalls++;
      return true;
    });
    await admin.ready();
    // The near engine knows the state type, and what it asks of binders, from the far one.
    const probe = make(near.url, 'probe', ADMIN);
    await eventually(async () => {
      const { trigger_types } = await probe.trigger<{ trigger_types: Array<{ id: string; binding_requires_call: string[] }> }>({ function_id: 'engine::triggers::list' });
      assert.deepEqual(trigger_types.find((t) => t.id === 'state')?.binding_requires_call, ['state::get']);
    }, 5000);
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown(0)));
    await state?.shutdown();
    await Promise.all([near, far].map((e) => e?.stop()));
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a token that may not read state cannot bind a state trigger on another engine', async () => {
    const spy = make(near.url, 'spy', SPY);
    spy.registerFunction('spy::see', () => null);
    await assert.rejects(spy.registerTrigger({ type: 'state', function_id: 'spy::see' }), { code: 'forbidden', message: /may not bind a "state" trigger/ });
  });

  it('a condition the binder may not call is refused on the provider’s engine; one it may call works', async () => {
    const watch = make(near.url, 'watch', WATCH);
    const fired: unknown[] = [];
    watch.registerFunction('watch::fired', (e: unknown) => {
      fired.push(e);
      return null;
    });
    watch.registerFunction('watch::cond', () => true);
    await watch.ready();
    const writer = make(far.url, 'writer', ADMIN);
    const forbidden = await watch.registerTrigger({ type: 'state', function_id: 'watch::fired', config: { scope: 'c', condition_function_id: 'admin::allow' } });
    await writer.trigger({ function_id: 'state::set', payload: { scope: 'c', key: 'a', value: 1 } });
    await sleep(500);
    assert.equal(allowCalls, 0, 'admin::allow was not called for the binder');
    assert.deepEqual(fired, []);
    forbidden.unregister();
    const allowed = await watch.registerTrigger({ type: 'state', function_id: 'watch::fired', config: { scope: 'c', condition_function_id: 'watch::cond' } });
    // watch::fired and watch::cond live on the near engine: the far one must see them first.
    await eventually(async () => {
      const f = await writer.trigger<{ engines: string[] }>({ function_id: 'engine::functions::info', payload: { function_id: 'watch::cond' } });
      assert.deepEqual(f.engines, ['near']);
    }, 5000);
    await writer.trigger({ function_id: 'state::set', payload: { scope: 'c', key: 'b', value: 2 } });
    await eventually(() => assert.equal(fired.length, 1), 5000);
    allowed.unregister();
  });
});
