/**
 * Property-based tests (fast-check) of svc-http (issue 9): random methods, paths, headers and bodies
 * (malformed JSON, odd charsets and encodings, big headers within Node's limit, bodies over the
 * limit), sent both through Node's HTTP client and as raw bytes on a socket, against a real svc-http
 * with an echo function bound. Every answer must be a well-formed HTTP response, every error a JSON
 * envelope `{error: {code, message}}`, nothing may hang, and a normal request works afterwards.
 *
 * FUZZ_SEED=<n> replays a run; the seed is printed, and fast-check's failure message carries it too.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, Agent } from 'node:http';
import { connect } from 'node:net';
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);

const BODY_LIMIT = 16 * 1024;
/** No answer within this is a hang (the function deadline is 1 s). */
const ANSWER_MS = 5000;

let engine: Awaited<ReturnType<typeof startEngine>>;
let http: HttpWorkerHandle;
let app: Worker;
let port = 0;

before(async () => {
  engine = await startEngine();
  http = await startHttpWorker({ url: engine.url, port: 0, timeoutMs: 1000, bodyLimitBytes: BODY_LIMIT });
  port = http.port;
  app = registerWorker(engine.url, { workerName: 'fuzz-app', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
  app.registerFunction('fuzz::echo', (req: Record<string, unknown>) => ({ status_code: 200, body: req }));
  // Answers with whatever envelope the request body describes: bad envelopes must become 500s.
  app.registerFunction('fuzz::envelope', (req: { body: unknown }) => req.body);
  app.registerFunction('fuzz::throw', (req: { body: unknown }) => {
    throw Object.assign(new Error(`planned: ${JSON.stringify(req.body)?.slice(0, 50)}`), { code: 'planned_failure' });
  });
  for (const [fid, api_path, http_method] of [
    ['fuzz::echo', '/echo', 'POST'],
    ['fuzz::echo', '/echo', 'GET'],
    ['fuzz::echo', '/echo/:id', 'PUT'],
    ['fuzz::echo', '/files/*rest', 'GET'],
    ['fuzz::echo', '/files/*rest', 'DELETE'],
    ['fuzz::echo', '/opt', 'OPTIONS'],
    ['fuzz::envelope', '/envelope', 'POST'],
    ['fuzz::throw', '/throw', 'PATCH'],
    ['ghost::missing', '/ghost', 'GET'],
  ] as const) {
    await app.registerTrigger({ type: 'http', function_id: fid, config: { api_path, http_method } });
  }
});

after(async () => {
  await app?.shutdown();
  await http?.shutdown();
  await engine?.stop();
});

// ---- generators ---------------------------------------------------------------------------------

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'get', 'Post', 'PROPFIND', 'FOO'];
const segment = fc.oneof(
  fc.string({ maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.constantFrom('%', '%zz', '%E0%A4%A', '%00', '..', '.', '%2F', '%F0%9F%92%A5', 'a%20b', '~', '%C0%AF', ';x=1'),
);
const ROUTED: Array<[string, string]> = [
  ['POST', '/echo'],
  ['GET', '/echo'],
  ['PUT', '/echo/x'],
  ['GET', '/files/a/b'],
  ['DELETE', '/files/a'],
  ['OPTIONS', '/opt'],
  ['POST', '/envelope'],
  ['PATCH', '/throw'],
  ['GET', '/ghost'],
];
const path = fc.oneof(
  fc.constantFrom('/echo', '/echo/', '/ECHO', '/echo/1', '/files/a/b/c', '/files', '/opt', '/envelope', '/throw', '/ghost', '/', '/nope', '//echo', '/echo//'),
  fc.tuple(fc.constantFrom('/echo/', '/files/', '/', '/nope/'), fc.array(segment, { minLength: 1, maxLength: 4 })).map(([p, s]) => p + s.join('/')),
);
const query = fc.oneof(
  fc.constant(''),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 10 }), { maxKeys: 4 }).map((d) => '?' + new URLSearchParams(d).toString()),
  fc.constantFrom('?', '?a', '?a=1&a=2&a=3', '?%zz=1', '?a[b]=1', '?=&&=', '?__proto__=1&constructor=2'),
);
/** Header names Node's client accepts (token characters), values of visible ASCII. */
const headerName = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/).filter((n) => !/^(content-length|transfer-encoding|host|connection|expect|upgrade|content-encoding|content-type|te|trailer|keep-alive|proxy-connection)$/i.test(n));
const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,60}$/).map((v) => v.trim());
const headers = fc.dictionary(headerName, headerValue, { maxKeys: 6 });
const CONTENT_TYPES = [
  undefined,
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/vnd.api+json',
  'text/plain',
  'text/plain; charset=shift_jis',
  'text/plain; charset=x-no-such-charset',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  ';;;',
];
const ENCODINGS = [undefined, 'identity', 'gzip', 'deflate', 'br', 'gzip-broken', 'zstd', 'gzip, gzip'];
const body = fc.oneof(
  fc.constant(Buffer.alloc(0)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
  fc.constantFrom('{', '{"a":', '[1,2', 'nul', '{"a":1}garbage', '\ufeff{"a":1}', '"unterminated', '{"__proto__":{"x":1}}').map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  // Envelopes for fuzz::envelope: valid, invalid status, bad header values, odd bodies.
  fc
    .record(
      {
        status_code: fc.oneof(fc.integer({ min: -5, max: 700 }), fc.constantFrom(200, 201, 204, 304, 404, 599, 1.5, '200', null)),
        body: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined)),
        headers: fc.oneof(
          fc.dictionary(fc.string({ maxLength: 10 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }))),
          fc.constantFrom({ 'content-length': '999' }, { 'x-bad': 'a\r\nb' }, { 'transfer-encoding': 'chunked' }, null, 'str'),
        ),
      },
      { requiredKeys: [] },
    )
    .map((e) => Buffer.from(JSON.stringify(e))),
  // Over the limit.
  fc.integer({ min: BODY_LIMIT + 1, max: BODY_LIMIT * 3 }).map((n) => Buffer.alloc(n, 0x61)),
);
const bigHeader = fc.option(fc.integer({ min: 1000, max: 8000 }), { nil: undefined });

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  contentType: string | undefined;
  encoding: string | undefined;
  body: Buffer;
  big: number | undefined;
}
const methodAndPath = fc.oneof(
  fc.tuple(fc.constantFrom(...METHODS), path),
  // Half the requests hit a bound route, so the function and its error paths are reached.
  fc.tuple(fc.constantFrom(...ROUTED), fc.array(segment, { maxLength: 1 })).map(([[m, p], extra]) => [m, extra.length && p.startsWith('/files') ? `${p}/${extra[0]}` : p] as [string, string]),
);
const req: fc.Arbitrary<Req> = fc.tuple(methodAndPath, query, fc.record({
  headers,
  contentType: fc.constantFrom(...CONTENT_TYPES),
  encoding: fc.constantFrom(...ENCODINGS),
  body,
  big: bigHeader,
})).map(([[method, p], q, rest]) => ({ method, path: p + q, ...rest }));

