/** engine.cluster in config.yaml, and what an engine does when it cannot join. */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Engine, EngineStartError } from '../../src/engine/server.js';
import { parseConfig } from '../../src/daemon/config-file.js';
import { ConfigFileError } from '../../src/engine/config/config-error.js';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { startClusterEngine, type ClusterEngine } from './helpers.js';

const parse = (yaml: string) => parseConfig('config.yaml', yaml).engine;

describe('engine.cluster in config.yaml', () => {
  it('is off by default', () => {
    assert.equal(parse('engine:\n  port: 0\n').cluster, null);
  });

  it('reads redis_url, node_id, lease_ms and prefix, with defaults', () => {
    assert.deepEqual(parse('engine:\n  cluster:\n    redis_url: redis://10.0.0.5:6379\n').cluster, { redisUrl: 'redis://10.0.0.5:6379', leaseMs: 3000, prefix: 'svc:cluster' });
    assert.deepEqual(parse('engine:\n  cluster:\n    redis_url: redis://r:1\n    node_id: eu-1\n    lease_ms: 5000\n    prefix: prod\n').cluster, {
      redisUrl: 'redis://r:1',
      nodeId: 'eu-1',
      leaseMs: 5000,
      prefix: 'prod',
    });
    process.env.SVC_TEST_POD_IP = '10.1.2.3';
    assert.equal(parse('engine:\n  cluster:\n    redis_url: redis://r:1\n    advertise_url: ws://${SVC_TEST_POD_IP}:49134\n').cluster?.advertiseUrl, 'ws://10.1.2.3:49134');
    // An IPv6 pod IP comes unbracketed from the environment.
    process.env.SVC_TEST_POD_IP = 'fd00:10:244::7';
    assert.equal(parse('engine:\n  cluster:\n    redis_url: redis://r:1\n    advertise_url: ws://${SVC_TEST_POD_IP}:49134\n').cluster?.advertiseUrl, 'ws://[fd00:10:244::7]:49134');
    assert.equal(parse('engine:\n  cluster:\n    redis_url: redis://r:1\n    advertise_url: ws://[::1]:49134\n').cluster?.advertiseUrl, 'ws://[::1]:49134');
    process.env.SVC_TEST_NODE_ID = 'from-env';
    assert.equal(parse('engine:\n  cluster:\n    redis_url: redis://r:1\n    node_id: ${SVC_TEST_NODE_ID}\n').cluster?.nodeId, 'from-env');
  });

  it('refuses bad values with the key named', () => {
    const bad: Array<[string, RegExp]> = [
      ['engine:\n  cluster: yes-please\n', /engine\.cluster: must be a mapping/],
      ['engine:\n  cluster:\n    node_id: a\n', /engine\.cluster\.redis_url: required/],
      ['engine:\n  cluster:\n    redis_url: http://r:1\n', /engine\.cluster\.redis_url: must start with redis:\/\//],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    node_id: "has space"\n', /engine\.cluster\.node_id: must be 1-64/],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    lease_ms: 10\n', /engine\.cluster\.lease_ms: must be an integer from 300/],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    leese_ms: 1000\n', /engine\.cluster\.leese_ms: unknown key/],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    advertise_url: http://10.0.0.1:49134\n', /engine\.cluster\.advertise_url: must be ws:\/\/host:port/],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    advertise_url: ws://10.0.0.1:49134/path\n', /engine\.cluster\.advertise_url: must be ws:\/\/host:port/],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    advertise_url: ws://10.0.0.1:port\n', /engine\.cluster\.advertise_url: must be ws:\/\/host:port/],
      ['engine:\n  cluster:\n    redis_url: redis://r:1\n    node_id: ${SVC_TEST_UNSET_VARIABLE}\n', /engine\.cluster\.node_id: environment variable SVC_TEST_UNSET_VARIABLE is not set/],
    ];
    for (const [yaml, re] of bad) assert.throws(() => parse(yaml), (e: Error) => e instanceof ConfigFileError && re.test(e.message), yaml);
  });
});

describe('joining a cluster', () => {
  let redis: RedisServer;
  let first: ClusterEngine | undefined;
  const prefix = `join-${randomUUID().slice(0, 8)}`;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await first?.stop();
    await redis?.stop();
  });

  it('fails to start, naming the key, when Redis cannot be reached', async () => {
    const e = new Engine({ host: '127.0.0.1', port: 0, printEvents: false, cluster: { redisUrl: 'redis://127.0.0.1:1', nodeId: 'x', leaseMs: 1000, prefix } });
    await assert.rejects(e.start(), (err: Error) => err instanceof EngineStartError && err.code === 'cluster_unavailable' && /engine\.cluster\.redis_url/.test(err.message));
  });

  it('names the Redis address without its password', async () => {
    const e = new Engine({ host: '127.0.0.1', port: 0, printEvents: false, cluster: { redisUrl: 'redis://:backplane-secret@127.0.0.1:1', nodeId: 'x', leaseMs: 1000, prefix } });
    await assert.rejects(e.start(), (err: Error) => {
      assert.match(err.message, /redis:\/\/:\*\*\*@127\.0\.0\.1:1/);
      assert.ok(!err.message.includes('backplane-secret'), err.message);
      return true;
    });
  });

  it('refuses a node id that a running engine holds', async () => {
    first = await startClusterEngine(redis.url, 'same', prefix);
    const t0 = Date.now();
    await assert.rejects(startClusterEngine(redis.url, 'same', prefix), (err: Error) => err instanceof EngineStartError && err.code === 'cluster_node_conflict' && /"same"/.test(err.message));
    assert.ok(Date.now() - t0 >= 1500, 'waited a whole lease before deciding');
  });

  it('defaults the node id to something unique', async () => {
    const a = await startClusterEngine(redis.url, undefined as unknown as string, prefix);
    const b = await startClusterEngine(redis.url, undefined as unknown as string, prefix);
    try {
      assert.notEqual(a.engine.cluster!.nodeId, b.engine.cluster!.nodeId);
      assert.match(a.engine.cluster!.nodeId, /^[A-Za-z0-9._-]+-[0-9a-f]{6}$/);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
