/** Runs the queue conformance suite against both stores: embedded (LMDB) and Redis (a private redis-server). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { job, queueConformance } from './conformance.js';
import { openEmbeddedQueueStore } from '../../../src/workers/queue/embedded-store.js';
import { openRedisQueueStore } from '../../../src/workers/queue/redis-store.js';
import { startRedis, type RedisServer } from '../state/redis-server.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'svc-queue-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

queueConformance('embedded', () => openEmbeddedQueueStore({ dataDir: tempDir() }));

let redis: RedisServer;
let n = 0;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});
// Each test gets its own key prefix in one server: isolated, and it proves the prefix isolates.
queueConformance('redis', () => openRedisQueueStore({ url: redis.url, keyPrefix: `t${++n}:svc:queue` }));

const limits = { q: { concurrency: 10, leaseMs: 1000, maxJobs: 100, maxBytes: 1 << 20 } };
const emptyStep = { enqueue: [], publish: [], complete: [], fail: [], claim: {}, absent: [], maintain: false };

test('embedded store: jobs survive closing and reopening the data directory', async () => {
  const dir = tempDir();
  let store = await openEmbeddedQueueStore({ dataDir: dir });
  await store.step({ ...emptyStep, now: 1, limits, enqueue: [job('kept'), job('late', { runAt: 10_000 })] });
  await store.close();
  store = await openEmbeddedQueueStore({ dataDir: dir });
  try {
    const c = (await store.counts(['q']))[0]!;
    assert.deepEqual([c.waiting, c.delayed, c.jobs], [1, 1, 2]);
    const out = await store.step({ ...emptyStep, now: 2, limits, claim: { q: 5 } });
    assert.deepEqual(out.claimed.map((j) => j.id), ['kept']);
  } finally {
    await store.close();
  }
});

test('redis store: steps go on after Redis lost its script (SCRIPT FLUSH, as after a restart)', async () => {
  const store = await openRedisQueueStore({ url: redis.url, keyPrefix: 'noscript:svc:queue' });
  const admin = createClient({ url: redis.url });
  try {
    await admin.connect();
    await admin.scriptFlush();
    const out = await store.step({ ...emptyStep, now: 1, limits, enqueue: [job('a')], claim: { q: 1 } });
    assert.deepEqual(out.claimed.map((j) => j.id), ['a']);
  } finally {
    await admin.close().catch(() => {});
    await store.close();
  }
});
