/** Runs the conformance suite against both stores: embedded (LMDB) and Redis (a private redis-server). */
import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conformance } from './conformance.js';
import { openEmbeddedStore } from '../../../src/workers/state/embedded-store.js';
import { openRedisStore } from '../../../src/workers/state/redis-store.js';
import { startRedis, type RedisServer } from './redis-server.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

conformance('embedded', async (limits) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-state-'));
  dirs.push(dir);
  return openEmbeddedStore({ dataDir: dir, ...limits });
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
conformance('redis', async (limits) => openRedisStore({ url: redis.url, keyPrefix: `t${++n}:svc:state`, ...limits }));