function encode(b: Buffer, encoding: string | undefined): Buffer {
  switch (encoding) {
    case 'gzip':
      return gzipSync(b);
    case 'deflate':
      return deflateSync(b);
    case 'br':
      return brotliCompressSync(b);
    case 'gzip-broken':
      return Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), b]);
    default:
      return b;
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function send(r: Req): Promise<Answer> {
  const payload = encode(r.body, r.encoding);
  const h: Record<string, string> = { ...r.headers };
  if (r.contentType !== undefined) h['content-type'] = r.contentType;
  if (r.encoding !== undefined) h['content-encoding'] = r.encoding === 'gzip-broken' ? 'gzip' : r.encoding;
  if (r.big) h['x-big'] = 'b'.repeat(r.big);
  // Node's client sends a DELETE/OPTIONS body without any length, which no server can frame.
  if (payload.length > 0) h['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    const rq = request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers: h, agent, timeout: ANSWER_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    rq.on('timeout', () => rq.destroy(new Error(`no answer within ${ANSWER_MS} ms: a hang`)));
    rq.on('error', (e) => reject(new Error(`${r.method} ${r.path} (${r.contentType ?? 'no type'}, ${r.encoding ?? 'no encoding'}, ${r.body.length} bytes, big header ${r.big ?? 0}): ${e.message}`)));
    rq.end(payload.length > 0 ? payload : undefined);
  });
}

