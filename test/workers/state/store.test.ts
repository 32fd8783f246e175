/** Runs the conformance suite against both stores: embedded (LMDB) and Redis (a private redis-server). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'redis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conformance } from './conformance.js';
import { openEmbeddedStore } from '../../../src/workers/state/embedded-store.js';
import { openRedisStore } from '../../../src/workers/state/redis-store.js';
import { startRedis, type RedisServer } from './redis-server.js';
import { stateFunctions } from '../../../src/workers/state/service.js';

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

test('redis store: writes go on after Redis lost its script (SCRIPT FLUSH, as after a restart)', async () => {
  const limits = { maxValueBytes: 1024 };
  const store = await openRedisStore({ url: redis.url, keyPrefix: 'noscript:svc:state', ...limits });
  const admin = createClient({ url: redis.url });
  try {
    const fn = stateFunctions(store, limits);
    assert.deepEqual(await fn['state::set']({ scope: 's', key: 'k', value: 1 }), { old_value: null, new_value: 1 });
    await admin.connect();
    await admin.scriptFlush();
    const [a, b] = await Promise.all([
      fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'increment' }] }),
      fn['state::update']({ scope: 's', key: 'k', ops: [{ type: 'increment' }] }),
    ]);
    assert.deepEqual([a, b], [
      { old_value: 1, new_value: 2 },
      { old_value: 2, new_value: 3 },
    ]);
    assert.equal(await fn['state::get']({ scope: 's', key: 'k' }), 3);
  } finally {
    await admin.close().catch(() => {});
    await store.close();
  }
});
