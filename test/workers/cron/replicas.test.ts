/**
 * Three svc-cron replicas (processes sharing one embedded store, as `svc worker add svc-cron
 * --replicas 3` runs them) and two replicas of the bound worker, each binding the same schedule:
 * over a minute of `*​/2 * * * * *`, each scheduled second fires exactly once and on time, while
 * the replica holding the bindings is killed with SIGKILL twice, a quarter second after a fire (the
 * engine hands the bindings to the next replica, for which that fire is still due: it must find it
 * claimed, and neither repeat nor drop a fire).
 */
import { after, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEngine } from '../../helpers/engine.js';
import { WorkerPool } from '../../helpers/util.js';
import { assertEachOnceOnTime, recordFires, sleep, spawnCron, until, atMillisecond, type CronProcess } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-cron-replicas-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('three svc-cron replicas: each scheduled second fires exactly once over a minute, through two SIGKILLs of the active one', { timeout: 120_000 }, async () => {
  const engine = await startEngine();
  const pool = new WorkerPool(() => engine.url);
  const crons: CronProcess[] = [];
  try {
    const names = ['svc-cron-1', 'svc-cron-2', 'svc-cron-3'];
    for (const n of names) crons.push(spawnCron(engine.url, { data_dir: dir }, n));
    const client = pool.make('replicas-client');
    await client.ready();
    const provider = async (): Promise<string | undefined> => {
      const { trigger_types } = await client.trigger<{ trigger_types: Array<{ id: string; provider: { worker_name: string } | null; standby_providers: unknown[] }> }>({ function_id: 'engine::triggers::list' });
      const t = trigger_types.find((x) => x.id === 'cron');
      return t?.provider && t.standby_providers.length === 2 ? t.provider.worker_name : undefined;
    };
    await until('three svc-cron replicas providing cron', provider, 20_000);

    const a = pool.make('ticker');
    const b = pool.make('ticker');
    const fired = recordFires([a, b], 'tick::even');
    const config = { expression: '*/2 * * * * *' };
    await Promise.all([a.registerTrigger({ type: 'cron', function_id: 'tick::even', config }), b.registerTrigger({ type: 'cron', function_id: 'tick::even', config })]);
    await until('a first fire', () => fired.length > 0, 5000);
    const start = Date.now();

    for (const killAt of [20_000, 40_000]) {
      await sleep(start + killAt - Date.now());
      // Just after a fire (a quarter second past an even second): the replica taking over still
      // sees that time as due, and must find it claimed.
      await atMillisecond(250);
      if (Math.floor(Date.now() / 1000) % 2 === 1) await sleep(1000);
      const active = (await provider()) ?? (await until('a provider', provider));
      const i = names.indexOf(active);
      await crons[i]!.kill('SIGKILL');
      // Another replica holds the bindings at once; the killed one comes back, as the supervisor restarts it.
      crons[i] = spawnCron(engine.url, { data_dir: dir }, active);
      await until('the killed replica back as a standby', provider, 20_000);
    }
    await sleep(start + 61_000 - Date.now());

    assertEachOnceOnTime(fired, 2000, 60_000);
  } finally {
    await pool.closeAll();
    await Promise.all(crons.map((c) => c.kill('SIGTERM')));
    await engine.stop();
  }
});
