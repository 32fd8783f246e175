/**
 * svc-http end to end: a real engine, the real svc-http worker and real workers on loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { DEFAULT_MAX_FRAME_BYTES, InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';
import type { HttpRequestPayload } from '../../../src/workers/http/request.js';

type Req = HttpRequestPayload;

const FAST = { reconnect: { initialDelayMs: 50, maxDelayMs: 200 }, echoLogs: false };

let engine: Awaited<ReturnType<typeof startEngine>>;
let http: HttpWorkerHandle;
let app: Worker;
let base: string;
let runningTotal = 0;

async function bind(w: Worker, function_id: string, api_path: string, http_method = 'GET') {
  return w.registerTrigger({ type: 'http', function_id, config: { api_path, http_method } });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(20);
  }
  assert.fail(`timed out waiting for: ${what}`);
}

const statusOf = async (url: string, init?: RequestInit) => (await fetch(url, init)).status;

async function errorOf(res: Response): Promise<{ code: string; message: string }> {
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const j = (await res.json()) as { error: { code: string; message: string } };
  assert.equal(typeof j.error.code, 'string');
  assert.equal(typeof j.error.message, 'string');
  return j.error;
}

before(async () => {
  engine = await startEngine();
  // As the supervisor starts it: the run secret proves it is the engine's svc-http (its name is reserved).
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica: 0 });
  http = await startHttpWorker({ url: engine.url, port: 0, timeoutMs: 1000, bodyLimitBytes: 64 * 1024, runSecret });
  base = `http://127.0.0.1:${http.port}`;
  app = registerWorker(engine.url, { workerName: 'app', ...FAST });

  app.registerFunction('math::add_two_numbers', (req: Req) => {
    const { a, b } = req.body as { a: number; b: number };
    runningTotal += a + b;
    return { status_code: 200, body: { c: a + b, running_total: runningTotal } };
  });
  app.registerFunction('users::get', (req: Req) => ({
    status_code: 200,
    body: { id: req.path_params.id, query: req.query_params, method: req.method, path: req.path, route: req.route },
    headers: { 'X-Echo': req.headers['x-in'] ?? 'none', 'Set-Cookie': ['a=1', 'b=2'] },
  }));
  app.registerFunction('echo', (req: Req) => ({ status_code: 200, body: req }));
  app.registerFunction('text', () => ({ status_code: 201, body: 'a,b\n1,2\n', headers: { 'Content-Type': 'text/csv' } }));
  app.registerFunction('empty', () => ({ status_code: 204 }));
  app.registerFunction('fail', () => {
    throw Object.assign(new Error('no more widgets'), { code: 'out_of_stock' });
  });
  app.registerFunction('crash', () => {
    throw new Error('boom');
  });
  app.registerFunction('slow', async () => {
    await sleep(3000);
    return { status_code: 200, body: 'late' };
  });
  app.registerFunction('not_envelope', () => ({ c: 5 }));
  app.registerFunction('huge', () => ({ status_code: 200, body: 'y'.repeat(DEFAULT_MAX_FRAME_BYTES + 1024 * 1024) }));

  await bind(app, 'math::add_two_numbers', '/math/add-two-numbers', 'POST');
  await bind(app, 'users::get', '/users/:id');
  await bind(app, 'echo', '/echo/:a/:b', 'post');
  await bind(app, 'echo', '/echo', 'PUT');
  await bind(app, 'text', '/text');
  await bind(app, 'empty', '/empty', 'DELETE');
  await bind(app, 'fail', '/fail');
  await bind(app, 'crash', '/crash');
  await bind(app, 'slow', '/slow');
  await bind(app, 'not_envelope', '/not-envelope');
  await bind(app, 'huge', '/huge');
  await bind(app, 'ghost::missing', '/ghost');
});

after(async () => {
  await app?.shutdown();
  await http?.shutdown();
  await engine?.stop();
});

describe('svc-http with a real engine', () => {
  test('quickstart endpoint answers 200 application/json {c, running_total}', async () => {
    const res = await fetch(`${base}/math/add-two-numbers`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ a: 2, b: 3 }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const body = (await res.json()) as { c: number; running_total: number };
    assert.equal(body.c, 5);
    assert.equal(typeof body.running_total, 'number');
  });

  test('path params, query params and headers both ways', async () => {
    const res = await fetch(`${base}/users/a%20b?q=x&tag=1&tag=2`, { headers: { 'X-In': 'hello' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-echo'), 'hello');
    assert.deepEqual(res.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.deepEqual(await res.json(), {
      id: 'a b',
      query: { q: 'x', tag: ['1', '2'] },
      method: 'GET',
      path: '/users/a%20b',
      route: '/users/:id',
    });
  });

  test('the payload holds the parsed JSON body, or the text for other types', async () => {
    let res = await fetch(`${base}/echo/1/2?z=9`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":[1,2]}' });
    assert.equal(res.status, 200);
    const p = (await res.json()) as Req;
    assert.deepEqual(p.body, { x: [1, 2] });
    assert.deepEqual(p.path_params, { a: '1', b: '2' });
    assert.deepEqual(p.query_params, { z: '9' });
    assert.equal(p.method, 'POST');
    assert.equal(p.headers['content-type'], 'application/json');

    res = await fetch(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'just text' });
    assert.equal(((await res.json()) as Req).body, 'just text');

    res = await fetch(`${base}/echo`, { method: 'PUT' });
    assert.equal(((await res.json()) as Req).body, null);
  });

  test('string bodies keep the handler content type; 204 has no body; HEAD falls back to GET', async () => {
    let res = await fetch(`${base}/text`);
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'text/csv');
    assert.equal(await res.text(), 'a,b\n1,2\n');

    res = await fetch(`${base}/empty`, { method: 'DELETE' });
    assert.equal(res.status, 204);
    assert.equal(await res.text(), '');

    res = await fetch(`${base}/users/1`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-echo'), 'none');
    assert.equal(await res.text(), '');
  });

  test('no route 404, wrong method 405 with Allow', async () => {
    let res = await fetch(`${base}/nope`);
    assert.equal(res.status, 404);
    assert.deepEqual(await errorOf(res), { code: 'not_found', message: 'No route for GET /nope' });

    res = await fetch(`${base}/users/1`, { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD');
    assert.equal((await errorOf(res)).code, 'method_not_allowed');
  });

  test('malformed JSON body 400 invalid_json', async () => {
    const res = await fetch(`${base}/echo/1/2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' });
    assert.equal(res.status, 400);
    const e = await errorOf(res);
    assert.equal(e.code, 'invalid_json');
    assert.match(e.message, /not valid JSON/);
  });

  test('JSON nested deeper than 100 levels 400 json_too_deep; 100 levels reach the function', async () => {
    for (const depth of [101, 5000, 30_000]) {
      const res = await fetch(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '['.repeat(depth) + ']'.repeat(depth) });
      assert.equal(res.status, 400, `depth ${depth}`);
      const e = await errorOf(res);
      assert.equal(e.code, 'json_too_deep');
      assert.match(e.message, /more than 100 levels deep/);
    }
    // Brackets inside strings do not count.
    const deepText = JSON.stringify({ s: '['.repeat(5000) });
    const ok = await fetch(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: deepText });
    assert.equal(ok.status, 200);
    const nested = '['.repeat(100) + ']'.repeat(100);
    const res = await fetch(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: nested });
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { body: unknown }).body, JSON.parse(nested));
  });

  test('a response too large to pass through the engine 502 response_too_large, naming the function', async () => {
    const res = await fetch(`${base}/huge`);
    assert.equal(res.status, 502);
    const e = await errorOf(res);
    assert.equal(e.code, 'response_too_large');
    // The error's own message (which names the frame limit) is in the request log: expose_errors is off.
    assert.equal(e.message, 'The response of huge is too large to pass through the engine');
  });

  test('body over the limit 413 payload_too_large', async () => {
    const res = await fetch(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(64 * 1024 + 1) });
    assert.equal(res.status, 413);
    const e = await errorOf(res);
    assert.equal(e.code, 'payload_too_large');
    assert.match(e.message, /limit of 65536 bytes/);
    // Exactly at the limit passes.
    assert.equal(await statusOf(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(64 * 1024) }), 200);
  });

  /** One raw HTTP/1.1 request (fetch cannot send a Transfer-Encoding): the status line and the JSON body of the answer. */
  async function rawRequest(head: string, body: Buffer): Promise<{ status: number; body: string }> {
    const socket = connect(http.port, '127.0.0.1');
    socket.write(head.replace(/\n/g, '\r\n') + '\r\n');
    socket.write(body); // not end(): the answer closes it (Connection: close)
    const chunks: Buffer[] = [];
    for await (const c of socket) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('latin1');
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
  }
  const chunked = (b: Buffer) => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);

  test('Transfer-Encoding other than chunked 501 unsupported_transfer_encoding; Content-Encoding gzip is decoded, within body_limit_bytes', async () => {
    // Before: `gzip, chunked` was accepted and the function got the compressed bytes as its body.
    const json = Buffer.from('{"x":1}');
    for (const te of ['gzip, chunked', 'deflate,chunked', 'x-custom, chunked']) {
      const r = await rawRequest(`PUT /echo HTTP/1.1\nHost: x\nConnection: close\nContent-Type: application/json\nTransfer-Encoding: ${te}\n`, chunked(gzipSync(json)));
      assert.equal(r.status, 501, `${te}: ${r.body}`);
      assert.deepEqual(JSON.parse(r.body).error, {
        code: 'unsupported_transfer_encoding',
        message: `Transfer-Encoding ${JSON.stringify(te)} is not supported: send the body chunked (or with a Content-Length) and compress it with Content-Encoding: gzip, deflate or br`,
      });
    }
    const plain = await rawRequest('PUT /echo HTTP/1.1\nHost: x\nConnection: close\nContent-Type: application/json\nTransfer-Encoding: chunked\n', chunked(json));
    assert.equal(plain.status, 200, plain.body);
    assert.deepEqual(JSON.parse(plain.body).body, { x: 1 });
    const gz = await rawRequest('PUT /echo HTTP/1.1\nHost: x\nConnection: close\nContent-Type: application/json\nContent-Encoding: gzip\nTransfer-Encoding: chunked\n', chunked(gzipSync(json)));
    assert.equal(gz.status, 200, gz.body);
    assert.deepEqual(JSON.parse(gz.body).body, { x: 1 });
    // A zip bomb: 64 KiB + 1 of zeros compress to ~100 bytes; the limit counts decoded bytes.
    const bomb = await fetch(`${base}/echo`, { method: 'PUT', headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' }, body: gzipSync(Buffer.alloc(64 * 1024 + 1)) });
    assert.equal(bomb.status, 413);
    assert.equal((await errorOf(bomb)).code, 'payload_too_large');
  });

  test('bound function not registered 503 function_not_found', async () => {
    const res = await fetch(`${base}/ghost`);
    assert.equal(res.status, 503);
    const e = await errorOf(res);
    assert.equal(e.code, 'function_not_found');
    assert.match(e.message, /ghost::missing/);
  });

  test('handler error 500 with the function code, not its message (error-bodies.integration.test.ts)', async () => {
    let res = await fetch(`${base}/fail`);
    assert.equal(res.status, 500);
    let e = await errorOf(res);
    assert.equal(e.code, 'out_of_stock');
    assert.match(e.message, /^Function fail failed; its error message is not sent to HTTP clients/);
    res = await fetch(`${base}/crash`);
    assert.equal(res.status, 500);
    e = await errorOf(res);
    assert.equal(e.code, 'invocation_failed');
    assert.doesNotMatch(e.message, /boom/);
  });

  test('timeout 504', async () => {
    const t0 = Date.now();
    const res = await fetch(`${base}/slow`);
    assert.equal(res.status, 504);
    const e = await errorOf(res);
    assert.equal(e.code, 'timeout');
    assert.match(e.message, /slow did not answer within 1000 ms/);
    assert.ok(Date.now() - t0 < 2900, 'answered at the deadline, not when the handler finished');
  });

  test('a result that is not an envelope 500 invalid_response naming the expected shape', async () => {
    const res = await fetch(`${base}/not-envelope`);
    assert.equal(res.status, 500);
    const e = await errorOf(res);
    assert.equal(e.code, 'invalid_response');
    assert.match(e.message, /not_envelope returned an object without status_code \(keys: c\); expected \{status_code/);
  });

  test('a second binding of the same route is refused to the registering worker', async () => {
    const other = registerWorker(engine.url, { workerName: 'other', ...FAST });
    try {
      other.registerFunction('other::users', () => ({ status_code: 200 }));
      await assert.rejects(
        bind(other, 'other::users', '/users/:name', 'get'),
        (e: unknown) =>
          e instanceof InvocationError && e.code === 'route_conflict' && /GET \/users\/:name \(same as \/users\/:id\) is already bound to function users::get/.test(e.message),
      );
      await assert.rejects(
        bind(other, 'other::users', '', 'GET'),
        (e: unknown) => e instanceof InvocationError && e.code === 'invalid_trigger_config' && /api_path must be a non-empty string/.test(e.message),
      );
      // iii style without the leading slash: same route, so the same conflict.
      await assert.rejects(bind(other, 'other::users', 'users/:x', 'GET'), (e: unknown) => e instanceof InvocationError && e.code === 'route_conflict');
      await assert.rejects(
        bind(other, 'other::users', '/x', 'FETCH'),
        (e: unknown) => e instanceof InvocationError && e.code === 'invalid_trigger_config' && /http_method must be one of/.test(e.message),
      );
      // The first binding still answers.
      assert.equal(((await (await fetch(`${base}/users/9`)).json()) as { id: string }).id, '9');
    } finally {
      await other.shutdown();
    }
  });

  test('routes go away with their binding or worker, and come back when a worker reconnects', async () => {
    const w = registerWorker(engine.url, { workerName: 'temp', ...FAST });
    try {
      w.registerFunction('temp::hello', () => ({ status_code: 200, body: 'hi' }));
      const trig = await bind(w, 'temp::hello', '/temp');
      assert.equal(await statusOf(`${base}/temp`), 200);

      trig.unregister();
      await until('route removed after unregister', async () => (await statusOf(`${base}/temp`)) === 404);

      await bind(w, 'temp::hello', '/temp');
      assert.equal(await statusOf(`${base}/temp`), 200);

      // Connection drop: the engine removes the worker's bindings; the SDK replays them on reconnect.
      const seen = new Set<number>();
      w.simulateDisconnect();
      await until('route back after reconnect', async () => {
        const s = await statusOf(`${base}/temp`);
        seen.add(s);
        return s === 200 && w.state === 'connected';
      });
      assert.ok(seen.has(404) || seen.has(503), `the route was down while the worker was away (saw ${[...seen].join(', ')})`);
    } finally {
      await w.shutdown();
    }
    await until('route removed when its worker exits', async () => (await statusOf(`${base}/temp`)) === 404);
    // The path is free again for another function.
    const w2 = registerWorker(engine.url, { workerName: 'temp2', ...FAST });
    try {
      w2.registerFunction('temp2::hello', () => ({ status_code: 200, body: 'hi2' }));
      await bind(w2, 'temp2::hello', '/temp');
      assert.equal(await (await fetch(`${base}/temp`)).text(), 'hi2');
    } finally {
      await w2.shutdown();
    }
  });

  test('routes come back after svc-http itself reconnects to the engine', async () => {
    assert.equal(await statusOf(`${base}/users/1`), 200);
    http.worker.simulateDisconnect();
    // While cut off from the engine its routes are unknown: 503 engine_unavailable, not 404.
    let away: { code: string } | undefined;
    await until('svc-http notices the lost connection', async () => {
      const res = await fetch(`${base}/users/1`);
      if (res.status === 503) away = await errorOf(res);
      return away !== undefined;
    });
    assert.equal(away?.code, 'engine_unavailable');
    await until('svc-http reconnected and bindings re-delivered', async () => http.worker.state === 'connected' && (await statusOf(`${base}/users/1`)) === 200);
    assert.equal(await statusOf(`${base}/text`), 201);
  });

  test('500 concurrent requests are all answered correctly', async () => {
    const n = 500;
    const results = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await fetch(`${base}/math/add-two-numbers`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ a: i, b: 1000 }),
        });
        return { i, status: res.status, body: (await res.json()) as { c: number } };
      }),
    );
    for (const r of results) {
      assert.equal(r.status, 200);
      assert.equal(r.body.c, r.i + 1000);
    }
  });

  test('request lines reach the engine logs with method, path, status and duration', async () => {
    await fetch(`${base}/users/logged?x=1`);
    await fetch(`${base}/nope-logged`);
    type Log = { message: string; worker_name?: string; data?: Record<string, unknown> };
    let logs: Log[] = [];
    await until('request logs stored', async () => {
      logs = ((await app.trigger({ function_id: 'engine::logs::list', payload: { text: 'logged' } })) as { logs: Log[] }).logs;
      return logs.length >= 2;
    });
    const ok = logs.find((l) => l.message.startsWith('GET /users/logged 200 '));
    assert.ok(ok, `no 200 line in ${JSON.stringify(logs)}`);
    assert.equal(ok.worker_name, 'svc-http');
    assert.equal(ok.data?.method, 'GET');
    assert.equal(ok.data?.path, '/users/logged');
    assert.equal(ok.data?.status, 200);
    assert.equal(ok.data?.function_id, 'users::get');
    assert.equal(typeof ok.data?.duration_ms, 'number');
    const miss = logs.find((l) => l.message.startsWith('GET /nope-logged 404 '));
    assert.equal(miss?.data?.error_code, 'not_found');
  });
});

