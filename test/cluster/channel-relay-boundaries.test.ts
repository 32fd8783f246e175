/**
 * The channel relay (channel-proxy.ts) at the boundaries every input path has: tokens (the relaying
 * engine refuses a socket without one, and the holding engine checks the one passed on), a web
 * page's Origin (refused before anything is relayed), and the holding engine killed with -9 while
 * a relayed side is open (the relayed socket ends; nothing stays open on the relaying engine), and
 * a holding engine that takes the connection but never answers the upgrade (the relaying engine's
 * handshake_timeout_ms bounds the wait).
 */
import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { channelUrl, registerWorker, type SvcError, type Worker } from 'svc-sdk';
import { WebSocket } from 'ws';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually } from '../helpers/util.js';
import { clusterWorkers, spawnClusterEngine, startClusterEngine, TEST_LEASE_MS, type ClusterEngine, type EngineProcess } from './helpers.js';

/** The HTTP status a channel socket's upgrade is refused with (0: it opened). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.terminate();
      resolve(0);
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? -1);
      res.resume();
      ws.terminate();
    });
    ws.once('error', () => resolve(-1));
  });
}

describe('cluster: the channel relay at its boundaries', () => {
  let redis: RedisServer;
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const engines: ClusterEngine[] = [];
  const workers: Worker[] = [];
  let child: EngineProcess | undefined;
  const { make, shutdownAll } = clusterWorkers();

  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
    await shutdownAll();
    await child?.kill();
    await Promise.all(engines.map((e) => e.stop()));
    await redis?.stop();
  });

  it("tokens: no token is refused by the relaying engine; a token passes on to the holding engine, which checks it; a web page's Origin is refused", { timeout: 30_000 }, async () => {
    const admin = randomBytes(24).toString('hex');
    const tokens = [{ name: 'admin', token: admin, admin: true, call: [], register: [], trigger_types: [] }];
    const a = await startClusterEngine(redis.url, 'ta', `${prefix}-t`, { tokens });
    const b = await startClusterEngine(redis.url, 'tb', `${prefix}-t`, { tokens });
    engines.push(a, b);
    const maker = registerWorker(a.url, { workerName: 'maker-a', echoLogs: false, token: admin });
    const user = registerWorker(b.url, { workerName: 'user-b', echoLogs: false, token: admin });
    workers.push(maker, user);
    await Promise.all([maker.ready(), user.ready()]);
    await eventually(async () => assert.equal((await user.trigger<{ nodes: unknown[] }>({ function_id: 'engine::cluster::nodes' })).nodes.length, 2), 10_000);
    const pair = await maker.createChannel();
    const relayed = channelUrl(b.url, pair.reader);
    assert.equal(await upgradeStatus(relayed, {}), 401, 'no token: refused on the relaying engine');
    assert.equal(await upgradeStatus(relayed, { origin: 'http://evil.example' }), 403, 'a web page: refused before any relay');
    assert.equal(b.engine.channels.relayedCount, 0);
    // With the token (the SDK presents the worker's), the relay opens the side on engine a.
    const reader = user.openReader(pair.reader);
    const got = reader.readAll();
    maker.openWriter(pair.writer).end(Buffer.from('through both engines'));
    assert.equal((await got).toString(), 'through both engines');
  });

  it('kill -9 of the engine holding the channel ends the relayed side; nothing stays open on the relaying engine', { timeout: 30_000 }, async () => {
    child = await spawnClusterEngine(redis.url, 'kill-a', `${prefix}-k`);
    const b = await startClusterEngine(redis.url, 'kill-b', `${prefix}-k`);
    engines.push(b);
    const maker = make(child.url, 'maker-doomed');
    const user = make(b.url, 'user-b');
    await Promise.all([maker.ready(), user.ready()]);
    await eventually(async () => assert.equal((await user.trigger<{ nodes: unknown[] }>({ function_id: 'engine::cluster::nodes' })).nodes.length, 2), 10_000);
    const pair = await maker.createChannel();
    const reader = user.openReader(pair.reader);
    const writer = maker.openWriter(pair.writer);
    writer.on('error', () => {}); // its own engine dies too
    writer.write(Buffer.alloc(1000));
    await once(reader, 'data');
    assert.equal(b.engine.channels.relayedCount, 1);
    const ended = once(reader, 'error') as Promise<[SvcError]>;
    await child.kill('SIGKILL');
    const [err] = await ended;
    assert.ok(typeof err.code === 'string' && err.code.startsWith('channel_'), `the reader learns its channel ended: ${err.code} ${err.message}`);
    await eventually(() => assert.equal(b.engine.channels.relayedCount, 0), 5000);
    assert.equal(b.engine.channels.socketCount, 0);
  });

  it("a holding engine that never answers the upgrade: the relay gives up after the relaying engine's handshake_timeout_ms with channel_engine_unreachable", { timeout: 30_000 }, async () => {
    // Takes connections and says nothing: what a hung engine, or a wrong advertise_url, looks like.
    const held: Socket[] = [];
    const silent = createServer((s) => held.push(s));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const port = (silent.address() as { port: number }).port;
    try {
      const advertiseUrl = `ws://127.0.0.1:${port}`;
      const a = await startClusterEngine(redis.url, 'hang-a', `${prefix}-h`, { cluster: { redisUrl: redis.url, nodeId: 'hang-a', leaseMs: TEST_LEASE_MS, prefix: `${prefix}-h`, advertiseUrl } });
      const b = await startClusterEngine(redis.url, 'hang-b', `${prefix}-h`, { handshakeTimeoutMs: 600 });
      engines.push(a, b);
      const maker = make(a.url, 'maker-hang');
      const user = make(b.url, 'user-hang');
      await Promise.all([maker.ready(), user.ready()]);
      await eventually(async () => assert.equal((await user.trigger<{ nodes: unknown[] }>({ function_id: 'engine::cluster::nodes' })).nodes.length, 2), 10_000);
      const pair = await maker.createChannel();
      const started = Date.now();
      const ws = new WebSocket(channelUrl(b.url, pair.reader));
      ws.on('error', () => {});
      const [, res] = (await once(ws, 'unexpected-response')) as [unknown, import('node:http').IncomingMessage];
      const waited = Date.now() - started;
      let body = '';
      for await (const c of res) body += c;
      ws.terminate();
      assert.equal(res.statusCode, 502);
      assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'channel_engine_unreachable');
      assert.ok(held.length >= 1, 'the relay connected to the silent engine');
      assert.ok(waited >= 500 && waited < 4000, `refused after ${waited} ms: handshake_timeout_ms is 600`);
      await eventually(() => assert.equal(b.engine.channels.socketCount, 0), 5000);
    } finally {
      for (const s of held) s.destroy();
      silent.close();
    }
  });
});
