/**
 * Issue 22 part 2 (item 5): an unmodified iii-sdk 0.22.1 HTTP handler streams through svc-http as
 * through iii's: with svc-http's `streaming: all` every route's payload carries `request_body` and
 * `response` refs, which iii's SDK turns into its ChannelReader/ChannelWriter; the handler reads
 * the upload, sends set_status/set_headers with `sendMessage` and the body through `stream`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../src/workers/http/worker.js';

interface IiiReader {
  readAll(): Promise<Buffer>;
}
interface IiiWriter {
  sendMessage(m: string): void;
  stream: NodeJS.WritableStream;
}
interface IiiHttpRequest {
  request_body: IiiReader;
  response: IiiWriter;
  headers: Record<string, string>;
}

let engine: Awaited<ReturnType<typeof startEngine>>;
let http: HttpWorkerHandle;
let iii: IIIClient;
let base: string;

before(async () => {
  engine = await startEngine();
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica: 0 });
  http = await startHttpWorker({ url: engine.url, port: 0, runSecret, requestLog: false, streaming: 'all' });
  base = `http://127.0.0.1:${http.port}`;
  iii = registerIiiWorker(engine.url, { workerName: 'iii-http' });

  iii.registerFunction('iii::upper', async (req: IiiHttpRequest) => {
    const text = (await req.request_body.readAll()).toString();
    req.response.sendMessage(JSON.stringify({ type: 'set_status', status_code: 201 }));
    req.response.sendMessage(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/plain', 'x-sdk': 'iii' } }));
    req.response.stream.end(Buffer.from(text.toUpperCase()));
  });
  iii.registerFunction('iii::ticks', async (req: IiiHttpRequest) => {
    req.response.sendMessage(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/event-stream' } }));
    for (let i = 0; i < 10; i++) {
      req.response.stream.write(`data: ${i}\n\n`);
      await sleep(50);
    }
    req.response.stream.end();
  });
  // A plain iii handler (an envelope, channels untouched) works the same on `streaming: all`.
  iii.registerFunction('iii::plain', async () => ({ status_code: 200, body: { plain: true } }));
  iii.registerTrigger({ type: 'http', function_id: 'iii::upper', config: { api_path: '/iii/upper', http_method: 'POST' } });
  iii.registerTrigger({ type: 'http', function_id: 'iii::ticks', config: { api_path: '/iii/ticks', http_method: 'GET' } });
  iii.registerTrigger({ type: 'http', function_id: 'iii::plain', config: { api_path: '/iii/plain', http_method: 'GET' } });
  await eventually(() => assert.equal(http.routes.size, 3), 10_000);
});

after(async () => {
  await iii?.shutdown();
  await http?.shutdown();
  await engine?.stop();
});

test('an iii handler reads the upload from request_body and streams its answer with set_status/set_headers', async () => {
  const body = randomBytes(3 * 1024 * 1024).toString('base64');
  const res = await fetch(`${base}/iii/upper`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
  assert.equal(res.status, 201);
  assert.equal(res.headers.get('x-sdk'), 'iii');
  assert.equal(res.headers.get('content-type'), 'text/plain');
  assert.equal(await res.text(), body.toUpperCase());
});

test('an iii SSE handler: its events arrive as it writes them', async () => {
  const started = performance.now();
  const res = await fetch(`${base}/iii/ticks`);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const arrivals: number[] = [];
  let text = '';
  for await (const chunk of res.body!) {
    arrivals.push(performance.now() - started);
    text += Buffer.from(chunk).toString();
  }
  assert.equal(text.split('\n\n').filter(Boolean).length, 10);
  assert.ok(arrivals.length >= 5 && arrivals[arrivals.length - 1]! - arrivals[0]! >= 200, `arrivals at ${arrivals.map((a) => a.toFixed(0)).join(', ')} ms`);
});

test('a plain iii handler answers with its envelope; the channels are freed', async () => {
  const res = await fetch(`${base}/iii/plain`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { plain: true });
  await eventually(() => assert.equal(engine.engine.channels.size, 0), 5000);
});
