/**
 * The svc-cron store conformance suite: one function, run against every CronStore (store.test.ts).
 * Each test gets two handles on one fresh store, as two svc-cron processes have: claims made
 * through either are seen by both.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSchedule } from '../../../src/workers/cron/schedule.js';
import type { CronStore, FireRecord, StartRequest } from '../../../src/workers/cron/store.js';

/** Two handles on one fresh, empty, isolated store. */
export type OpenPair = () => Promise<[CronStore, CronStore]>;

const T0 = Date.parse('2026-06-01T12:00:00.000Z');
const schedule = parseSchedule('jobs::report', { expression: '* * * * * *' }, 'test');
const ID = schedule.id;

function record(t: number, runId: string, over: Partial<FireRecord> = {}): FireRecord {
  return { run_id: runId, trigger_id: 'trig-1', scheduled_time: new Date(t).toISOString(), actual_time: new Date(t + 5).toISOString(), manual: false, outcome: 'running', ...over };
}

function startReq(t: number, runId: string, over: Partial<StartRequest> = {}): StartRequest {
  return {
    scheduled_time: t,
    run_id: runId,
    holder_id: 'holder-a',
    now: t + 5,
    until: t + 30_000,
    skip_while_running: true,
    honor_pause: true,
    record: record(t, runId),
    ...over,
  };
}

async function rejectsWith(p: Promise<unknown>, code: string, mention: string): Promise<void> {
  await assert.rejects(p, (e: Error & { code?: string }) => {
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.includes(mention), `${JSON.stringify(e.message)} should mention ${mention}`);
    return true;
  });
}