describe('svc-http CORS', () => {
  let corsHttp: HttpWorkerHandle;
  let corsBase: string;
  before(async () => {
    corsHttp = await startHttpWorker({
      url: engine.url,
      port: 0,
      workerName: 'svc-http-cors',
      cors: { origins: ['https://app.example'], methods: ['GET', 'POST'], expose_headers: ['X-Echo'], max_age: 600 },
    });
    corsBase = `http://127.0.0.1:${corsHttp.port}`;
  });
  after(() => corsHttp?.shutdown());

  test('preflight and simple requests from an allowed origin get CORS headers; others do not', async () => {
    // This instance stands by as a second provider of `http` (the first holds the bindings), so it
    // has no routes: CORS answers preflights before any route lookup, and adds headers to the 404.
    let res = await fetch(`${corsBase}/anything`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(res.headers.get('access-control-allow-methods'), 'GET,POST');
    assert.equal(res.headers.get('access-control-allow-headers'), 'content-type');
    assert.equal(res.headers.get('access-control-max-age'), '600');

    res = await fetch(`${corsBase}/anything`, { headers: { Origin: 'https://app.example' } });
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(res.headers.get('access-control-expose-headers'), 'X-Echo');

    res = await fetch(`${corsBase}/anything`, { headers: { Origin: 'https://evil.example' } });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});