/** An error answer carries the JSON envelope; a success from the echo function echoes the request. */
function checkAnswer(r: Req, a: Answer): void {
  const what = `${r.method} ${r.path} (${r.contentType ?? 'no type'}, ${r.encoding ?? 'no encoding'}, ${r.body.length} bytes) → ${a.status} ${a.body.toString('utf8').slice(0, 300)}`;
  assert.ok(a.status >= 200 && a.status <= 599, what);
  if (r.method.toUpperCase() === 'HEAD') return;
  // fuzz::envelope answers with the envelope it was sent: a valid one may choose any status from
  // 200 to 599 and any body, so such an answer is the function's, not an svc-http error.
  if (a.status >= 400 && r.path.split('?')[0] === '/envelope' && chosenStatus(r) === a.status) return;
  if (a.status >= 400) {
    assert.match(String(a.headers['content-type']), /^application\/json/, `errors are JSON: ${what}`);
    const j = JSON.parse(a.body.toString('utf8')) as { error?: { code?: unknown; message?: unknown } };
    assert.equal(typeof j.error?.code, 'string', what);
    assert.equal(typeof j.error?.message, 'string', what);
    assert.ok((j.error!.message as string).length > 0, what);
    if (a.status === 413) assert.equal(j.error!.code, 'payload_too_large', what);
    return;
  }
  const p = r.path.split('?')[0]!;
  if (a.status === 200 && /^\/(echo|files|opt)/i.test(p) && r.method !== 'OPTIONS') {
    const echoed = JSON.parse(a.body.toString('utf8')) as { method: string; path: string; headers: Record<string, string> };
    assert.equal(echoed.method, r.method.toUpperCase(), what);
    if (r.big) assert.equal(echoed.headers['x-big']?.length, r.big, what);
  }
  if (a.status === 200 && p === '/envelope') {
    // Only a valid envelope gets through; its status is what the function asked for.
    const env = JSON.parse(r.body.toString('utf8')) as { status_code: unknown };
    assert.equal(env.status_code, 200, what);
  }
}

/** The status a JSON request to /envelope asks the function to answer with, if it names one. */
function chosenStatus(r: Req): number | undefined {
  if (!/json/i.test(r.contentType ?? '')) return undefined;
  try {
    const env = JSON.parse(r.body.toString('utf8')) as { status_code?: unknown } | null;
    return typeof env?.status_code === 'number' ? env.status_code : undefined;
  } catch {
    return undefined;
  }
}

async function stillServes(): Promise<void> {
  const a = await send({ method: 'POST', path: '/echo?ok=1', headers: {}, contentType: 'application/json', encoding: undefined, body: Buffer.from('{"a":1}'), big: undefined });
  assert.equal(a.status, 200);
  assert.deepEqual((JSON.parse(a.body.toString()) as { body: unknown }).body, { a: 1 });
}

// ---- raw bytes on a socket ------------------------------------------------------------------------

/** Send raw bytes; collect everything until the server closes or stays silent for `idleMs`. */
function rawExchange(bytes: Buffer, idleMs = 300): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let idle: NodeJS.Timeout | undefined;
    const hard = setTimeout(() => {
      s.destroy();
      reject(new Error(`raw exchange: no end within ${ANSWER_MS} ms`));
    }, ANSWER_MS);
    const done = (): void => {
      clearTimeout(hard);
      clearTimeout(idle);
      s.destroy();
      resolve(Buffer.concat(chunks));
    };
    const arm = (): void => {
      clearTimeout(idle);
      idle = setTimeout(done, idleMs);
    };
    s.on('connect', () => {
      s.write(bytes);
      arm();
    });
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      arm();
    });
    s.on('end', done);
    s.on('close', done);
    s.on('error', () => done());
  });
}

/** Split raw output into responses; each must be well-formed, and errors must carry the envelope. */
function checkRawResponses(out: Buffer, what: string): number {
  let text = out.toString('latin1');
  let n = 0;
  while (text.length > 0) {
    const head = text.indexOf('\r\n\r\n');
    assert.ok(head > 0, `an incomplete response head: ${what}: ${JSON.stringify(text.slice(0, 200))}`);
    const lines = text.slice(0, head).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3}) /.exec(lines[0]! + ' ');
    assert.ok(m, `bad status line ${JSON.stringify(lines[0])}: ${what}`);
    const status = Number(m[1]);
    const hdr = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const len = Number(hdr.get('content-length') ?? 0);
    assert.ok(!hdr.has('transfer-encoding'), `svc-http always sends a length: ${what}`);
    const bodyText = text.slice(head + 4, head + 4 + len);
    assert.equal(Buffer.byteLength(bodyText, 'latin1'), len, `a truncated body: ${what}`);
    if (status >= 400 && len > 0) {
      assert.match(hdr.get('content-type') ?? '', /^application\/json/, `${status} without JSON: ${what}`);
      const j = JSON.parse(Buffer.from(bodyText, 'latin1').toString('utf8')) as { error?: { code?: unknown; message?: unknown } };
      assert.equal(typeof j.error?.code, 'string', what);
      assert.equal(typeof j.error?.message, 'string', what);
    } else if (status >= 400) {
      assert.fail(`${status} without a JSON error body: ${what}: ${JSON.stringify(text.slice(0, head))}`);
    }
    text = text.slice(head + 4 + len);
    n++;
  }
  return n;
}

