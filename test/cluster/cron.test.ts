/**
 * svc-cron in cluster mode: two engines on one Redis, an svc-cron process attached to each (Redis
 * store), and a replica of the bound worker on each engine binding the same schedule. Each engine
 * hands its binding to its own svc-cron, so both run a timer for the schedule and race to claim
 * every time; over a minute of `*​/2 * * * * *` each scheduled second fires exactly once, on time.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { registerWorker, type Worker } from 'svc-sdk';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { assertEachOnceOnTime, recordFires, sleep, spawnCron, until, type CronProcess } from '../workers/cron/helpers.js';
import { startClusterEngine, type ClusterEngine } from './helpers.js';

describe('cluster: cron schedules fire once across engines', () => {
  let redis: RedisServer;
  let engines: ClusterEngine[] = [];
  const crons: CronProcess[] = [];
  const workers: Worker[] = [];
  const prefix = `cron-${randomUUID().slice(0, 8)}`;
  const make = (url: string, name: string): Worker => {
    const w = registerWorker(url, { workerName: name, echoLogs: false });
    workers.push(w);
    return w;
  };

  before(async () => {
    redis = await startRedis();
    engines = [await startClusterEngine(redis.url, 'n1', prefix), await startClusterEngine(redis.url, 'n2', prefix)];
    for (const [i, e] of engines.entries()) crons.push(spawnCron(e.url, { store: 'redis', redis_url: redis.url, redis_key_prefix: `${prefix}:cron` }, `svc-cron-n${i + 1}`));
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
    await Promise.all(crons.map((c) => c.kill('SIGTERM')));
    await Promise.all(engines.map((e) => e.stop()));
    await redis?.stop();
  });

  it('each scheduled second fires exactly once over a minute, though both engines\' svc-cron hold a binding of it', { timeout: 120_000 }, async () => {
    const replicas = engines.map((e, i) => make(e.url, `ticker-n${i + 1}`));
    const fired = recordFires(replicas, 'tick::cluster');
    const client = make(engines[0]!.url, 'cluster-cron-client');
    // Each svc-cron must provide the type on its own engine before the bindings come, or the
    // engine without one would hand its binding to the other engine's svc-cron.
    await until('svc-cron on both engines', async () => {
      const lists = await Promise.all(
        engines.map((e, i) =>
          (i === 0 ? client : make(e.url, `probe-n${i + 1}`))
            .trigger<{ trigger_types: Array<{ id: string; provider: { worker_name: string } | null }> }>({ function_id: 'engine::triggers::list' })
            .catch(() => ({ trigger_types: [] })),
        ),
      );
      return lists.every((l, i) => l.trigger_types.some((t) => t.id === 'cron' && t.provider?.worker_name === `svc-cron-n${i + 1}`));
    }, 20_000);
    const config = { expression: '*/2 * * * * *', payload: { job: 'cluster' } };
    const triggers = await Promise.all(replicas.map((w) => w.registerTrigger({ type: 'cron', function_id: 'tick::cluster', config })));
    // Both svc-cron processes hold one binding each of the one schedule.
    const view = await until('both bindings in cron::list', async () => {
      const { schedules } = await client.trigger<{ schedules: Array<{ trigger_ids: string[]; held_by: string[] }> }>({ function_id: 'cron::list', payload: { function_id: 'tick::cluster' } });
      return schedules.length === 1 && schedules[0]!.trigger_ids.length === 2 ? schedules[0] : undefined;
    }, 10_000);
    assert.deepEqual(view.held_by, ['svc-cron-n1', 'svc-cron-n2']);
    assert.deepEqual(view.trigger_ids, triggers.map((t) => t.id).sort());

    await until('a first fire', () => fired.length > 0, 5000);
    await sleep(61_000);

    assertEachOnceOnTime(fired, 2000, 60_000);
    // Which svc-cron won each claim (the fire carries the id of the binding that svc-cron holds).
    const byCron = triggers.map((t) => fired.filter((f) => f.trigger_id === t.id).length);
    process.stdout.write(`# claims won: svc-cron-n1 ${byCron[0]}, svc-cron-n2 ${byCron[1]}\n`);
  });
});
