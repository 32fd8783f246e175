/**
 * Issue 22 part 2: svc-http routes that stream (trigger config `stream: true`), end to end with a
 * real engine, the real svc-http worker, a worker reading `request_body` and writing `response`, and curl.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { registerWorker, type ChannelRef, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';
import type { HttpRequestPayload } from '../../../src/workers/http/request.js';

type Req = HttpRequestPayload & { response: ChannelRef; request_body: ChannelRef };

let engine: Awaited<ReturnType<typeof startEngine>>;
let http: HttpWorkerHandle;
let app: Worker;
let base: string;
let dir: string;
let file: string;
let fileHash: string;
const FILE_BYTES = 32 * 1024 * 1024;
const STREAM_LIMIT = 40 * 1024 * 1024;
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
const endlessStarted = deferred<void>();
const endlessCancelled = deferred<unknown>();
let firehoseWritten = 0;

async function bind(function_id: string, api_path: string, stream = true, http_method = 'GET') {
  return app.registerTrigger({ type: 'http', function_id, config: { api_path, http_method, stream } });
}

async function eventually(check: () => void, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return check();
    } catch (e) {
      if (Date.now() > end) throw e;
      await sleep(20);
    }
  }
}

/** curl -N: each output chunk with the ms since the request started. */
function curlChunks(url: string): Promise<{ chunks: Array<{ at: number; text: string }>; code: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('curl', ['-sS', '-N', url]);
    const chunks: Array<{ at: number; text: string }> = [];
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => chunks.push({ at: performance.now() - started, text }));
    child.on('error', reject);
    child.on('close', (code) => resolve({ chunks, code: code ?? -1 }));
  });
}

before(async () => {
  engine = await startEngine();
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica: 0 });
  http = await startHttpWorker({ url: engine.url, port: 0, timeoutMs: 30_000, runSecret, requestLog: false, streamBodyLimitBytes: STREAM_LIMIT });
  base = `http://127.0.0.1:${http.port}`;
  app = registerWorker(engine.url, { workerName: 'app', echoLogs: false });
  dir = await mkdtemp(join(tmpdir(), 'svc-http-stream-'));
  file = join(dir, 'download.bin');
  const bytes = randomBytes(FILE_BYTES);
  fileHash = createHash('sha256').update(bytes).digest('hex');
  await writeFile(file, bytes);

  app.registerFunction('sse', async (req: Req) => {
    const out = app.openWriter(req.response);
    await out.sendText(JSON.stringify({ type: 'set_status', status_code: 200 }));
    await out.sendText(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } }));
    for (let i = 0; i < 100; i++) {
      out.write(`data: event ${i}\n\n`);
      await sleep(10);
    }
    await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
    return null;
  });
  app.registerFunction('download', async (req: Req) => {
    const out = app.openWriter(req.response);
    await out.sendText(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'application/octet-stream' } }));
    await pipeline(createReadStream(file), out);
    return null;
  });
  app.registerFunction('created', async (req: Req) => {
    const out = app.openWriter(req.response);
    await out.sendText(JSON.stringify({ type: 'set_status', status_code: 201 }));
    await out.sendText(JSON.stringify({ type: 'set_headers', headers: { 'X-Made': 'yes', 'Set-Cookie': ['a=1', 'b=2'], 'Content-Length': '999' } }));
    out.end('made');
    return null;
  });
  app.registerFunction('envelope', (req: Req) => ({ status_code: 202, body: { has_response_ref: typeof req.response?.channel_id === 'string' } }));
  app.registerFunction('bad_control', async (req: Req) => {
    const out = app.openWriter(req.response);
    // svc-http closes the channel on the bad frame: this writer then fails, as it should.
    out.on('error', () => {});
    await out.sendText(JSON.stringify({ type: 'set_status', status_code: 99 }));
    return null;
  });
  app.registerFunction('no_answer', () => ({ nothing: true }));
  app.registerFunction('plain', (req: Req) => ({ status_code: 200, body: { has_response_ref: 'response' in req } }));
  // Sends an event every 20 ms until its call is cancelled.
  app.registerFunction('endless', async (req: Req, ctx: { signal: AbortSignal }) => {
    const out = app.openWriter(req.response);
    out.on('error', () => {});
    await out.sendText(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/event-stream' } }));
    endlessStarted.resolve();
    while (!ctx.signal.aborted) {
      out.write('data: tick\n\n');
      await sleep(20);
    }
    endlessCancelled.resolve(ctx.signal.reason);
    return null;
  });
  // Writes 256 MB as fast as the channel takes it, counting what it got out.
  app.registerFunction('firehose', async (req: Req) => {
    const out = app.openWriter(req.response);
    const chunk = Buffer.alloc(1024 * 1024, 7);
    try {
      for (let i = 0; i < 256; i++) {
        if (!out.write(chunk)) await once(out, 'drain');
        firehoseWritten += chunk.length;
      }
      out.end();
    } catch {
      /* the client went away: the channel was closed */
    }
    return null;
  });
  // Hashes the request body as it streams in; answers with an envelope.
  app.registerFunction('hash', async (req: Req) => {
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of app.openReader(req.request_body)) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    return { status_code: 200, body: { sha256: hash.digest('hex'), bytes, body: req.body, content_type: req.headers['content-type'] ?? null } };
  });

  await bind('sse', '/sse');
  await bind('download', '/download');
  await bind('created', '/created');
  await bind('envelope', '/envelope');
  await bind('bad_control', '/bad-control');
  await bind('no_answer', '/no-answer');
  await bind('plain', '/plain', false);
  await bind('hash', '/hash', true, 'POST');
  await bind('endless', '/endless');
  await bind('firehose', '/firehose');
});

