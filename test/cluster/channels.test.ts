/**
 * Channels across engines: a channel made on one engine is used by workers connected to another
 * (each opens it on its own engine, which relays to the engine holding it: channel-proxy.ts), with
 * its data byte-exact, its backpressure, its refusals and its end; and an svc-http streaming route
 * whose function runs on the other engine.
 */
import { strict as assert } from 'node:assert';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { channelUrl, SvcError, type ChannelRef, type Worker } from 'svc-sdk';
import { startHttpWorker, type HttpWorkerHandle } from '../../src/workers/http/worker.js';
import { startRedis, type RedisServer } from '../workers/state/redis-server.js';
import { eventually, sleep } from '../helpers/util.js';
import { assertEarlyReaderCloseEndsWriter } from '../helpers/channels.js';
import { clusterWorkers, startClusterEngine, type ClusterEngine } from './helpers.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('cluster: channels across engines', () => {
  let redis: RedisServer;
  let e1: ClusterEngine, e2: ClusterEngine;
  let http: HttpWorkerHandle | undefined;
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const { make, shutdownAll } = clusterWorkers();
  let w1: Worker, w2: Worker;

  before(async () => {
    redis = await startRedis();
    e1 = await startClusterEngine(redis.url, 'n1', prefix);
    e2 = await startClusterEngine(redis.url, 'n2', prefix);
    w1 = make(e1.url, 'maker-1');
    w2 = make(e2.url, 'user-2');
    await Promise.all([w1.ready(), w2.ready()]);
    await eventually(async () => {
      const r = await w1.trigger<{ nodes: Array<{ node_id: string }> }>({ function_id: 'engine::cluster::nodes' });
      assert.equal(r.nodes.length, 2);
    }, 10_000);
  });
  after(async () => {
    await http?.shutdown();
    await shutdownAll();
    await Promise.all([e1, e2].map((e) => e?.stop()));
    await redis?.stop();
  });

  it('a channel made on engine 1 is read on engine 2: 20 MB and a text frame, byte-exact and in order', async () => {
    const pair = await w1.createChannel();
    assert.match(pair.reader.channel_id, /^n1~/, 'the id names its engine');
    const data = randomBytes(20 * 1024 * 1024);
    const reader = w2.openReader(pair.reader);
    const texts: string[] = [];
    reader.on('text', (t: string) => texts.push(t));
    const got = reader.readAll();
    const writer = w1.openWriter(pair.writer);
    await writer.sendText('{"status":201}');
    writer.end(data);
    assert.equal(sha(await got), sha(data));
    assert.deepEqual(texts, ['{"status":201}']);
    await eventually(() => {
      assert.equal(e1.engine.channels.size, 0);
      assert.equal(e2.engine.channels.relayedCount, 0, 'the relay closed with the channel');
    }, 3000);
  });

  it('written from engine 2 into a channel of engine 1, with backpressure through the relay', async () => {
    const pair = await w1.createChannel();
    const reader = w1.openReader(pair.reader);
    reader.pause();
    const writer = w2.openWriter(pair.writer);
    const chunk = randomBytes(64 * 1024);
    const total = 48 * 1024 * 1024;
    let accepted = 0;
    const writing = (async () => {
      for (let sent = 0; sent < total; sent += chunk.length) {
        if (!writer.write(chunk)) await once(writer, 'drain');
        accepted += chunk.length;
      }
      writer.end();
    })();
    await sleep(1500);
    // Windows of both engines plus socket buffers: a few MB, not 48.
    assert.ok(accepted < 20 * 1024 * 1024, `the writer got ${accepted} bytes accepted while nobody read`);
    let n = 0;
    reader.on('data', (c: Buffer) => (n += c.length));
    reader.resume();
    await once(reader, 'end');
    await writing;
    assert.equal(n, total);
  });

  it("the holding engine's refusals reach a worker on the other engine as they are", async () => {
    const pair = await w1.createChannel();
    const wrongKey: ChannelRef = { ...pair.reader, access_key: randomBytes(32).toString('base64url') };
    const bad = w2.openReader(wrongKey);
    const [e] = (await once(bad, 'error')) as [SvcError];
    assert.equal(e.code, 'channel_key_invalid', e.message);
    const ok = w2.openReader(pair.reader);
    const done = ok.readAll();
    const again = w2.openReader(pair.reader);
    const [e2err] = (await once(again, 'error')) as [SvcError];
    assert.equal(e2err.code, 'channel_in_use', e2err.message);
    w1.openWriter(pair.writer).end(Buffer.from('done'));
    assert.equal((await done).toString(), 'done');
    // An id naming an engine not in the cluster is unknown here, as any other.
    const nowhere = w2.openReader({ ...pair.reader, channel_id: `n9~${randomUUID()}` });
    const [e3] = (await once(nowhere, 'error')) as [SvcError];
    assert.equal(e3.code, 'channel_not_found', e3.message);
  });

  it('ends pass through the relay with their codes: a reader gone early, a writer lost', async () => {
    // The sides that learn the end are the relayed ones (on engine 2): the reason crosses the relay.
    await assertEarlyReaderCloseEndsWriter(w1, w2);
    // A writer on engine 1 lost without a close (its socket cut): the reader on engine 2 learns it.
    const next = await w1.createChannel();
    const r2 = w2.openReader(next.reader);
    const raw = new WebSocket(channelUrl(e1.url, next.writer));
    await once(raw, 'open');
    raw.send(Buffer.alloc(10));
    await once(r2, 'data');
    raw.terminate();
    const [lost] = (await once(r2, 'error')) as [SvcError];
    assert.equal(lost.code, 'channel_writer_lost', lost.message);
  });

  it('a streaming HTTP route served by svc-http on engine 1, its function on engine 2', async () => {
    http = await startHttpWorker({ url: e1.url, host: '127.0.0.1', port: 0 });
    w2.registerFunction('upload::hash', async (req: { request_body: ChannelRef }) => {
      const body = await w2.openReader(req.request_body).readAll();
      return { status_code: 200, body: { bytes: body.length, sha: sha(body) } };
    });
    await w2.registerTrigger({ type: 'http', function_id: 'upload::hash', config: { api_path: 'upload', http_method: 'POST', stream: true } });
    const body = randomBytes(5 * 1024 * 1024);
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${http!.port}/upload`, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
      assert.equal(res.status, 200, await res.clone().text());
      assert.deepEqual(await res.json(), { bytes: body.length, sha: sha(body) });
    }, 10_000);
  });
});
