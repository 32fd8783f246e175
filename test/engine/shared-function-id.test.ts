/**
 * A function id served by workers of different names is told of in the engine's log, once: replicas
 * of one worker share an id by design (load balancing), two different workers almost always by
 * mistake (a copied id), and before, their calls were shared in silence. Calls work as before.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import type { Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
const pool = new WorkerPool(() => eng.url);
let reader: Worker;
before(async () => {
  eng = await startEngine();
  reader = pool.make('log-reader');
  await reader.ready();
});
after(async () => {
  await pool.closeAll();
  await eng.stop();
});

/** The engine's WARN lines about `id` being shared. */
const sharedWarnings = async (id: string): Promise<Array<{ message: string; data?: unknown }>> => {
  const { logs } = (await reader.trigger({ function_id: 'engine::logs::list', payload: { level: 'warn' } })) as { logs: Array<{ message: string; data?: unknown }> };
  return logs.filter((l) => l.message.startsWith(`function ${id} is served by workers of different names`));
};

const warning = (id: string, names: string): string =>
  `function ${id} is served by workers of different names: ${names}; its calls are shared among them as among replicas of one worker. Two workers registering one id is usually a copied id: rename one`;

test('two workers of different names registering one id: one WARN naming the id and both; calls still go to both, and a reconnect does not warn again', async () => {
  const billing = pool.make('billing');
  const reports = pool.make('reports');
  billing.registerFunction('jobs::run', () => 'billing');
  reports.registerFunction('jobs::run', () => 'reports');
  await Promise.all([billing.ready(), reports.ready()]);
  await eventually(async () => assert.equal((await sharedWarnings('jobs::run')).length, 1), 5000);
  const [told] = await sharedWarnings('jobs::run');
  assert.equal(told!.message, warning('jobs::run', '"billing" and "reports"'));

  const served = new Set<string>();
  for (let i = 0; i < 20; i++) served.add(await reader.trigger<string>({ function_id: 'jobs::run' }));
  assert.deepEqual([...served].sort(), ['billing', 'reports']);

  reports.simulateDisconnect();
  await eventually(() => assert.equal(reports.state, 'connected'), 5000);
  await eventually(async () => assert.equal((await reader.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'jobs::run' } }) as { workers: unknown[] }).workers.length, 2), 5000);
  await sleep(200);
  assert.equal((await sharedWarnings('jobs::run')).length, 1, 'told once');
});

test('replicas of one worker name sharing an id: no WARN', async () => {
  const a = pool.make('reports-daily');
  const b = pool.make('reports-daily');
  a.registerFunction('reports::daily', () => 'a');
  b.registerFunction('reports::daily', () => 'b');
  await Promise.all([a.ready(), b.ready()]);
  const served = new Set<string>();
  for (let i = 0; i < 20; i++) served.add(await reader.trigger<string>({ function_id: 'reports::daily' }));
  assert.equal(served.size, 2, 'both replicas serve');
  await sleep(300);
  assert.deepEqual(await sharedWarnings('reports::daily'), []);
});

test('an iii-sdk worker (it registers functions before naming itself): one WARN with its name, none for its moment as anonymous', async () => {
  const svc = pool.make('orders');
  svc.registerFunction('orders::sync', () => 'svc');
  await svc.ready();
  let iii: IIIClient | undefined;
  try {
    iii = registerIiiWorker(eng.url, { workerName: 'orders-iii', otel: { enabled: false } });
    iii.registerFunction('orders::sync', async () => 'iii');
    await eventually(async () => assert.equal((await sharedWarnings('orders::sync')).length, 1), 10_000);
    await sleep(300);
    const told = await sharedWarnings('orders::sync');
    assert.deepEqual(told.map((t) => t.message), [warning('orders::sync', '"orders" and "orders-iii"')]);
  } finally {
    await iii?.shutdown();
  }
});