after(async () => {
  await app?.shutdown();
  await http?.shutdown();
  await engine?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('svc-http streamed responses (stream: true)', () => {
  test('SSE: 100 events reach curl -N one by one as they are sent', async () => {
    const { chunks, code } = await curlChunks(`${base}/sse`);
    assert.equal(code, 0);
    const text = chunks.map((c) => c.text).join('');
    const events = text.split('\n\n').filter(Boolean);
    assert.equal(events.length, 100);
    assert.equal(events[0], 'data: event 0');
    assert.equal(events[99], 'data: event 99');
    // Sent 10 ms apart: they arrive in many chunks spread over the ~1 s of sending, not at the end.
    assert.ok(chunks.length >= 20, `arrived in ${chunks.length} chunks`);
    const firstEvent = chunks[0]!.at;
    const last = chunks[chunks.length - 1]!.at;
    assert.ok(last - firstEvent >= 500, `first chunk at ${firstEvent.toFixed(0)} ms, last at ${last.toFixed(0)} ms`);
  });

  test('SSE response headers come from set_headers; the body is chunked', async () => {
    const res = await fetch(`${base}/sse`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('transfer-encoding'), 'chunked');
    assert.equal((await res.text()).split('\n\n').filter(Boolean).length, 100);
  });

  test('a download streamed from a file arrives byte-exact', async () => {
    const res = await fetch(`${base}/download`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of res.body!) {
      hash.update(chunk);
      bytes += chunk.length;
    }
    assert.equal(bytes, FILE_BYTES);
    assert.equal(hash.digest('hex'), fileHash);
  });

  test('set_status and set_headers set the response; framing headers from the handler are dropped', async () => {
    const res = await fetch(`${base}/created`);
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-made'), 'yes');
    assert.deepEqual(res.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.equal(res.headers.get('content-length'), null);
    assert.equal(await res.text(), 'made');
  });

  test('a handler that returns an envelope without writing is answered with the envelope; its channel is freed', async () => {
    const res = await fetch(`${base}/envelope`);
    assert.equal(res.status, 202);
    assert.deepEqual(await res.json(), { has_response_ref: true });
    await eventually(() => assert.equal(engine.engine.channels.size, 0));
  });

  test('an invalid control frame is a 500 invalid_response naming it', async () => {
    const res = await fetch(`${base}/bad-control`);
    assert.equal(res.status, 500);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, 'invalid_response');
    assert.match(error.message, /set_status with status_code 99/);
  });

  test('a result that is no envelope, with nothing written, is a 500 invalid_response after the grace', async () => {
    const res = await fetch(`${base}/no-answer`);
    assert.equal(res.status, 500);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, 'invalid_response');
    assert.match(error.message, /wrote nothing to its response channel/);
  });

  test('a function that answers without opening the request body frees both channels', async () => {
    const res = await fetch(`${base}/envelope`, { method: 'GET' });
    assert.equal(res.status, 202);
    await res.arrayBuffer();
    await eventually(() => assert.equal(engine.engine.channels.size, 0));
  });

  test('a route without stream: true gets no channel refs and creates no channel', async () => {
    const res = await fetch(`${base}/plain`);
    assert.deepEqual(await res.json(), { has_response_ref: false });
    assert.equal(engine.engine.channels.size, 0);
  });
});

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

describe('svc-http streamed request bodies (stream: true)', () => {
  test('a 32 MB application/octet-stream upload arrives byte-exact through request_body, over body_limit_bytes', async () => {
    const data = await readFile(file);
    const res = await fetch(`${base}/hash`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: createReadStream(file) as unknown as BodyInit, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 200);
    const got = (await res.json()) as { sha256: string; bytes: number; body: unknown };
    assert.equal(got.bytes, data.length);
    assert.equal(got.sha256, fileHash);
    assert.equal(got.body, null, 'a streamed body is not parsed');
  });

  test('multipart/form-data with two files and fields passes through as bytes', async () => {
    const form = new FormData();
    form.append('title', 'two files');
    form.append('tags', 'a,b');
    const one = randomBytes(300_000);
    const two = randomBytes(70_000);
    form.append('one', new Blob([one]), 'one.bin');
    form.append('two', new Blob([two], { type: 'image/png' }), 'two.png');
    const request = new Request(`${base}/hash`, { method: 'POST', body: form });
    const sent = Buffer.from(await request.clone().arrayBuffer());
    const res = await fetch(request);
    const got = (await res.json()) as { sha256: string; bytes: number; content_type: string };
    assert.equal(got.bytes, sent.length);
    assert.equal(got.sha256, sha(sent));
    assert.match(got.content_type, /^multipart\/form-data; boundary=/);
    assert.ok(sent.includes(one) && sent.includes(two));
  });

  test('a body over stream_body_limit_bytes is a 413: declared, before the call; streamed, when it passes the limit', async () => {
    const declared = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = request(`${base}/hash`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'content-length': String(STREAM_LIMIT + 1) } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      r.on('error', reject);
      r.flushHeaders();
    });
    assert.equal(declared.status, 413);
    assert.match(declared.body, /payload_too_large.*stream_body_limit_bytes \(41943040 bytes\)/);

    let sent = 0;
    const chunk = Buffer.alloc(1024 * 1024, 1);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= STREAM_LIMIT + 4 * chunk.length) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${base}/hash`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'payload_too_large');
    await eventually(() => assert.equal(engine.engine.channels.size, 0));
  });

  test('small JSON is parsed into body and streamed too; gzip is decoded', async () => {
    const json = JSON.stringify({ a: 1, list: [1, 2, 3] });
    let res = await fetch(`${base}/hash`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: json });
    let got = (await res.json()) as { sha256: string; body: unknown };
    assert.deepEqual(got.body, { a: 1, list: [1, 2, 3] });
    assert.equal(got.sha256, sha(json));
    const text = 'x'.repeat(100_000);
    res = await fetch(`${base}/hash`, { method: 'POST', headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' }, body: gzipSync(text) });
    got = (await res.json()) as { sha256: string; body: unknown };
    assert.equal(got.sha256, sha(text));
    res = await fetch(`${base}/hash`, { method: 'POST', headers: { 'content-type': 'text/plain', 'content-encoding': 'zstd' }, body: 'x' });
    assert.equal(res.status, 415);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unsupported_encoding');
    await eventually(() => assert.equal(engine.engine.channels.size, 0));
  });
});

describe('svc-http streaming: the client going away, and a slow client', () => {
  test('a client disconnect cancels the call and closes the channels', async () => {
    const abort = new AbortController();
    const res = await fetch(`${base}/endless`, { signal: abort.signal });
    assert.equal(res.status, 200);
    await endlessStarted.promise;
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    const cancelled = await Promise.race([endlessCancelled.promise.then(() => true), sleep(5000).then(() => false)]);
    assert.ok(cancelled, "the handler's call was cancelled");
    await eventually(() => assert.equal(engine.engine.channels.size, 0));
  });

  test('a client that stops reading bounds what the handler gets out (and so svc-http and the engine hold)', async () => {
    const socket = connect(http.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write('GET /firehose HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause(); // never reads: the kernel's buffers fill, then svc-http's, then the channel's
    await sleep(1500);
    const stalled = firehoseWritten;
    await sleep(500);
    assert.ok(stalled < 48 * 1024 * 1024, `the handler wrote ${firehoseWritten} bytes of 256 MB to a client reading nothing`);
    assert.equal(firehoseWritten, stalled, 'the handler is held, not writing on');
    socket.destroy();
    await eventually(() => assert.equal(engine.engine.channels.size, 0), 10_000);
  });
});
