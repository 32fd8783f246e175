/**
 * A seeded fuzz test of the HTTP servers a browser or any local program reaches: the console's
 * server (its API and its pages) and svc-http (as its own process), sent raw requests on a socket:
 * bad methods and paths, missing, wrong and huge headers, bad Content-Length and Transfer-Encoding,
 * bad JSON, generated /api/call and /api/http bodies, bodies over the limits; and slow bodies.
 * Every answer must be a well-formed HTTP response (an /api error a JSON `{ok: false, error: {code,
 * message}}` with a code docs/errors.md lists), and both servers keep serving normal requests.
 * (svc-http's routing, envelopes and encodings have their own fuzz test: fuzz.test.ts here.)
 *
 * FUZZ_SEED=<n> replays a run; the seed is printed, and fast-check's failure message carries it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import fc from 'fast-check';
import type { Worker } from 'svc-sdk';
import { startConsoleServer, type ConsoleServer } from '../../../src/console-server/server.js';
import { eventually, sleep, WorkerPool } from '../../helpers/util.js';
import { documentedCodes, startFuzzStack, type FuzzStack } from '../fuzz-stack.js';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
console.log(`console/http fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const CODES = documentedCodes();

let stack: FuzzStack;
let consoleServer: ConsoleServer;
const pool = new WorkerPool(() => stack.engine.url);
let app: Worker;
let csrf = '';

before(async () => {
  stack = await startFuzzStack();
  consoleServer = await startConsoleServer({ engineUrl: stack.engine.url, port: 0, workerName: 'fz-console' });
  app = pool.make('fz-http-app');
  app.registerFunction('fz::echo', (req: { body?: unknown }) => ({ status_code: 200, body: { got: req.body ?? null } }));
  await app.registerTrigger({ type: 'http', function_id: 'fz::echo', config: { api_path: '/fz/echo', http_method: 'POST' } });
  await eventually(() => assert.equal(consoleServer.worker.state, 'connected'), 10_000);
  csrf = (JSON.parse((await send('console', `GET /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)).body) as { csrf_token: string }).csrf_token;
});

after(async () => {
  await consoleServer?.close();
  await pool.closeAll();
  await stack?.stop();
});

type Target = 'console' | 'http';
const portOf = (t: Target) => (t === 'console' ? consoleServer.port : stack.httpPort);

interface Answer {
  status: number;
  headers: string;
  body: string;
  /** Nothing came before the socket was closed or `waitMs` passed. */
  silent: boolean;
}

/** Write `request` on a fresh socket; read until the server closes it (or `waitMs`). */
function send(target: Target, request: string | Buffer, waitMs = 5000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const s = connect(portOf(target), '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = (): void => {
      clearTimeout(t);
      s.destroy();
      // An interim 100 Continue (Expect: 100-continue) comes before the answer.
      const text = Buffer.concat(chunks).toString('latin1').replace(/^HTTP\/1\.1 100 [^\r\n]*\r\n\r\n/, '');
      const m = /^HTTP\/1\.1 (\d{3}) [^\r\n]*\r\n/.exec(text);
      if (text.length > 0 && !m) return reject(new Error(`not an HTTP response: ${JSON.stringify(text.slice(0, 200))}`));
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, headers: text.slice(0, split), body: Buffer.from(text.slice(split + 4), 'latin1').toString('utf8'), silent: text.length === 0 });
    };
    const t = setTimeout(done, waitMs);
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', done);
    s.write(request);
  });
}

// ---- generators -------------------------------------------------------------------------------

