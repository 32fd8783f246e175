/**
 * svc-cron stopped and started again (a process, on the embedded store): catch-up after downtime
 * with each policy, `kill -9` just after a fire, and the engine restarted across missed fires.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerWorker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { freePort, WorkerPool } from '../../helpers/util.js';
import { startCronWorker } from '../../../src/workers/cron/worker.js';
import { atMillisecond, countByTime, recordFires, sleep, spawnCron, until, type Fired } from './helpers.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'svc-cron-restart-'));
  dirs.push(d);
  return d;
};

const times = (fired: Fired[], from: number, to: number): number[] =>
  fired
    .map((f) => Date.parse(f.scheduled_time))
    .filter((t) => t > from && t < to)
    .sort((a, b) => a - b);

test('catch-up: svc-cron stopped across three fires; none runs none, last runs the latest, all runs the three; none runs twice', { timeout: 60_000 }, async () => {
  const engine = await startEngine();
  const pool = new WorkerPool(() => engine.url);
  const dir = tempDir();
  let cron = spawnCron(engine.url, { data_dir: dir });
  try {
    const w = pool.make('catch-up');
    const fired = { none: [] as Fired[], last: [] as Fired[], all: [] as Fired[] };
    for (const policy of ['none', 'last', 'all'] as const) {
      fired[policy] = recordFires([w], `catchup::${policy}`);
      await w.registerTrigger({ type: 'cron', function_id: `catchup::${policy}`, config: { expression: '*/2 * * * * *', catch_up: policy } });
    }
    await until('a fire of each', () => fired.none.length > 0 && fired.last.length > 0 && fired.all.length > 0, 10_000);
    // Stop just after an even second's fire T ...
    await atMillisecond(300);
    if (Math.floor(Date.now() / 1000) % 2 === 1) await sleep(1000);
    const T = Math.floor(Date.now() / 1000) * 1000;
    await until('the fires of T', () => (['none', 'last', 'all'] as const).every((p) => fired[p].some((f) => Date.parse(f.scheduled_time) === T)), 2000);
    await cron.kill('SIGTERM');
    // ... and start again 1.3 s after T+6: T+2, T+4 and T+6 were missed (T+6 is past the 1 s on-time margin).
    await sleep(T + 7300 - Date.now());
    cron = spawnCron(engine.url, { data_dir: dir });
    await sleep(T + 12_500 - Date.now());

    assert.deepEqual(times(fired.none, T, T + 7000), [], 'catch_up none');
    assert.deepEqual(times(fired.last, T, T + 7000), [T + 6000], 'catch_up last');
    assert.deepEqual(times(fired.all, T, T + 7000), [T + 2000, T + 4000, T + 6000], 'catch_up all');
    for (const p of ['none', 'last', 'all'] as const) {
      // After the restart the schedule goes on as usual: T+10 and T+12 on time.
      assert.deepEqual(times(fired[p], T + 9000, T + 12_500), [T + 10_000, T + 12_000], `${p}: fires after the restart`);
      for (const [t, n] of countByTime(fired[p])) assert.equal(n, 1, `${p}: ${t} ran ${n} times`);
    }
    // The catch-up runs carry their own scheduled times and run after the restart.
    const caught = fired.all.filter((f) => Date.parse(f.scheduled_time) === T + 2000)[0]!;
    assert.ok(caught.at >= T + 7300, 'ran after the restart');
    const client = pool.make('catch-up-client');
    const { schedules } = await client.trigger<{ schedules: Array<{ function_id: string; counts: { missed: number } }> }>({ function_id: 'cron::list' });
    assert.equal(schedules.find((s) => s.function_id === 'catchup::none')!.counts.missed, 3);
    assert.equal(schedules.find((s) => s.function_id === 'catchup::last')!.counts.missed, 2);
    assert.equal(schedules.find((s) => s.function_id === 'catchup::all')!.counts.missed, 0);
  } finally {
    await pool.closeAll();
    await cron.kill('SIGTERM');
    await engine.stop();
  }
});

