/**
 * Opening a built-in's Redis store is bounded (src/workers/shared/redis.ts): svc-state's, svc-queue's
 * and svc-cron's stores fail with `store_unavailable` naming the address (its password as ***) when
 * Redis does not answer within the connect timeout, and at once when it refuses the login, instead
 * of waiting for ever. A real redis-server with a password; a port nothing listens on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openRedisStore } from '../../../src/workers/state/redis-store.js';
import { openRedisQueueStore } from '../../../src/workers/queue/redis-store.js';
import { openRedisCronStore } from '../../../src/workers/cron/redis-store.js';
import { freePort } from '../../helpers/util.js';
import { startRedis, type RedisServer } from '../state/redis-server.js';

const PASSWORD = 'hunter2-the-redis-password';

/** Each store's opener, with the connect timeout given. */
const openers: Array<[string, (url: string, connectTimeoutMs: number) => Promise<{ close(): Promise<void> }>]> = [
  ['svc-state', (url, connectTimeoutMs) => openRedisStore({ url, maxValueBytes: 1024, connectTimeoutMs })],
  ['svc-queue', (url, connectTimeoutMs) => openRedisQueueStore({ url, connectTimeoutMs })],
  ['svc-cron', (url, connectTimeoutMs) => openRedisCronStore(url, 'svc:cron', { connectTimeoutMs })],
];

describe('opening a Redis store is bounded, and its error names the address without its password', { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let port: number;
  before(async () => {
    redis = await startRedis({ password: PASSWORD });
    port = Number(new URL(redis.url).port);
  });
  after(() => redis?.stop());

  for (const [name, open] of openers) {
    test(`${name}: nothing answers: store_unavailable after the connect timeout`, { timeout: 15_000 }, async () => {
      const closed = await freePort();
      const t0 = Date.now();
      await assert.rejects(open(`redis://:${PASSWORD}@127.0.0.1:${closed}`, 500), (e: Error & { code?: string }) => {
        assert.equal(e.code, 'store_unavailable');
        assert.match(e.message, new RegExp(`cannot connect to redis://:\\*\\*\\*@127\\.0\\.0\\.1:${closed}: no connection within 500 ms \\(last error: .*ECONNREFUSED`));
        assert.ok(!e.message.includes(PASSWORD), e.message);
        return true;
      });
      const took = Date.now() - t0;
      assert.ok(took >= 450 && took < 5000, `failed after ${took} ms`);
    });

    test(`${name}: a refused login fails at once with Redis' reason`, { timeout: 15_000 }, async () => {
      const t0 = Date.now();
      await assert.rejects(open(`redis://:wrong-password@127.0.0.1:${port}`, 30_000), (e: Error & { code?: string }) => {
        assert.equal(e.code, 'store_unavailable');
        assert.match(e.message, new RegExp(`cannot connect to redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}: WRONGPASS`));
        assert.ok(!e.message.includes('wrong-password'), e.message);
        return true;
      });
      // No password at all: Redis asks for one.
      await assert.rejects(open(`redis://127.0.0.1:${port}`, 30_000), (e: Error & { code?: string }) => {
        assert.equal(e.code, 'store_unavailable');
        assert.match(e.message, /NOAUTH/);
        return true;
      });
      assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    });

    test(`${name}: the right password opens the store`, async () => {
      const store = await open(`redis://:${PASSWORD}@127.0.0.1:${port}`, 5000);
      await store.close();
    });
  }
});