const edgeStr = fc.oneof(
  fc.constantFrom('', ' ', '\u0000', '\ud800', '\u202eevil', 'a\u200bb', '💥', 'NaN', '-0', '__proto__', 'state::get', 'engine::health::check', 'nope::x', 'q'.repeat(300)),
  fc.string({ maxLength: 12 }),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, edgeStr, fc.constantFrom(0, -1, 1e308, 2 ** 53, 0.5), fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(edgeStr, tie('value'), { maxKeys: 3 })),
}));
const SAFE_FUNCTIONS = ['state::get', 'state::list_groups', 'queue::list', 'cron::list', 'engine::health::check', 'engine::functions::list', 'nope::missing'];
const callBody = fc.oneof(
  fc.record({ function_id: fc.oneof({ arbitrary: fc.constantFrom(...SAFE_FUNCTIONS), weight: 3 }, edgeStr, value), payload: value, timeout_ms: fc.oneof(fc.constantFrom(-1, 0, 1, 1e308, 5000), edgeStr) }, { requiredKeys: ['function_id'] }).map((b) => JSON.stringify(b)),
  fc.record({ method: fc.oneof(fc.constantFrom('GET', 'post', 'BREW', 'CONNECT'), edgeStr), path: fc.oneof({ arbitrary: fc.constantFrom('/fz/echo', '/', '//evil', '/%zz', '/fz/echo?x=\u0000'), weight: 3 }, edgeStr), body: value, headers: fc.oneof(value, fc.dictionary(fc.constantFrom('x-a', 'content-type', 'host', 'content-length', 'a b'), edgeStr)) }, { requiredKeys: ['path'] }).map((b) => JSON.stringify(b)),
  fc.constantFrom('', '{', '{"function_id":', 'null', '[]', '"x"', '1e400', '{"function_id":"state::get","payload":-0}', '\ufeff{}', '{"__proto__":{"function_id":"x"}}'),
  fc.json({ maxDepth: 3 }),
);
const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PATCH', 'CONNECT', 'BREW', 'get', 'G\u0000T');
const consolePath = fc.oneof(
  fc.constantFrom('/', '/api/session', '/api/status', '/api/call', '/api/call', '/api/http', '/api/nope', '/api/', '/assets/nope.js', '/index.html', '/%', '/..%2f..%2fetc%2fpasswd', '/api/call?x=%zz', '*', '/api/call#x'),
  fc.integer({ min: 2000, max: 20_000 }).map((n) => '/' + 'p'.repeat(n)),
);
const httpPath = fc.oneof(fc.constantFrom('/fz/echo', '/fz/echo/', '/nope', '/', '/%zz', '*'), fc.integer({ min: 2000, max: 20_000 }).map((n) => '/fz/' + 'p'.repeat(n)));

interface Req {
  target: Target;
  method: string;
  path: string;
  host: string | null;
  origin: string | null;
  csrf: 'good' | 'bad' | 'none';
  contentType: string | null;
  extra: string[];
  body: string;
  length: 'right' | 'none' | 'short' | 'long' | 'bad';
}
/** Headers a browser on the console's page sends, and a generated body: what reaches the API's handlers. */
const apiRequest: fc.Arbitrary<Req> = fc.record({
  target: fc.constant('console' as const),
  method: fc.constant('POST'),
  path: fc.constantFrom('/api/call', '/api/call', '/api/http'),
  host: fc.constant('127.0.0.1'),
  origin: fc.constantFrom(null, 'SELF'),
  csrf: fc.constant('good' as const),
  contentType: fc.constant('application/json'),
  extra: fc.constant([]),
  body: callBody,
  length: fc.constant('right' as const),
});
const anyRequest: fc.Arbitrary<Req> = fc.constantFrom<Target>('console', 'http').chain((target) =>
  fc.record({
    target: fc.constant(target),
    method,
    path: target === 'console' ? consolePath : httpPath,
    host: fc.constantFrom('127.0.0.1', 'localhost', 'evil.example', '[::1]', 'a b', '', null),
    origin: fc.constantFrom(null, null, 'SELF', 'http://evil.example', 'null', 'nonsense'),
    csrf: fc.constantFrom('good', 'good', 'bad', 'none'),
    contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded', null),
    extra: fc.array(fc.constantFrom('Transfer-Encoding: chunked', 'Transfer-Encoding: gzip', 'Content-Encoding: gzip', 'Expect: 100-continue', `X-Big: ${'b'.repeat(20_000)}`, 'Bad Header: x', 'NoColon', ' folded: x', 'Content-Length: 1, 2', 'Sec-Fetch-Site: cross-site', 'Sec-Fetch-Site: same-origin', 'Connection: keep-alive'), { maxLength: 2 }),
    body: fc.oneof({ arbitrary: callBody, weight: 6 }, { arbitrary: fc.constant('x'.repeat(70_000)), weight: 1 }),
    length: fc.constantFrom('right', 'right', 'right', 'none', 'short', 'long', 'bad'),
  }),
);

const request = fc.oneof(anyRequest, apiRequest);

function render(r: Req): Buffer {
  const body = Buffer.from(r.body);
  const lines = [`${r.method} ${r.path} HTTP/1.1`];
  if (r.host !== null) lines.push(`Host: ${r.host}`);
  if (r.origin !== null) lines.push(`Origin: ${r.origin === 'SELF' ? `http://127.0.0.1:${portOf(r.target)}` : r.origin}`);
  if (r.csrf !== 'none') lines.push(`X-CSRF-Token: ${r.csrf === 'good' ? csrf : 'x'.repeat(csrf.length)}`);
  if (r.contentType !== null) lines.push(`Content-Type: ${r.contentType}`);
  lines.push(...r.extra);
  const len = { right: String(body.length), short: String(Math.max(0, body.length - 3)), long: String(body.length + 100), bad: '-1', none: null }[r.length];
  if (len !== null) lines.push(`Content-Length: ${len}`);
  lines.push('Connection: close');
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), body]);
}

const seen = { answered: 0, api: 0, apiOk: 0, silent: 0 };