test('kill -9 of svc-cron just after a fire: after the restart that fire is not repeated', { timeout: 60_000 }, async () => {
  const engine = await startEngine();
  const pool = new WorkerPool(() => engine.url);
  const dir = tempDir();
  let cron = spawnCron(engine.url, { data_dir: dir });
  try {
    const w = pool.make('killed');
    let killed: Promise<void> | undefined;
    let killedAt = 0;
    // The handler of `killed::allow` kills svc-cron the moment its 3rd fire reaches it, and svc-cron
    // is started again at once: that fire is still due (well inside the 1 s on-time margin) when
    // the new process looks, so only the claim written before the call keeps it from running again.
    const allow = recordFires([w], 'killed::allow', (f) => {
      if (!killed && allow.length === 3) {
        killedAt = Date.parse(f.scheduled_time);
        killed = cron.kill('SIGKILL').then(() => {
          cron = spawnCron(engine.url, { data_dir: dir });
        });
      }
      return null;
    });
    // The same schedule with overlap skip: the killed process's run of it (cancelled by the engine
    // when svc-cron died) holds up its next fires until that process's lease lapses (3 s).
    const skip = recordFires([w], 'killed::skip');
    await w.registerTrigger({ type: 'cron', function_id: 'killed::skip', config: { expression: '* * * * * *' } });
    await w.registerTrigger({ type: 'cron', function_id: 'killed::allow', config: { expression: '* * * * * *', overlap: 'allow', catch_up: 'all' } });
    await until('the kill', () => killed !== undefined, 10_000);
    await killed;
    await sleep(killedAt + 6500 - Date.now());
    const at = new Date(killedAt).toISOString();
    assert.equal(countByTime(allow).get(at), 1, `killed::allow: the fire of ${at} ran ${countByTime(allow).get(at)} times`);
    // killed::skip's fire of the same second may have been claimed and not yet called when svc-cron
    // died (at most once): it ran once or not at all, never twice.
    for (const [name, fired] of [['allow', allow], ['skip', skip]] as const) {
      const counts = countByTime(fired);
      for (const [t, n] of counts) assert.equal(n, 1, `killed::${name}: ${t} ran ${n} times`);
      assert.ok(Math.max(...[...counts.keys()].map(Date.parse)) >= killedAt + 5000, `killed::${name}: fires went on after the restart`);
    }
    // overlap allow, catch_up all: nothing dropped, every second from the first fire to the last ran.
    const all = [...countByTime(allow).keys()].map(Date.parse).sort((a, b) => a - b);
    assert.equal(all.length, (all[all.length - 1]! - all[0]!) / 1000 + 1, `gaps in ${all.map((t) => new Date(t).toISOString()).join(', ')}`);
  } finally {
    await pool.closeAll();
    await cron.kill('SIGTERM');
    await engine.stop();
  }
});

test('the engine restarted across missed fires: svc-cron catches up (last) once it has the bindings again, and nothing runs twice', { timeout: 60_000 }, async () => {
  const port = await freePort();
  let engine = await startEngine({ port });
  const url = engine.url;
  const dir = tempDir();
  // svc-cron in this process, to give it the quick reconnection the bound worker has too.
  const cron = await startCronWorker({ url, config: { data_dir: dir }, echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
  const w = registerWorker(url, { workerName: 'engine-restart', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
  try {
    const fired = recordFires([w], 'restart::job');
    await w.registerTrigger({ type: 'cron', function_id: 'restart::job', config: { expression: '*/2 * * * * *', catch_up: 'last' } });
    await until('a fire', () => fired.length > 0, 10_000);
    // Stop the engine just after an even second's fire T; start it again 1.3 s after T+6.
    await atMillisecond(300);
    if (Math.floor(Date.now() / 1000) % 2 === 1) await sleep(1000);
    const T = Math.floor(Date.now() / 1000) * 1000;
    await until('the fire of T', () => fired.some((f) => Date.parse(f.scheduled_time) === T), 2000);
    await engine.stop();
    await sleep(T + 7300 - Date.now());
    engine = await startEngine({ port });
    await sleep(T + 12_500 - Date.now());
    assert.deepEqual(times(fired, T, T + 7000), [T + 6000], 'catch_up last: the latest missed fire, once');
    assert.deepEqual(times(fired, T + 9000, T + 12_500), [T + 10_000, T + 12_000], 'fires after the restart');
    for (const [t, n] of countByTime(fired)) assert.equal(n, 1, `${t} ran ${n} times`);
  } finally {
    await w.shutdown();
    await cron.shutdown();
    await engine.stop();
  }
});
