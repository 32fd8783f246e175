/**
 * The channel relay between engines (channel-proxy.ts) at its edges: why a channel ended reaches a
 * relayed socket as it would a direct one, a relayed side slowed by backpressure is not taken for
 * a lost one, an upgrade that fails after the holding engine answered leaves nothing open there,
 * relays still opening count as sockets, and an engine shutting down tells its relayed sockets so
 * and ends those still opening; an engine other machines cannot reach at its default address warns.
 */
import { strict as assert } from 'node:assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { channelUrl, type SvcError, type Worker } from 'svc-sdk';
import { WebSocket } from 'ws';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually, sleep } from '../helpers/util.js';
import { assertPausedReaderGetsAll, rawChannelUpgrade } from '../helpers/channels.js';
import { clusterWorkers, startClusterEngine, TEST_LEASE_MS, type ClusterEngine } from './helpers.js';

// Short ping periods: a side the relay stopped reading misses several while it is paused.
const LIVENESS = { pingIntervalMs: 300, channelReaderStallMs: 5000 };

describe('cluster: the channel relay at its edges', () => {
  let redis: RedisServer;
  let e1: ClusterEngine, e2: ClusterEngine;
  const engines: ClusterEngine[] = [];
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const { make, shutdownAll } = clusterWorkers();
  let w1: Worker, w2: Worker;

  before(async () => {
    redis = await startRedis();
    e1 = await startClusterEngine(redis.url, 'r1', prefix, LIVENESS);
    e2 = await startClusterEngine(redis.url, 'r2', prefix, LIVENESS);
    engines.push(e1, e2);
    w1 = make(e1.url, 'maker-1');
    w2 = make(e2.url, 'user-2');
    await Promise.all([w1.ready(), w2.ready()]);
    await eventually(async () => {
      const r = await w2.trigger<{ nodes: Array<{ node_id: string }> }>({ function_id: 'engine::cluster::nodes' });
      assert.equal(r.nodes.length, 2);
    }, 10_000);
  });
  after(async () => {
    await shutdownAll();
    await Promise.all(engines.map((e) => e.stop()));
    await redis?.stop();
  });

  it("a relayed reader is told the holding engine's reason: its writer was lost, its owner closed it", { timeout: 30_000 }, async () => {
    const pair = await w1.createChannel();
    const reader = w2.openReader(pair.reader);
    reader.resume();
    await eventually(() => assert.equal(e2.engine.channels.relayedCount, 1));
    const writer = w1.openWriter(pair.writer);
    // Opened and written to: then it goes without finishing.
    await new Promise<void>((resolve, reject) => writer.write(Buffer.from('part'), (e) => (e ? reject(e) : resolve())));
    writer.destroy();
    const [lost] = (await once(reader, 'error')) as [SvcError];
    assert.equal(lost.code, 'channel_writer_lost', lost.message);

    const other = await w1.createChannel();
    const writer2 = w2.openWriter(other.writer);
    writer2.on('error', () => {});
    const errored = once(writer2, 'error');
    await eventually(() => assert.equal(e2.engine.channels.relayedCount, 1));
    await w1.trigger({ function_id: 'engine::channels::close', payload: { channel_id: other.writer.channel_id } });
    const [closed] = (await errored) as [SvcError];
    assert.equal(closed.code, 'channel_owner_closed', closed.message);
  });

  it('a relayed writer held by backpressure for many ping periods is slowed, not cut', { timeout: 30_000 }, async () => {
    const pair = await w1.createChannel();
    const reader = w1.openReader(pair.reader);
    reader.pause();
    const writer = w2.openWriter(pair.writer);
    const errors: string[] = [];
    reader.on('error', (e: SvcError) => errors.push(`reader ${e.code}`));
    writer.on('error', (e: SvcError) => errors.push(`writer ${e.code}`));
    const chunk = randomBytes(64 * 1024);
    const total = 48 * 1024 * 1024;
    const writing = (async () => {
      for (let sent = 0; sent < total && errors.length === 0; sent += chunk.length) {
        if (!writer.write(chunk)) await Promise.race([once(writer, 'drain'), once(writer, 'close')]);
      }
      writer.end();
    })();
    await sleep(2500);
    let n = 0;
    reader.on('data', (c: Buffer) => (n += c.length));
    reader.resume();
    await Promise.race([once(reader, 'end'), once(reader, 'close')]);
    await writing;
    assert.deepEqual(errors, []);
    assert.equal(n, total);
  });

  it('a relayed reader that pauses its socket for many ping periods is slowed, not cut', { timeout: 30_000 }, async () => {
    await assertPausedReaderGetsAll(w2, w1, 16 * 1024 * 1024, 2500);
  });

  it('an upgrade that fails after the holding engine opened the side leaves no socket open there', { timeout: 30_000 }, async () => {
    const pair = await w1.createChannel();
    // A key the channel accepts, a handshake the relaying engine does not (no valid Sec-WebSocket-Key).
    const answer = await rawChannelUpgrade(e2.url, `/ws/channels/${pair.reader.channel_id}?key=${pair.reader.access_key}&dir=read`, 'x');
    assert.match(answer, /^HTTP\/1\.1 400/);
    // The holding engine opened the side for the relay; with the client gone it must close again.
    await eventually(() => {
      assert.equal(e1.engine.channels.socketCount, 0, 'the upstream socket was left open on the holding engine');
      assert.equal(e1.engine.channels.size, 0);
    }, 3000);
  });

  it('a request target the relay cannot pass on (a fragment) is refused, and counts as no socket', { timeout: 30_000 }, async () => {
    const pair = await w1.createChannel();
    const before = e2.engine.channels.socketCount;
    const answer = await rawChannelUpgrade(e2.url, `/ws/channels/${pair.reader.channel_id}?key=${pair.reader.access_key}&dir=read#x`, 'dGhlIHNhbXBsZSBub25jZQ==');
    assert.match(answer, /^HTTP\/1\.1 400[^]*invalid_channel_ref/);
    assert.equal(e2.engine.channels.socketCount, before);
  });

  it('an engine shutting down tells the sockets it relays (shutting_down), as it tells its own', { timeout: 30_000 }, async () => {
    const e3 = await startClusterEngine(redis.url, 'r3', prefix, LIVENESS);
    engines.push(e3);
    const w3 = make(e3.url, 'user-3');
    await w3.ready();
    await eventually(async () => {
      const r = await w3.trigger<{ nodes: Array<{ node_id: string }> }>({ function_id: 'engine::cluster::nodes' });
      assert.equal(r.nodes.length, 3);
    }, 10_000);
    const pair = await w1.createChannel();
    const reader = w3.openReader(pair.reader);
    reader.resume();
    const errored = once(reader, 'error');
    await eventually(() => assert.equal(e3.engine.channels.relayedCount, 1));
    await w3.shutdown();
    await e3.stop();
    const [e] = (await errored) as [SvcError];
    assert.equal(e.code, 'shutting_down', e.message);
  });

  it('relays still opening count against max_connections, and end with the engine', { timeout: 30_000 }, async () => {
    // An engine whose advertise_url accepts and answers nothing: sockets relayed to it stay opening.
    const held: Socket[] = [];
    const blackhole = createServer((s) => {
      s.on('error', () => {});
      s.resume();
      held.push(s);
    });
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', () => resolve()));
    const advertiseUrl = `ws://127.0.0.1:${(blackhole.address() as AddressInfo).port}`;
    const eb = await startClusterEngine(redis.url, 'rb', prefix, { ...LIVENESS, cluster: { redisUrl: redis.url, nodeId: 'rb', leaseMs: TEST_LEASE_MS, prefix, advertiseUrl } });
    engines.push(eb);
    const e4 = await startClusterEngine(redis.url, 'r4', prefix, { ...LIVENESS, maxConnections: 3 });
    engines.push(e4);
    const wb = make(eb.url, 'maker-b');
    await wb.ready();
    const pair = await wb.createChannel();
    await eventually(() => assert.ok(e4.engine.cluster?.channelEngineUrl(pair.reader.channel_id)), 10_000);
    const clients: WebSocket[] = [];
    const answers = await Promise.all(
      Array.from(
        { length: 5 },
        () =>
          new Promise<string>((resolve) => {
            const ws = new WebSocket(channelUrl(e4.url, pair.reader));
            clients.push(ws);
            ws.on('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
            ws.on('open', () => resolve('open'));
            ws.on('error', () => resolve('error'));
            setTimeout(() => resolve('opening'), 1500);
          }),
      ),
    );
    assert.deepEqual(answers.sort(), ['503', '503', 'opening', 'opening', 'opening']);
    assert.equal(held.length, 3);
    const closed = held.map((s) => once(s, 'close'));
    await e4.stop();
    // Well before the upstream's handshake timeout (10 s): the engine ended them as it stopped.
    await Promise.race([Promise.all(closed), sleep(3000).then(() => assert.fail('relays still opening outlived their engine'))]);
    for (const ws of clients) ws.terminate();
    blackhole.close();
  });

  it('an engine listening on 0.0.0.0 without advertise_url warns that the others cannot reach its channels', { timeout: 30_000 }, async () => {
    const tokens = [{ name: 'admin', token: randomBytes(24).toString('hex'), admin: true, call: [], register: [], trigger_types: [] }];
    const e5 = await startClusterEngine(redis.url, 'r5', prefix, { host: '0.0.0.0', tokens });
    engines.push(e5);
    const warned = (e: ClusterEngine): boolean => e.engine.logs.list().some((l) => l.level === 'warn' && /advertise_url is not set/.test(l.message));
    assert.ok(warned(e5), 'the engine on 0.0.0.0 warns');
    assert.ok(!warned(e1), 'an engine on 127.0.0.1 does not');
  });
});
