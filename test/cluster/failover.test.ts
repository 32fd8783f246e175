/**
 * An engine dies (`kill -9`) under steady calls: every call ends with a result or an error, none
 * hangs to its deadline, and once the worker has moved to another engine (its SDK was given
 * several engine URLs) the calls succeed again within seconds.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually, sleep } from '../helpers/util.js';
import { spawnClusterEngine, startClusterEngine, TEST_LEASE_MS, type ClusterEngine, type EngineProcess } from './helpers.js';

interface Outcome {
  ok: boolean;
  code?: string;
  start: number;
  end: number;
}

describe('cluster: kill -9 of an engine under steady calls', () => {
  let redis: RedisServer;
  let e1: ClusterEngine, e2: ClusterEngine;
  let e3: EngineProcess;
  const workers: Worker[] = [];
  const prefix = `failover-${randomUUID().slice(0, 8)}`;

  before(async () => {
    redis = await startRedis();
    e1 = await startClusterEngine(redis.url, 'n1', prefix);
    e2 = await startClusterEngine(redis.url, 'n2', prefix);
    e3 = await spawnClusterEngine(redis.url, 'n3', prefix);
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
    await e3?.kill();
    await Promise.all([e1, e2].map((e) => e?.stop()));
    await redis?.stop();
  });

  it('ends every call, then serves again from the engine the worker moved to', async () => {
    // The callee lists engine 3 first and engine 1 as where to go next.
    const callee = registerWorker([e3.url, e1.url], { workerName: 'mover', echoLogs: false, reconnect: { initialDelayMs: 100, maxDelayMs: 500 } });
    workers.push(callee);
    callee.registerFunction('ff::work', async (d: { i: number }) => {
      await sleep(5);
      return { i: d.i };
    });
    const caller = registerWorker(e2.url, { workerName: 'steady-caller', echoLogs: false });
    workers.push(caller);
    await eventually(async () => {
      const f = await caller.trigger<{ workers: Array<{ engine: string }> }>({ function_id: 'engine::functions::info', payload: { function_id: 'ff::work' } });
      assert.deepEqual(f.workers.map((w) => w.engine), ['n3']);
    }, 5000);

    const outcomes: Outcome[] = [];
    let stop = false;
    const CALL_TIMEOUT_MS = 15_000;
    const lane = async (k: number): Promise<void> => {
      for (let i = k; !stop; i += 100) {
        const start = Date.now();
        try {
          const r = await caller.trigger<{ i: number }>({ function_id: 'ff::work', payload: { i }, timeoutMs: CALL_TIMEOUT_MS });
          assert.equal(r.i, i);
          outcomes.push({ ok: true, start, end: Date.now() });
        } catch (e) {
          outcomes.push({ ok: false, code: (e as InvocationError).code, start, end: Date.now() });
          await sleep(20); // an error loop must not spin
        }
      }
    };
    const lanes = Promise.all(Array.from({ length: 16 }, (_, k) => lane(k)));
    await sleep(700);
    const before = outcomes.filter((o) => o.ok).length;
    assert.ok(before > 20, `calls flowed through engine 3 before the kill (${before})`);

    const killedAt = Date.now();
    await e3.kill('SIGKILL');
    // Wait for calls to succeed again, then a little longer for a steady state.
    await eventually(() => assert.ok(outcomes.some((o) => o.ok && o.start > killedAt + 50)), 10_000);
    const recoveredAt = Math.min(...outcomes.filter((o) => o.ok && o.start > killedAt + 50).map((o) => o.end));
    await sleep(500);
    stop = true;
    // No call may hang: every lane finishes well before any call's deadline.
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([lanes.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), CALL_TIMEOUT_MS - 2000)))]);
    clearTimeout(timer);
    assert.ok(finished, 'some calls were still waiting long after the engine died');

    const failed = outcomes.filter((o) => !o.ok);
    const codes = new Set(failed.map((o) => o.code));
    // The calls in flight on engine 3 end with invocation_stopped; calls made in the moment before
    // the worker re-registered find no provider. Nothing times out.
    for (const c of codes) assert.ok(c === 'invocation_stopped' || c === 'function_not_found', `unexpected error code ${c}`);
    assert.ok(codes.has('invocation_stopped'), `calls in flight ended with invocation_stopped (${[...codes].join(', ') || 'no errors'})`);
    const slowest = Math.max(...failed.map((o) => o.end - o.start));
    assert.ok(slowest < TEST_LEASE_MS * 2 + 1500, `a failed call took ${slowest} ms to end`);
    assert.ok(recoveredAt - killedAt < 5000, `calls succeeded again ${recoveredAt - killedAt} ms after the kill`);
    // Steady state: the last calls all succeeded, served on engine 1.
    assert.ok(outcomes.slice(-16).every((o) => o.ok));
    const f = await caller.trigger<{ workers: Array<{ engine: string }> }>({ function_id: 'engine::functions::info', payload: { function_id: 'ff::work' } });
    assert.deepEqual(f.workers.map((w) => w.engine), ['n1']);
    // Engine 3 is gone from every view once its lease lapsed.
    await eventually(async () => {
      const r = await caller.trigger<{ nodes: Array<{ node_id: string }> }>({ function_id: 'engine::cluster::nodes' });
      assert.deepEqual(r.nodes.map((n) => n.node_id).sort(), ['n1', 'n2']);
    }, TEST_LEASE_MS + 2000);
    process.stdout.write(
      `# kill -9 of engine 3: ${outcomes.length} calls, ${failed.length} failed (${[...codes].join(', ')}), slowest failure ${slowest} ms, calls succeeded again after ${recoveredAt - killedAt} ms\n`,
    );
  });
});
