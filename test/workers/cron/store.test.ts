/** Runs the svc-cron store conformance suite against both stores: embedded (LMDB) and Redis. */
import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conformance } from './conformance.js';
import { openEmbeddedCronStore } from '../../../src/workers/cron/embedded-store.js';
import { openRedisCronStore } from '../../../src/workers/cron/redis-store.js';
import { startRedis, type RedisServer } from '../state/redis-server.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// Two handles on one LMDB environment, as two svc-cron processes sharing a data_dir have.
conformance('embedded', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cron-store-'));
  dirs.push(dir);
  return [await openEmbeddedCronStore(dir), await openEmbeddedCronStore(dir)];
});

let redis: RedisServer;
let n = 0;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});
// Each test gets its own key prefix in one server: isolated, and it proves the prefix isolates.
conformance('redis', async () => {
  const prefix = `t${++n}:svc:cron`;
  return [await openRedisCronStore(redis.url, prefix), await openRedisCronStore(redis.url, prefix)];
});