const rawRequest = fc.oneof(
  // A plausible request with one part broken.
  fc
    .record({
      method: fc.oneof(fc.constantFrom('GET', 'POST', 'G ET', '', 'GET\t', '\u00e9'), fc.string({ maxLength: 8 })),
      target: fc.oneof(fc.constantFrom('/echo', '*', 'http://x/echo', '/echo#frag', '/echo\u0000', '/ e', '%%%'), path),
      version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'HTTPS/1.1', ''),
      extra: fc.array(
        fc.oneof(
          fc.tuple(headerName, headerValue).map(([n, v]) => `${n}: ${v}`),
          fc.constantFrom('Bad Header: x', 'NoColon', ' folded: x', 'X-Null: a\u0000b', 'X-Utf8: h\u00e9llo', 'Content-Length: -1', 'Content-Length: 1, 2', 'Content-Length: abc', 'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip', 'Content-Type: application/json', 'Expect: 100-continue'),
        ),
        { maxLength: 4 },
      ),
      body: fc.oneof(fc.constant(''), fc.constantFrom('{"a":1}', '{', '0\r\n\r\n', 'zz\r\nxx\r\n', '5\r\nhello\r\n0\r\n\r\n'), fc.string({ maxLength: 50 })),
      host: fc.boolean(),
    })
    .map((r) => `${r.method} ${r.target} ${r.version}\r\n${r.host ? 'Host: x\r\n' : ''}${r.extra.map((e) => e + '\r\n').join('')}Content-Length: ${Buffer.byteLength(r.body)}\r\n\r\n${r.body}`),
  // Garbage.
  fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.string({ minLength: 1, maxLength: 300 }),
  // Headers over Node's 16 KiB limit: 431.
  fc.integer({ min: 17_000, max: 40_000 }).map((n) => `GET /echo HTTP/1.1\r\nHost: x\r\nX-Huge: ${'h'.repeat(n)}\r\n\r\n`),
);

describe('svc-http under random requests', () => {
  test('requests through an HTTP client: every answer well-formed, every error a JSON envelope', { timeout: 60_000 }, async () => {
    let count = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(req, { minLength: 1, maxLength: 8 }), async (batch) => {
        // A few at once, as real clients send them.
        const answers = await Promise.all(batch.map((r) => send(r).then((a) => [r, a] as const)));
        for (const [r, a] of answers) {
          checkAnswer(r, a);
          statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
          count++;
        }
      }),
      { seed: SEED, numRuns: 300, endOnFailure: true, includeErrorInReport: true },
    );
    console.log(`http fuzz: ${count} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
    // The runs reached the function, and its error paths.
    for (const s of [200, 400, 404, 405, 413, 415, 500, 503]) assert.ok((statuses.get(s) ?? 0) > 0, `no ${s} answer in ${count} requests`);
    await stillServes();
  });

  test('raw bytes on a socket: well-formed responses, JSON errors, no hang', { timeout: 60_000 }, async () => {
    let responses = 0;
    await fc.assert(
      fc.asyncProperty(rawRequest, async (text) => {
        const out = await rawExchange(Buffer.from(text, 'latin1'));
        responses += checkRawResponses(out, JSON.stringify(text.slice(0, 200)));
      }),
      { seed: SEED, numRuns: 300, endOnFailure: true, includeErrorInReport: true },
    );
    console.log(`http raw fuzz: ${responses} responses`);
    assert.ok(responses > 100, `only ${responses} responses to 300 raw requests`);
    await stillServes();
  });

  test('a client that sends half a request and goes away does not hold the server', async () => {
    for (const partial of ['POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":', 'GET /echo HTTP/1.1\r\nHo']) {
      await new Promise<void>((resolve) => {
        const s = connect(port, '127.0.0.1', () => {
          s.write(partial);
          setTimeout(() => {
            s.destroy();
            resolve();
          }, 50);
        });
      });
    }
    await stillServes();
    assert.deepEqual(await app.trigger({ function_id: 'engine::health::check' }).then((h) => (h as { status: string }).status), 'ok');
  });
});
