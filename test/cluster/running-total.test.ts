/**
 * The quickstart's running total, exact across engines: svc-state (Redis store) attached to
 * engine 1, math::add replicas on engines 2 and 3, callers on all three. Every increment counts
 * exactly once, whichever engine the call entered and whichever replica served it.
 *
 * math::add here is a TypeScript stand-in for the quickstart's Python math-worker, doing exactly
 * what it does: c = a + b, then one atomic `state::update` increment of math/running_total by c.
 */
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { registerWorker, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually } from '../helpers/util.js';
import { REPO, startClusterEngine, type ClusterEngine } from './helpers.js';

describe('cluster: the quickstart running total across engines', () => {
  let redis: RedisServer;
  let engines: ClusterEngine[] = [];
  let state: ChildProcess | undefined;
  const workers: Worker[] = [];
  const prefix = `total-${randomUUID().slice(0, 8)}`;
  const make = (url: string, name: string): Worker => {
    const w = registerWorker(url, { workerName: name, echoLogs: false });
    workers.push(w);
    return w;
  };

  before(async () => {
    redis = await startRedis();
    engines = [await startClusterEngine(redis.url, 'n1', prefix), await startClusterEngine(redis.url, 'n2', prefix), await startClusterEngine(redis.url, 'n3', prefix)];
    // The real svc-state process, as `svc worker add svc-state` runs it, with the Redis store.
    state = spawn(process.execPath, [join(REPO, 'dist/src/workers/state/main.js')], {
      env: { ...process.env, SVC_URL: engines[0]!.url, SVC_WORKER_NAME: 'svc-state', SVC_WORKER_CONFIG: JSON.stringify({ store: 'redis', redis_url: redis.url, redis_key_prefix: prefix }) },
      stdio: 'ignore',
    });
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
    if (state && state.exitCode === null) {
      const exited = new Promise((r) => state!.once('exit', r));
      state.kill('SIGTERM');
      await exited;
    }
    await Promise.all(engines.map((e) => e.stop()));
    await redis?.stop();
  });

  it('counts every call exactly once', async () => {
    for (const i of [1, 2]) {
      const m = make(engines[i]!.url, `math-worker-n${i + 1}`);
      m.registerFunction('math::add', async (d: { a?: number; b?: number }) => {
        const c = (d.a ?? 0) + (d.b ?? 0);
        const change = await m.trigger<{ new_value: number }>({
          function_id: 'state::update',
          payload: { scope: 'math', key: 'running_total', ops: [{ type: 'increment', by: c }] },
        });
        return { c, running_total: change.new_value, served_by: `n${i + 1}` };
      });
    }
    const callers = engines.map((e, i) => make(e.url, `caller-n${i + 1}`));
    // Every engine sees both replicas and svc-state.
    for (const c of callers) {
      await eventually(async () => {
        const add = await c.trigger<{ engines: string[] }>({ function_id: 'engine::functions::info', payload: { function_id: 'math::add' } });
        assert.deepEqual([...add.engines].sort(), ['n2', 'n3']);
        await c.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'state::update' } });
      }, 10_000);
    }
    const totals: number[] = [];
    const servedBy = new Map<string, number>();
    let expected = 0;
    const PER_CALLER = 150;
    await Promise.all(
      callers.map(async (c, k) => {
        // 10 lanes per caller: concurrent increments from every engine at once.
        await Promise.all(
          Array.from({ length: 10 }, async (_, lane) => {
            for (let i = lane; i < PER_CALLER; i += 10) {
              const a = k * 1000 + i;
              const r = await c.trigger<{ c: number; running_total: number; served_by: string }>({ function_id: 'math::add', payload: { a, b: 1 } });
              assert.equal(r.c, a + 1);
              expected += a + 1;
              totals.push(r.running_total);
              servedBy.set(r.served_by, (servedBy.get(r.served_by) ?? 0) + 1);
            }
          }),
        );
      }),
    );
    // Read back through engine 3, which has no svc-state of its own.
    const final = await callers[2]!.trigger<number>({ function_id: 'state::get', payload: { scope: 'math', key: 'running_total' } });
    assert.equal(final, expected);
    // Each increment saw its own total: no two calls observed the same one, none was lost.
    assert.equal(new Set(totals).size, totals.length);
    assert.equal(Math.max(...totals), expected);
    // Both replicas, on two engines, did part of the work.
    assert.ok((servedBy.get('n2') ?? 0) > 0 && (servedBy.get('n3') ?? 0) > 0, JSON.stringify([...servedBy]));
  });
});
