/**
 * svc-http's request_timeout_ms: a request whose body svc-http reads must arrive within it (408
 * after), while a streaming route's upload lasts as long as its call may (timeout_ms). Node's own
 * server.requestTimeout bounds every request alike, so it cut streaming uploads at 300 s whatever
 * the route's timeout_ms; here the bound is 1 s and the uploads take 2.5 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerWorker, type ChannelRef, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { HEADERS_TIMEOUT_MS, startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';
import { parseHttpWorkerConfig } from '../../../src/workers/http/config.js';

const REQUEST_TIMEOUT_MS = 1000;
const CHUNKS = 25;
const CHUNK_EVERY_MS = 100;
const CHUNK = 'x'.repeat(100);

let engine: Awaited<ReturnType<typeof startEngine>>;
let http: HttpWorkerHandle;
let app: Worker;

before(async () => {
  engine = await startEngine();
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica: 0 });
  http = await startHttpWorker({ url: engine.url, port: 0, timeoutMs: 20_000, runSecret, requestLog: false, requestTimeoutMs: REQUEST_TIMEOUT_MS });
  app = registerWorker(engine.url, { workerName: 'app', echoLogs: false });
  app.registerFunction('count', async (req: { request_body: ChannelRef }) => {
    let bytes = 0;
    for await (const chunk of app.openReader(req.request_body)) bytes += (chunk as Buffer).length;
    return { status_code: 200, body: { bytes } };
  });
  app.registerFunction('echo', (req: { body: unknown }) => ({ status_code: 200, body: { got: typeof req.body } }));
  await app.registerTrigger({ type: 'http', function_id: 'count', config: { api_path: '/upload', http_method: 'POST', stream: true } });
  await app.registerTrigger({ type: 'http', function_id: 'echo', config: { api_path: '/plain', http_method: 'POST' } });
});

after(async () => {
  await app?.shutdown();
  await http?.shutdown();
  await engine?.stop();
});

interface Trickled {
  status: number;
  body: string;
  /** ms from the request's start to its answer's end */
  ms: number;
  /** ms from the request's start to its connection's close, or null if it stayed open until `within`. */
  closedAt(within: number): Promise<number | null>;
}

/** POST `path` with a chunked body of CHUNKS chunks, one every CHUNK_EVERY_MS, stopping if the connection goes. */
function trickle(path: string): Promise<Trickled> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let closedMs: number | null = null;
    let onClose: (() => void) | null = null;
    const closedAt = async (within: number): Promise<number | null> => {
      if (closedMs === null) await Promise.race([new Promise<void>((r) => (onClose = r)), sleep(Math.max(0, within - (Date.now() - started)))]);
      return closedMs;
    };
    const req = request({ host: '127.0.0.1', port: http.port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: Date.now() - started, closedAt }));
    });
    req.on('socket', (s) =>
      s.on('close', () => {
        closedMs = Date.now() - started;
        onClose?.();
      }),
    );
    req.on('error', (e) => (closedMs === null ? reject(e) : undefined));
    void (async () => {
      for (let i = 0; i < CHUNKS && closedMs === null; i++) {
        req.write(CHUNK);
        await sleep(CHUNK_EVERY_MS);
      }
      if (closedMs === null) req.end();
    })();
  });
}

const UPLOAD_MS = CHUNKS * CHUNK_EVERY_MS;

describe('svc-http request_timeout_ms', () => {
  test('a streaming upload outlasts request_timeout_ms: its call bounds it', async () => {
    const r = await trickle('/upload');
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(JSON.parse(r.body), { bytes: CHUNKS * CHUNK.length });
    assert.ok(r.ms >= UPLOAD_MS * 0.9, `answered after ${r.ms} ms`);
  });

  test('a body svc-http reads must arrive within request_timeout_ms: 408 request_timeout, and the connection closes', async () => {
    const r = await trickle('/plain');
    assert.equal(r.status, 408, r.body);
    assert.equal((JSON.parse(r.body) as { error: { code: string } }).error.code, 'request_timeout');
    assert.match(r.body, /request_timeout_ms/);
    assert.ok(r.ms >= REQUEST_TIMEOUT_MS && r.ms < UPLOAD_MS, `answered after ${r.ms} ms`);
    const closed = await r.closedAt(UPLOAD_MS - 200);
    assert.ok(closed !== null, 'the connection was closed before the body ended');
  });

  test("Node's whole-request timer is off, and its headers timer still on (with the first off Node's default for the second is none)", () => {
    assert.equal(http.server.requestTimeout, 0);
    assert.equal(http.server.headersTimeout, HEADERS_TIMEOUT_MS);
    assert.equal(HEADERS_TIMEOUT_MS, 60_000);
  });

  test('request_timeout_ms is a config key (default 300 s) and refuses nonsense', () => {
    assert.equal(parseHttpWorkerConfig({}).requestTimeoutMs, 300_000);
    assert.throws(() => parseHttpWorkerConfig({ request_timeout_ms: 0 }), /request_timeout_ms/);
    assert.throws(() => parseHttpWorkerConfig({ request_timeout_ms: 'soon' }), /request_timeout_ms/);
  });
});

