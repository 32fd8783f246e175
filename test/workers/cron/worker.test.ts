/**
 * svc-cron through a real engine, in real time on seconds-precision schedules: fires land on the
 * scheduled second, bindings are refused with a clear error, replicas of the bound worker share one
 * schedule, overlap skip/allow, the cron::* operations, and a `queue` without svc-queue.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { WorkerPool } from '../../helpers/util.js';
import { startCronWorker, type RunningCronWorker } from '../../../src/workers/cron/worker.js';
import type { RunNowResult, ScheduleView } from '../../../src/workers/cron/operations.js';
import { countByTime, recordFires, sleep, until } from './helpers.js';

type Engine = Awaited<ReturnType<typeof startEngine>>;

describe('svc-cron through the engine (embedded store)', () => {
  let engine: Engine;
  let cron: RunningCronWorker;
  let pool: WorkerPool;
  let client: Worker;
  let dir: string;

  const list = async (function_id?: string) =>
    (await client.trigger<{ schedules: ScheduleView[] }>({ function_id: 'cron::list', payload: function_id ? { function_id } : {} })).schedules;

  before(async () => {
    engine = await startEngine();
    dir = mkdtempSync(join(tmpdir(), 'svc-cron-w-'));
    cron = await startCronWorker({ url: engine.url, config: { data_dir: dir }, echoLogs: false });
    pool = new WorkerPool(() => engine.url);
    client = pool.make('cron-test-client');
    await client.ready();
  });
  after(async () => {
    await pool?.closeAll();
    await cron?.shutdown();
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an invalid expression is refused at registration, naming the expression', async () => {
    const w = pool.make('bad-cron');
    w.registerFunction('bad::job', () => null);
    await assert.rejects(w.registerTrigger({ type: 'cron', function_id: 'bad::job', config: { expression: '*/5 * * *' } }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'invalid_expression');
      assert.match(e.message, /"\*\/5 \* \* \*"/);
      return true;
    });
    await assert.rejects(w.registerTrigger({ type: 'cron', function_id: 'bad::job', config: { expression: '* * * * *', timezone: 'Nowhere/City' } }), { code: 'invalid_timezone' });
    await assert.rejects(w.registerTrigger({ type: 'cron', function_id: 'bad::job', config: { expression: '* * * * *', overlap: 'never' } }), { code: 'invalid_trigger_config' });
  });

  test('every second fires once, within 100 ms of the scheduled second, with the documented payload; two replicas binding it share it', async () => {
    const a = pool.make('ticker');
    const b = pool.make('ticker');
    const fired = recordFires([a, b], 'tick::every_second');
    const config = { expression: '* * * * * *', payload: { report: 'daily' } };
    const [ta] = await Promise.all([a.registerTrigger({ type: 'cron', function_id: 'tick::every_second', config }), b.registerTrigger({ type: 'cron', function_id: 'tick::every_second', config })]);
    await until('6 fires', () => fired.length >= 6, 15_000);
    ta.unregister();
    const f = fired[0]!;
    assert.deepEqual(Object.keys(f).sort(), ['actual_time', 'at', 'by', 'job_id', 'manual', 'payload', 'schedule_id', 'scheduled_time', 'trigger', 'trigger_id']);
    assert.deepEqual(f.payload, { report: 'daily' });
    assert.equal(f.manual, false);
    for (const x of fired.slice(0, 6)) {
      const late = x.at - Date.parse(x.scheduled_time);
      assert.ok(late >= 0 && late <= 100, `fire of ${x.scheduled_time} ran ${late} ms after its second`);
      assert.equal(Date.parse(x.scheduled_time) % 1000, 0);
      assert.ok(Date.parse(x.actual_time) >= Date.parse(x.scheduled_time));
    }
    // One schedule for both bindings: each second once, and both trigger ids listed.
    assert.ok([...countByTime(fired).values()].every((n) => n === 1), JSON.stringify([...countByTime(fired)]));
    const [view] = await list('tick::every_second');
    assert.equal(view!.expression, '* * * * * *');
    assert.equal(view!.trigger_ids.length, 2);
    await a.shutdown();
    await b.shutdown();
    await until('the schedule to go from cron::list', async () => (await list('tick::every_second')).length === 0);
  });

  test('overlap skip: a handler slower than the period never overlaps itself; overlap allow does', async () => {
    const w = pool.make('slow');
    let running = 0;
    let maxRunning = 0;
    const slow = async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(2500);
      running--;
      return null;
    };
    const fired = recordFires([w], 'slow::skip', slow);
    await w.registerTrigger({ type: 'cron', function_id: 'slow::skip', config: { expression: '* * * * * *' } });
    await until('3 runs', () => fired.length >= 3, 15_000);
    assert.equal(maxRunning, 1, 'two runs overlapped');
    // Runs start every 3 s (2.5 s run; the next whole second after it).
    const starts = fired.map((f) => Date.parse(f.scheduled_time));
    for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! - starts[i - 1]! >= 3000, `runs ${starts[i - 1]} and ${starts[i]} overlap`);
    const [view] = await list('slow::skip');
    assert.ok(view!.counts.skipped >= 4, `skipped ${view!.counts.skipped}`);
    await w.shutdown();
    await until('slow::skip runs to end', () => running === 0, 5000);

    const w2 = pool.make('slow-allow');
    maxRunning = 0;
    const fired2 = recordFires([w2], 'slow::allow', slow);
    await w2.registerTrigger({ type: 'cron', function_id: 'slow::allow', config: { expression: '* * * * * *', overlap: 'allow' } });
    await until('3 runs', () => fired2.length >= 3, 15_000);
    assert.ok(maxRunning >= 2, 'overlap allow should run them side by side');
    await w2.shutdown();
  });

  test('cron::list, pause, resume, run_now and outcomes', async () => {
    const w = pool.make('reports');
    let fail = false;
    const fired = recordFires([w], 'reports::build', (f) => {
      if (fail) throw Object.assign(new Error(`cannot build ${String((f.payload as { name: string }).name)}`), { code: 'report_failed' });
      return { built: true, at: f.scheduled_time };
    });
    const trig = await w.registerTrigger({ type: 'cron', function_id: 'reports::build', config: { expression: '*/2 * * * * *', timezone: 'Europe/Paris', payload: { name: 'sales' } } });
    await until('a fire', () => fired.length >= 1, 5000);
    let [view] = await list('reports::build');
    assert.ok(view);
    assert.equal(view.timezone, 'Europe/Paris');
    assert.deepEqual(view.trigger_ids, [trig.id]);
    assert.deepEqual(view.held_by, ['svc-cron']);
    assert.equal(view.next_fires.length, 3);
    for (const [i, n] of view.next_fires.entries()) {
      assert.equal(Date.parse(n) % 2000, 0);
      if (i > 0) assert.equal(Date.parse(n) - Date.parse(view.next_fires[i - 1]!), 2000);
    }
    await until('the first outcome', async () => ([view] = await list('reports::build')) && view?.last_result?.outcome === 'ok');
    assert.equal(view!.last_fire!.trigger_id, trig.id);

    // Pause by trigger id: fire times pass without runs.
    assert.deepEqual(await client.trigger({ function_id: 'cron::pause', payload: { trigger_id: trig.id } }), { schedule_id: view!.schedule_id, function_id: 'reports::build', paused: true });
    await sleep(300);
    const before = fired.length;
    await sleep(4200);
    assert.equal(fired.length, before, 'a paused schedule ran');
    [view] = await list('reports::build');
    assert.equal(view!.paused, true);
    assert.equal(view!.last_fire!.outcome, 'paused');

    // Run now works while paused, and answers with the outcome and the function's result.
    const now = await client.trigger<RunNowResult>({ function_id: 'cron::run_now', payload: { schedule_id: view!.schedule_id } });
    assert.equal(now.outcome, 'ok');
    assert.deepEqual((now.result as { built: boolean }).built, true);
    assert.equal(fired[fired.length - 1]!.manual, true);

    // Resume by schedule id; a failing run is recorded with its code and message.
    fail = true;
    await client.trigger({ function_id: 'cron::resume', payload: { schedule_id: view!.schedule_id } });
    await until('a failed run', async () => ([view] = await list('reports::build')) && view?.last_result?.outcome === 'error', 6000);
    assert.deepEqual(view!.last_result!.error, { code: 'report_failed', message: 'cannot build sales' });
    assert.ok(view!.counts.error >= 1 && view!.counts.ok >= 2 && view!.counts.skipped >= 2);

    // Errors name the input.
    await assert.rejects(client.trigger({ function_id: 'cron::pause', payload: { schedule_id: 'feedfeedfeedfeed' } }), (e: Error & { code?: string }) => e.code === 'schedule_not_found' && /feedfeedfeedfeed/.test(e.message));
    await assert.rejects(client.trigger({ function_id: 'cron::run_now', payload: {} }), { code: 'invalid_payload' });
    await w.shutdown();
  });

  test('a schedule id no schedule can have (kilobytes long, not hex) is not found, for each operation', async () => {
    // 70,000 characters: more than the embedded store takes as a key (it threw a RangeError, sent as invocation_failed).
    for (const schedule_id of ['f'.repeat(3000), 'k'.repeat(70_000), 'FEEDFEEDFEEDFEED', 'feed\u0000feedfeedfee']) {
      for (const function_id of ['cron::pause', 'cron::resume', 'cron::run_now']) {
        await assert.rejects(client.trigger({ function_id, payload: { schedule_id } }), (e: Error & { code?: string }) => e.code === 'schedule_not_found' && e.message.includes(JSON.stringify(schedule_id.slice(0, 20)).slice(0, -1)), `${function_id} ${schedule_id.slice(0, 20)}`);
      }
    }
  });

  test('a queue without svc-queue: the function is called directly and the outcome says so', async () => {
    const w = pool.make('queued');
    const fired = recordFires([w], 'queued::job');
    await w.registerTrigger({ type: 'cron', function_id: 'queued::job', config: { expression: '* * * * * *', queue: 'nightly' } });
    await until('a fire', () => fired.length >= 1, 5000);
    const [view] = await until('the outcome', async () => {
      const l = await list('queued::job');
      return l[0]?.last_result ? l : undefined;
    });
    assert.equal(view!.last_result!.outcome, 'ok');
    assert.match(view!.last_result!.note ?? '', /queue nightly unavailable.*called directly/);
    await w.shutdown();
  });

  test('a new schedule starts with its next time: nothing before its binding is caught up', async () => {
    const w = pool.make('fresh');
    const fired = recordFires([w], 'fresh::job');
    const t0 = Date.now();
    await w.registerTrigger({ type: 'cron', function_id: 'fresh::job', config: { expression: '* * * * * *', catch_up: 'all' } });
    await until('a fire', () => fired.length >= 1, 5000);
    assert.ok(Date.parse(fired[0]!.scheduled_time) > t0 - 1000, 'nothing before the binding was caught up');
    await w.shutdown();
  });
});
