/**
 * Issue 22: an unmodified iii-sdk 0.22.1 worker uses svc's channels as it uses iii's: it creates a
 * channel with its `createChannel` helper and streams to an svc-sdk reader, and it is handed refs in
 * a payload (which iii's SDK turns into ChannelReader/ChannelWriter) and answers through them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { createChannel } from 'iii-sdk/helpers';
import type { Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually, WorkerPool } from '../helpers/util.js';

let engine: Awaited<ReturnType<typeof startEngine>>;
let iii: IIIClient;
const pool = new WorkerPool(() => engine.url);
let ours: Worker;

before(async () => {
  engine = await startEngine();
  iii = registerIiiWorker(engine.url, { workerName: 'iii-channels' });
  ours = pool.make('svc-channels');
  await ours.ready();
});
after(async () => {
  await iii?.shutdown();
  await pool.closeAll();
  await engine?.stop();
});

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test("iii's createChannel: an iii writer streams 8 MB to an svc-sdk reader byte-exact", async () => {
  const channel = await createChannel(iii);
  assert.equal(channel.readerRef.direction, 'read');
  const reader = ours.openReader(channel.readerRef);
  const got = reader.readAll();
  const data = randomBytes(8 * 1024 * 1024);
  channel.writer.stream.end(data);
  assert.equal(sha(await got), sha(data));
});

test('refs in a payload: an iii handler reads one channel and answers through another, text frames included', async () => {
  iii.registerFunction('iii::upper', async (input: { body: { readAll(): Promise<Buffer> }; response: { sendMessage(m: string): void; stream: NodeJS.WritableStream } }) => {
    const text = (await input.body.readAll()).toString();
    input.response.sendMessage(JSON.stringify({ type: 'set_status', status_code: 201 }));
    input.response.stream.end(Buffer.from(text.toUpperCase()));
    return { length: text.length };
  });
  await eventually(async () => {
    const listed = (await ours.trigger({ function_id: 'engine::functions::list' })) as { functions: Array<{ function_id: string }> };
    assert.ok(listed.functions.some((f) => f.function_id === 'iii::upper'));
  }, 10_000);
  const body = await ours.createChannel();
  const response = await ours.createChannel();
  const reader = ours.openReader(response.reader);
  const texts: string[] = [];
  reader.on('text', (t: string) => texts.push(t));
  const answer = reader.readAll();
  const call = ours.trigger({ function_id: 'iii::upper', payload: { body: body.reader, response: response.writer } });
  ours.openWriter(body.writer).end('stream me');
  assert.deepEqual(await call, { length: 9 });
  assert.equal((await answer).toString(), 'STREAM ME');
  assert.deepEqual(texts, ['{"type":"set_status","status_code":201}']);
});