export function conformance(name: string, openPair: OpenPair): void {
  describe(`cron store conformance: ${name}`, () => {
    const withStores = (title: string, body: (a: CronStore, b: CronStore) => Promise<void>) =>
      test(title, async () => {
        const [a, b] = await openPair();
        try {
          await body(a, b);
        } finally {
          await a.close();
          await b.close();
        }
      });

    withStores('register records the definition once and keeps the first creation time', async (a, b) => {
      const s1 = await a.register(ID, schedule.def, T0);
      assert.deepEqual(s1.def, schedule.def);
      assert.equal(s1.created_at, T0);
      assert.equal(s1.last_time, null);
      assert.equal(s1.paused, false);
      assert.deepEqual(s1.counts, { fired: 0, ok: 0, error: 0, skipped: 0, missed: 0 });
      const s2 = await b.register(ID, schedule.def, T0 + 60_000);
      assert.equal(s2.created_at, T0);
      assert.deepEqual([...(await b.get([ID, 'nope'])).keys()], [ID]);
    });

    withStores('a scheduled time is claimed once, through either handle, and last_time only moves forward', async (a, b) => {
      await a.register(ID, schedule.def, T0);
      assert.deepEqual(await a.advance(ID, { times: [T0 + 1000], policy: 'all' }), { run: [T0 + 1000], missed: 0, started: null });
      assert.deepEqual(await b.advance(ID, { times: [T0 + 1000], policy: 'all' }), { run: [], missed: 0, started: null });
      assert.deepEqual(await b.advance(ID, { times: [T0 + 2000], policy: 'all' }), { run: [T0 + 2000], missed: 0, started: null });
      // An older time offered late (a slow replica) is not claimed again.
      assert.deepEqual(await a.advance(ID, { times: [T0 + 1000, T0 + 2000], policy: 'all' }), { run: [], missed: 0, started: null });
      assert.equal((await a.get([ID])).get(ID)!.last_time, T0 + 2000);
    });

    withStores('concurrent claims of the same times from two handles: each time goes to exactly one', async (a, b) => {
      await a.register(ID, schedule.def, T0);
      const times = Array.from({ length: 50 }, (_, i) => T0 + i * 1000);
      const claims = await Promise.all(times.flatMap((t) => [a, b, a, b].map((s) => s.advance(ID, { times: [t], policy: 'all' }))));
      const won = claims.flatMap((c) => c.run).sort((x, y) => x - y);
      assert.deepEqual(won, times);
    });

    withStores('catch-up policies: none records all as missed, last runs the latest, all runs every unclaimed one', async (a) => {
      await a.register(ID, schedule.def, T0);
      const t = (s: number) => T0 + s * 1000;
      assert.deepEqual(await a.advance(ID, { times: [t(1), t(2), t(3)], policy: 'none' }), { run: [], missed: 3, started: null });
      assert.deepEqual(await a.advance(ID, { times: [t(4), t(5), t(6)], policy: 'last' }), { run: [t(6)], missed: 2, started: null });
      // t(6) is already claimed: only t(7), t(8) are fresh.
      assert.deepEqual(await a.advance(ID, { times: [t(6), t(7), t(8)], policy: 'all' }), { run: [t(7), t(8)], missed: 0, started: null });
      const s = (await a.get([ID])).get(ID)!;
      assert.equal(s.counts.missed, 5);
      assert.equal(s.last_time, t(8));
    });

    withStores('advance starts the first run in the same step, only when it is the time the caller expected', async (a) => {
      await a.register(ID, schedule.def, T0);
      const r = await a.advance(ID, { times: [T0 + 1000], policy: 'all', start: startReq(T0 + 1000, 'run-1') });
      assert.deepEqual(r, { run: [T0 + 1000], missed: 0, started: 'fire' });
      const s = (await a.get([ID])).get(ID)!;
      assert.deepEqual(s.run, { run_id: 'run-1', holder_id: 'holder-a', until: T0 + 31_000 });
      assert.equal(s.last?.run_id, 'run-1');
      assert.equal(s.last?.outcome, 'running');
      assert.equal(s.counts.fired, 1);
      // 'last' runs t+3 while the start named t+2: not applied, the caller starts t+3 itself.
      const r2 = await a.advance(ID, { times: [T0 + 2000, T0 + 3000], policy: 'last', start: startReq(T0 + 2000, 'run-2') });
      assert.deepEqual(r2, { run: [T0 + 3000], missed: 1, started: null });
    });

    withStores('overlap skip: a start is refused while a run of a live holder counts as running', async (a, b) => {
      await a.register(ID, schedule.def, T0);
      await a.heartbeat('holder-a', 'svc-cron', T0 + 60_000, []);
      assert.equal(await a.start(ID, startReq(T0 + 1000, 'run-1')), 'fire');
      // Another replica's fire of the next time: skipped, and recorded as the last fire.
      assert.equal(await b.start(ID, startReq(T0 + 2000, 'run-2', { holder_id: 'holder-b' })), 'skipped');
      let s = (await b.get([ID])).get(ID)!;
      assert.equal(s.last?.outcome, 'skipped');
      assert.equal(s.last?.run_id, null);
      assert.match(s.last?.error?.message ?? '', /still running/);
      assert.equal(s.run?.run_id, 'run-1');
      // overlap allow: runs anyway.
      assert.equal(await b.start(ID, startReq(T0 + 2000, 'run-3', { holder_id: 'holder-b', skip_while_running: false })), 'fire');
      // The first run finishing does not clear the mark of the later run, nor overwrite the last fire.
      await a.finish(ID, { ...record(T0 + 1000, 'run-1'), run_id: 'run-1', outcome: 'ok', duration_ms: 12, finished_at: new Date(T0 + 1017).toISOString() });
      s = (await a.get([ID])).get(ID)!;
      assert.equal(s.run?.run_id, 'run-3');
      assert.equal(s.last?.run_id, 'run-3');
      assert.equal(s.last_result?.run_id, 'run-1');
      assert.equal(s.last_result?.outcome, 'ok');
      assert.deepEqual(s.counts, { fired: 2, ok: 1, error: 0, skipped: 1, missed: 0 });
      await b.finish(ID, { ...record(T0 + 2000, 'run-3'), run_id: 'run-3', outcome: 'error', error: { code: 'invocation_failed', message: 'boom' } });
      s = (await a.get([ID])).get(ID)!;
      assert.equal(s.run, null);
      assert.equal(s.last?.outcome, 'error');
      assert.equal(s.last?.error?.message, 'boom');
      assert.equal(s.counts.error, 1);
      assert.equal(await b.start(ID, startReq(T0 + 3000, 'run-4', { holder_id: 'holder-b' })), 'fire');
    });

    withStores('overlap skip: a run stops counting when its deadline passed or its holder is gone', async (a, b) => {
      await a.register(ID, schedule.def, T0);
      await a.heartbeat('holder-a', 'svc-cron', T0 + 10_000, []);
      assert.equal(await a.start(ID, startReq(T0 + 1000, 'run-1', { until: T0 + 4000 })), 'fire');
      assert.equal(await b.start(ID, startReq(T0 + 2000, 'run-2', { now: T0 + 3999, holder_id: 'holder-b' })), 'skipped');
      assert.equal(await b.start(ID, startReq(T0 + 5000, 'run-3', { now: T0 + 5000, holder_id: 'holder-b' })), 'fire');
      // run-3's holder (holder-b) never sent a heartbeat: it counts as gone, so nothing is running.
      assert.equal(await a.start(ID, startReq(T0 + 6000, 'run-4', { now: T0 + 6000 })), 'fire');
      // run-4's holder (holder-a) expires at T0 + 10 s.
      assert.equal(await b.start(ID, startReq(T0 + 7000, 'run-5', { now: T0 + 7000, holder_id: 'holder-b' })), 'skipped');
      assert.equal(await b.start(ID, startReq(T0 + 11_000, 'run-6', { now: T0 + 11_000, holder_id: 'holder-b' })), 'fire');
    });

    withStores('pause: scheduled starts are recorded as paused and skipped; manual runs still start; resume', async (a, b) => {
      assert.equal(await a.setPaused(ID, true), null, 'unknown schedule');
      await a.register(ID, schedule.def, T0);
      assert.equal((await b.setPaused(ID, true))!.paused, true);
      const r = await a.advance(ID, { times: [T0 + 1000], policy: 'all', start: startReq(T0 + 1000, 'run-1') });
      assert.deepEqual(r, { run: [T0 + 1000], missed: 0, started: 'paused' });
      let s = (await a.get([ID])).get(ID)!;
      assert.equal(s.last?.outcome, 'paused');
      assert.equal(s.last_time, T0 + 1000, 'a paused time is accounted for: no catch-up of it after resume');
      assert.equal(s.counts.skipped, 1);
      assert.equal(await a.start(ID, startReq(T0 + 1500, 'manual-1', { honor_pause: false, record: record(T0 + 1500, 'manual-1', { manual: true }) })), 'fire');
      s = (await a.get([ID])).get(ID)!;
      assert.equal(s.last?.manual, true);
      assert.equal((await a.setPaused(ID, false))!.paused, false);
      assert.equal((await b.get([ID])).get(ID)!.paused, false);
    });

    withStores('unknown schedules are refused with schedule_not_found', async (a) => {
      await rejectsWith(a.advance('0123456789abcdef', { times: [T0], policy: 'all' }), 'schedule_not_found', '0123456789abcdef');
      await rejectsWith(a.start('0123456789abcdef', startReq(T0, 'r')), 'schedule_not_found', '0123456789abcdef');
      await a.finish('0123456789abcdef', { ...record(T0, 'r'), run_id: 'r', outcome: 'ok' }); // a no-op
    });

    withStores('holders: bindings of live holders are listed; expired holders are reaped; removeHolder', async (a, b) => {
      await a.heartbeat('holder-a', 'svc-cron', T0 + 10_000, [['t1', 's1'], ['t2', 's1']]);
      await b.heartbeat('holder-b', 'svc-cron-2', T0 + 5_000, [['t3', 's2']]);
      const key = (x: { trigger_id: string }) => x.trigger_id;
      assert.deepEqual((await a.liveBindings(T0)).sort((x, y) => key(x).localeCompare(key(y))), [
        { holder_id: 'holder-a', worker: 'svc-cron', trigger_id: 't1', schedule_id: 's1' },
        { holder_id: 'holder-a', worker: 'svc-cron', trigger_id: 't2', schedule_id: 's1' },
        { holder_id: 'holder-b', worker: 'svc-cron-2', trigger_id: 't3', schedule_id: 's2' },
      ]);
      // A heartbeat without bindings keeps them.
      await a.heartbeat('holder-a', 'svc-cron', T0 + 20_000, undefined);
      assert.deepEqual((await b.liveBindings(T0 + 6_000)).map(key).sort(), ['t1', 't2']);
      // holder-b expired and was reaped: coming back with a heartbeat alone has no bindings.
      await b.heartbeat('holder-b', 'svc-cron-2', T0 + 30_000, undefined);
      assert.deepEqual((await b.liveBindings(T0 + 6_000)).map(key).sort(), ['t1', 't2']);
      await a.removeHolder('holder-a');
      assert.deepEqual(await b.liveBindings(T0 + 6_000), []);
    });
  });
}