/** Both servers serve a normal request correctly. */
async function assertServing(): Promise<void> {
  stack.assertAlive();
  const body = JSON.stringify({ function_id: 'engine::health::check', payload: {} });
  const c = await send('console', `POST /api/call HTTP/1.1\r\nHost: 127.0.0.1\r\nX-CSRF-Token: ${csrf}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  assert.equal(c.status, 200, c.body);
  assert.equal((JSON.parse(c.body) as { ok: boolean }).ok, true, c.body);
  const h = await send('http', `POST /fz/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{"a":1}`);
  assert.equal(h.status, 200, h.body);
  assert.deepEqual(JSON.parse(h.body), { got: { a: 1 } });
}

test('malformed and generated requests to the console and svc-http get well-formed answers; both keep serving', { timeout: 120_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 4 }), async (reqs) => {
      await Promise.all(
        reqs.map(async (r) => {
          const what = `${r.target} ${r.method} ${r.path.slice(0, 60)} ${JSON.stringify({ ...r, body: r.body.slice(0, 200), path: undefined })}`;
          // A declared length over the body sent: the server waits for the rest (svc-http until its request timeout).
          const a = await send(r.target, render(r), r.length === 'long' ? 2500 : 5000);
          if (a.silent) {
            // Node closes a CONNECT without a word where no proxy listens; a chunked body that is not chunked waits.
            assert.ok(r.length === 'long' || r.method === 'CONNECT' || r.extra.some((e) => e.startsWith('Transfer-Encoding: chunked') || e.startsWith('Expect')), `no answer: ${what}`);
            seen.silent++;
            return;
          }
          seen.answered++;
          assert.ok(a.status >= 200 && a.status < 600, `status ${a.status}: ${what}`);
          // An /api answer from the console's own code is JSON; node's parser refuses bad requests itself (a bare 400/431, no body type).
          if (r.target === 'console' && r.path.startsWith('/api')) {
            const type = /^content-type: ([^\r\n]*)/im.exec(a.headers)?.[1];
            assert.ok(type === undefined ? a.status === 400 || a.status === 431 || a.status === 505 : /^application\/json/.test(type), `an /api answer of ${a.status} as ${type}: ${a.body.slice(0, 300)}: ${what}`);
          }
          if (r.target === 'console' && r.method !== 'HEAD' && r.path.startsWith('/api') && /content-type: application\/json/i.test(a.headers)) {
            seen.api++;
            const j = JSON.parse(a.body) as { ok?: boolean; error?: { code?: string; message?: string } };
            if (a.status === 200 && j.ok === true) seen.apiOk++;
            else if (j.ok === false || a.status >= 400) {
              const code = j.error?.code ?? '';
              assert.ok(CODES.has(code) || (r.path.startsWith('/api/call') && a.status === 200), `undocumented code ${JSON.stringify(j.error)}: ${what}`);
              assert.ok(typeof j.error?.message === 'string' && j.error.message.length > 0 && j.error.message.length < 4000, `message ${JSON.stringify(j.error)}: ${what}`);
              assert.ok(code !== 'console_error' && code !== 'internal_error', `the console failed on its own: ${JSON.stringify(j.error)}: ${what}`);
            }
          }
        }),
      );
      await assertServing();
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
  );
  console.log(`console/http fuzz: ${JSON.stringify(seen)}`);
  for (const k of ['answered', 'api', 'apiOk'] as const) assert.ok(seen[k] >= 2, `too few ${k} (${seen[k]}): the generators went wrong`);
});

test('slow bodies: svc-http ends them at its request timeout; neither server stops answering others meanwhile', { timeout: 30_000 }, async () => {
  const slow = (target: Target) => {
    const s = connect(portOf(target), '127.0.0.1');
    s.on('error', () => undefined);
    s.write(`POST ${target === 'console' ? '/api/call' : '/fz/echo'} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-CSRF-Token: ${csrf}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":`);
    const t = setInterval(() => s.write(' '), 100);
    let out = '';
    s.on('data', (d: Buffer) => (out += d.toString('latin1')));
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    return { s, t, out: () => out, closed };
  };
  const sockets = [...Array.from({ length: 20 }, () => slow('http')), ...Array.from({ length: 20 }, () => slow('console'))];
  try {
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      await assertServing();
      assert.ok(Date.now() - t0 < 2000, `a normal request took ${Date.now() - t0} ms beside slow bodies`);
      await sleep(200);
    }
    // request_timeout_ms is 1500 (fuzz-stack.ts): svc-http answers 408 or closes each slow request.
    const http = sockets.slice(0, 20);
    await Promise.race([Promise.all(http.map((x) => x.closed)), sleep(8000)]);
    for (const x of http) assert.ok(x.s.destroyed || x.s.readableEnded || /^HTTP\/1\.1 408/.test(x.out()), `a slow body still held after 8 s: ${JSON.stringify(x.out().slice(0, 200))}`);
  } finally {
    for (const x of sockets) {
      clearInterval(x.t);
      x.s.destroy();
    }
  }
  await assertServing();
});
