/**
 * svc-cron follows the trigger-binding rule (docs/security.md, "Trigger bindings"): a `cron`
 * binding asks nothing beyond the bound function (it observes only time), and every call svc-cron
 * makes for a binding (a scheduled fire, cron::run_now, the enqueue of a fire with `queue`) is made
 * for a live binding this svc-cron process holds, so the engine runs it with the binder's rights.
 * svc-cron's and svc-queue's tokens here may not call the bound functions themselves. A real engine
 * with tokens, the real svc-cron and svc-queue (embedded stores); two svc-cron processes for the
 * run that must be passed on to the process holding the binding.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'svc-sdk';
import { adminToken, bindingRequires, token } from '../../helpers/tokens.js';
import { startEngine } from '../../helpers/engine.js';
import { WorkerPool } from '../../helpers/util.js';
import { startCronWorker, type RunningCronWorker } from '../../../src/workers/cron/worker.js';
import { startQueueWorker, type RunningQueueWorker } from '../../../src/workers/queue/worker.js';
import type { RunNowResult, ScheduleView } from '../../../src/workers/cron/operations.js';
import { recordFires, spawnCron, until, type CronProcess } from './helpers.js';

const ADMIN = 'admin-secret-0123456789';
const CRON = 'cron-secret-01234567890';
const QUEUE = 'queue-secret-0123456789';
const TICK = 'tick-secret-01234567890';
const OPS = 'ops-secret-012345678901';
const TOKENS = [
  adminToken(ADMIN),
  // svc-cron may call its own functions only: not the bound tick::* functions.
  token('cron', CRON, { call: ['cron::*'], register: ['cron::*'], trigger_types: ['cron'], names: ['svc-cron'] }),
  // svc-queue runs plain jobs with its own rights: it may call tick::*.
  token('queue', QUEUE, { call: ['engine::functions::info', 'queue::list', 'tick::*'], register: ['engine::queue::enqueue', 'queue::*'], trigger_types: ['durable:subscriber'], names: ['svc-queue'] }),
  // The binder: it may register its functions (and so bind them), and call nothing.
  token('tick', TICK, { register: ['tick::*'] }),
  // An operator who may run schedules now, and nothing else.
  token('ops', OPS, { call: ['cron::run_now', 'cron::list'] }),
];

describe('svc-cron: calls for a binding run with the binder’s rights', { timeout: 60_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let cron: RunningCronWorker;
  let queue: RunningQueueWorker;
  let admin: Worker;
  let ops: Worker;
  const dirs = [mkdtempSync(join(tmpdir(), 'svc-cron-rights-')), mkdtempSync(join(tmpdir(), 'svc-queue-cron-rights-'))];
  const pool = new WorkerPool(() => eng.url);
  const schedule = async (function_id: string): Promise<ScheduleView | undefined> =>
    (await admin.trigger<{ schedules: ScheduleView[] }>({ function_id: 'cron::list', payload: { function_id } })).schedules[0];

  before(async () => {
    eng = await startEngine({ tokens: TOKENS });
    cron = await startCronWorker({ url: `${eng.url}/?token=${CRON}`, config: { data_dir: dirs[0] }, echoLogs: false });
    queue = await startQueueWorker({ url: `${eng.url}/?token=${QUEUE}`, config: { data_dir: dirs[1] } });
    admin = pool.make('admin', { token: ADMIN });
    ops = pool.make('operator', { token: OPS });
    await Promise.all([admin.ready(), ops.ready()]);
  });
  after(async () => {
    await pool.closeAll();
    await cron?.shutdown();
    await queue?.shutdown();
    await eng?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('the cron type asks nothing of binders beyond the bound function', async () => {
    assert.deepEqual(await bindingRequires(admin, 'cron'), []);
  });

  test('scheduled fires and cron::run_now are made for the binding: they run though svc-cron may not call the function', async () => {
    const w = pool.make('ticker', { token: TICK });
    const fired = recordFires([w], 'tick::second');
    const t = await w.registerTrigger({ type: 'cron', function_id: 'tick::second', config: { expression: '* * * * * *', payload: { n: 1 } } });
    await until('a scheduled fire', () => fired.some((f) => !f.manual), 5000);
    const view = await until('its outcome', async () => ((await schedule('tick::second'))?.last_result ? schedule('tick::second') : undefined));
    assert.equal(view!.last_result!.outcome, 'ok', JSON.stringify(view!.last_result));
    assert.equal(fired[0]!.trigger_id, t.id);

    // An operator who may call cron::run_now (and not tick::second) runs it now, with the binder's rights.
    const r = await ops.trigger<RunNowResult>({ function_id: 'cron::run_now', payload: { trigger_id: t.id } });
    assert.deepEqual([r.outcome, r.trigger_id, r.result], ['ok', t.id, { ok: true }], JSON.stringify(r));
    assert.ok(fired.some((f) => f.manual));
    t.unregister();
  });

  test('a fire with queue is an enqueue made for the binding (svc-cron may not enqueue the function itself); svc-queue then runs the job', async () => {
    const w = pool.make('queued', { token: TICK });
    const fired = recordFires([w], 'tick::queued');
    // A year from now at the earliest: only run_now fires it.
    const t = await w.registerTrigger({ type: 'cron', function_id: 'tick::queued', config: { expression: '0 0 1 1 *', queue: 'default' } });
    const r = await ops.trigger<RunNowResult>({ function_id: 'cron::run_now', payload: { trigger_id: t.id } });
    assert.deepEqual([r.outcome, r.note], ['ok', 'enqueued on queue default'], JSON.stringify(r));
    // The job then runs as any plain job: with svc-queue's rights.
    await until('the job to run', () => fired.length === 1, 10_000);
    assert.equal(fired[0]!.manual, true);
    t.unregister();
  });
});

test('cron::run_now reaching an svc-cron process that holds no binding of the schedule is passed on to the one that does', { timeout: 60_000 }, async () => {
  const eng = await startEngine({ tokens: TOKENS });
  const dir = mkdtempSync(join(tmpdir(), 'svc-cron-rights-replicas-'));
  const pool = new WorkerPool(() => eng.url);
  const crons: CronProcess[] = [];
  try {
    for (const n of ['svc-cron-a', 'svc-cron-b']) crons.push(spawnCron(`${eng.url}/?token=${CRON}`, { data_dir: dir }, n));
    const admin = pool.make('admin', { token: ADMIN });
    await until('two svc-cron processes providing cron', async () => {
      const { trigger_types } = await admin.trigger<{ trigger_types: Array<{ id: string; provider: unknown; standby_providers: unknown[] }> }>({ function_id: 'engine::triggers::list' });
      const t = trigger_types.find((x) => x.id === 'cron');
      return t?.provider && t.standby_providers.length === 1;
    }, 20_000);
    const w = pool.make('replica-ticker', { token: TICK });
    const fired = recordFires([w], 'tick::replicas');
    const t = await w.registerTrigger({ type: 'cron', function_id: 'tick::replicas', config: { expression: '0 0 1 1 *' } });
    const ops = pool.make('replica-operator', { token: OPS });
    await until('the binding in cron::list', async () => {
      const { schedules } = await ops.trigger<{ schedules: ScheduleView[] }>({ function_id: 'cron::list', payload: { function_id: 'tick::replicas' } });
      return schedules[0]?.trigger_ids.includes(t.id);
    });
    // The engine takes turns between the two processes' cron::run_now: one of them holds no binding.
    const results: RunNowResult[] = [];
    for (let i = 0; i < 4; i++) results.push(await ops.trigger<RunNowResult>({ function_id: 'cron::run_now', payload: { trigger_id: t.id } }));
    assert.deepEqual(
      results.map((r) => [r.outcome, r.trigger_id]),
      Array.from({ length: 4 }, () => ['ok', t.id]),
      JSON.stringify(results),
    );
    assert.equal(fired.filter((f) => f.manual).length, 4);
  } finally {
    await pool.closeAll();
    await Promise.all(crons.map((c) => c.kill('SIGTERM')));
    await eng.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
