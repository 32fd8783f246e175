import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPayload, isJsonContentType, MAX_BODY_DEPTH, nestsDeeperThan, parseBody } from '../../../src/workers/http/request.js';
import { envelopeToResponse, errorResponse, HttpError, invocationErrorToHttp } from '../../../src/workers/http/response.js';
import { HttpConfigError, parseHttpWorkerConfig, DEFAULT_HTTP_CONFIG } from '../../../src/workers/http/config.js';

const isHttpError = (status: number, code: string, re?: RegExp) => (e: unknown) =>
  e instanceof HttpError && e.status === status && e.code === code && (!re || re.test(e.message));

test('JSON content types', () => {
  for (const ct of ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/problem+json']) assert.ok(isJsonContentType(ct), ct);
  for (const ct of [undefined, '', 'text/plain', 'application/jsonx', 'text/json+x']) assert.equal(isJsonContentType(ct), false, String(ct));
});

test('body: JSON parsed, text decoded, empty is null, malformed JSON is 400 invalid_json', () => {
  assert.deepEqual(parseBody(Buffer.from('{"a":1}'), 'application/json'), { a: 1 });
  assert.equal(parseBody(Buffer.from('42'), 'application/json'), 42);
  assert.deepEqual(parseBody(Buffer.from('\uFEFF[1]'), 'application/json'), [1], 'BOM tolerated');
  assert.equal(parseBody(Buffer.from('{"a":1}'), 'text/plain'), '{"a":1}');
  assert.equal(parseBody(Buffer.from('héllo'), undefined), 'héllo');
  assert.equal(parseBody(Buffer.from([0x68, 0xe9]), 'text/plain; charset=latin1'), 'hé');
  assert.equal(parseBody(undefined, 'application/json'), null);
  assert.equal(parseBody(Buffer.alloc(0), 'text/plain'), null);
  assert.equal(parseBody(Buffer.from('  '), 'application/json'), null);
  assert.throws(() => parseBody(Buffer.from('{"a":'), 'application/json'), isHttpError(400, 'invalid_json', /not valid JSON/));
  assert.throws(() => parseBody(Buffer.from('x'), 'text/plain; charset=klingon'), isHttpError(415, 'unsupported_charset', /klingon/));
});

test('body: a JSON number that overflows a double is 400 invalid_json naming where, not null', () => {
  // Before: JSON.parse read these as ±Infinity, and the call's frame carried null to the function.
  const tooLarge = (text: string, at: string) =>
    assert.throws(() => parseBody(Buffer.from(text), 'application/json'), (e: unknown) => {
      assert.ok(e instanceof HttpError, String(e));
      assert.deepEqual([e.status, e.code], [400, 'invalid_json']);
      assert.equal(e.message, `Request body is not valid JSON for a call (Content-Type application/json): the number at ${at} is too large for a double (it would arrive as null)`);
      return true;
    });
  tooLarge('1e400', 'body');
  tooLarge('{"a":[1,2,-1E400]}', 'body.a[2]');
  tooLarge('{"order":{"line items":[{"price":' + '9'.repeat(400) + '}]}}', 'body.order["line items"][0].price');
  tooLarge('[0.5, 17976931348623159e292]', 'body[1]');
  // In range, or only text: passed on as parsed.
  assert.deepEqual(parseBody(Buffer.from('{"a":1e308,"b":-2.5E-400,"id":"9e999","n":' + '9'.repeat(300) + '}'), 'application/json'), { a: 1e308, b: -0, id: '9e999', n: Number('9'.repeat(300)) });
  assert.equal(parseBody(Buffer.from('1e400'), 'text/plain'), '1e400');
});

test('nesting depth: arrays and objects counted, strings and escapes skipped', () => {
  const nest = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
  assert.equal(nestsDeeperThan(nest(100), 100), false);
  assert.equal(nestsDeeperThan(nest(101), 100), true);
  assert.equal(nestsDeeperThan('['.repeat(101) + ']'.repeat(101), 100), true);
  assert.equal(nestsDeeperThan(JSON.stringify(['\\"[[[[', '['.repeat(500), { k: '{'.repeat(500) }]), 100), false, 'brackets in strings');
  assert.equal(nestsDeeperThan(JSON.stringify([1, [2, [3]], { a: [{}] }]), 2), true);
  assert.equal(nestsDeeperThan(JSON.stringify(Array.from({ length: 1000 }, () => [[1]])), 3), false, 'wide is not deep');
  assert.equal(MAX_BODY_DEPTH, 100);
  assert.throws(() => parseBody(Buffer.from(nest(101)), 'application/json'), isHttpError(400, 'json_too_deep', /more than 100 levels deep/));
  assert.deepEqual(parseBody(Buffer.from(nest(2)), 'application/json'), { a: { a: 1 } });
});

test('payload carries body, flattened headers, query, params, method, actual path and route', () => {
  const p = buildPayload({
    body: { a: 1 },
    headers: { 'x-one': '1', 'set-cookie': ['a=1', 'b=2'] },
    query: { q: 'x', tag: ['a', 'b'] },
    pathParams: { id: '42' },
    method: 'POST',
    path: '/users/42',
    route: '/users/:id',
  });
  assert.deepEqual(p, {
    body: { a: 1 },
    headers: { 'x-one': '1', 'set-cookie': 'a=1, b=2' },
    query_params: { q: 'x', tag: ['a', 'b'] },
    path_params: { id: '42' },
    method: 'POST',
    path: '/users/42',
    route: '/users/:id',
  });
});

test('envelope: status, JSON or text body, headers', () => {
  assert.deepEqual(envelopeToResponse({ status_code: 200, body: { c: 5 } }), {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"c":5}',
  });
  assert.deepEqual(envelopeToResponse({ status_code: 201, body: 'made', headers: { 'X-Id': '7', Location: '/x/7' } }), {
    status: 201,
    headers: { 'x-id': '7', location: '/x/7', 'content-type': 'text/plain; charset=utf-8' },
    body: 'made',
  });
  assert.deepEqual(envelopeToResponse({ status_code: 200, body: '<b>hi</b>', headers: { 'Content-Type': 'text/html' } }).headers, { 'content-type': 'text/html' });
  assert.deepEqual(envelopeToResponse({ status_code: 200, body: [1, 2] }).body, '[1,2]');
  assert.deepEqual(envelopeToResponse({ status_code: 200, body: 0 }).body, '0');
  assert.equal(envelopeToResponse({ status_code: 200, body: null }).body, undefined);
  assert.equal(envelopeToResponse({ status_code: 204, body: { x: 1 } }).body, undefined, '204 never has a body');
  // iii's header list form and repeated headers.
  assert.deepEqual(envelopeToResponse({ status_code: 200, headers: ['X-A: 1', 'X-B:two: parts'] }).headers, { 'x-a': '1', 'x-b': 'two: parts' });
  assert.deepEqual(envelopeToResponse({ status_code: 200, headers: { 'Set-Cookie': ['a=1', 'b=2'], 'X-N': 3 } }).headers, { 'set-cookie': ['a=1', 'b=2'], 'x-n': '3' });
  // Framing headers are ours to compute.
  assert.deepEqual(envelopeToResponse({ status_code: 200, body: 'x', headers: { 'Content-Length': '999', 'Transfer-Encoding': 'chunked' } }).headers, {
    'content-type': 'text/plain; charset=utf-8',
  });
});

test('a result that is not an envelope is 500 invalid_response saying what was expected and what came', () => {
  const expected = /expected \{status_code: integer 200–599, body\?: any, headers\?: \{name: string\}\}/;
  assert.throws(() => envelopeToResponse({ c: 5 }, 'math::add'), isHttpError(500, 'invalid_response', /Function math::add returned an object without status_code \(keys: c\)/));
  assert.throws(() => envelopeToResponse({ c: 5 }), isHttpError(500, 'invalid_response', expected));
  assert.throws(() => envelopeToResponse(null), isHttpError(500, 'invalid_response', /returned null/));
  assert.throws(() => envelopeToResponse('ok'), isHttpError(500, 'invalid_response', /the string "ok"/));
  assert.throws(() => envelopeToResponse([1]), isHttpError(500, 'invalid_response', /an array/));
  assert.throws(() => envelopeToResponse({ status_code: '200' }), isHttpError(500, 'invalid_response', /status_code the string "200"/));
  assert.throws(() => envelopeToResponse({ status_code: 99 }), isHttpError(500, 'invalid_response', /status_code number 99/));
  assert.throws(() => envelopeToResponse({ status_code: 200.5 }), isHttpError(500, 'invalid_response'));
  assert.throws(() => envelopeToResponse({ status_code: 600 }), isHttpError(500, 'invalid_response'));
  assert.throws(() => envelopeToResponse({ status_code: 200, headers: { 'X-A': { nested: 1 } } }), isHttpError(500, 'invalid_response', /header "X-A" with an object/));
  assert.throws(() => envelopeToResponse({ status_code: 200, headers: { 'X-A': 'a\r\nb' } }), isHttpError(500, 'invalid_response', /invalid header "X-A"/));
  assert.throws(() => envelopeToResponse({ status_code: 200, headers: { 'bad name': 'x' } }), isHttpError(500, 'invalid_response', /invalid header "bad name"/));
  assert.throws(() => envelopeToResponse({ status_code: 200, headers: 'x' }), isHttpError(500, 'invalid_response'));
});

test('invocation errors map to 503, 504, 413 and 500 with the function code', () => {
  const err = (code: string, message = 'm') => Object.assign(new Error(message), { code });
  assert.ok(isHttpError(503, 'function_not_found', /Function f::g is not registered/)(invocationErrorToHttp(err('function_not_found', 'Function f::g not found'), 'f::g', 30000)));
  assert.ok(isHttpError(503, 'function_not_found')(invocationErrorToHttp(err('function_not_found', 'Function f::g not found in namespace "shop".'), 'f::g', 1)));
  assert.ok(isHttpError(503, 'invocation_stopped')(invocationErrorToHttp(err('invocation_stopped', 'Invocation of f stopped: its worker disconnected'), 'f', 1)));
  // The same codes naming another function: a nested call's failure the function passed on, its own 500.
  assert.ok(isHttpError(500, 'function_not_found', /^Function f::g failed; its error message is not sent/)(invocationErrorToHttp(err('function_not_found', 'Function billing::charge not found'), 'f::g', 1)));
  assert.ok(isHttpError(500, 'invocation_stopped', /^Invocation of billing::charge stopped: gone$/)(invocationErrorToHttp(err('invocation_stopped', 'Invocation of billing::charge stopped: gone'), 'f', 1, true)));
  assert.ok(isHttpError(503, 'connection_lost')(invocationErrorToHttp(err('connection_lost'), 'f', 1)));
  assert.ok(isHttpError(504, 'timeout', /did not answer within 250 ms/)(invocationErrorToHttp(err('timeout'), 'f', 250)));
  assert.ok(isHttpError(504, 'timeout')(invocationErrorToHttp(err('TIMEOUT'), 'f', 250)));
  assert.ok(isHttpError(413, 'payload_too_large')(invocationErrorToHttp(err('payload_too_large'), 'f', 1)));
  assert.ok(isHttpError(502, 'response_too_large', /^The response of f is too large/)(invocationErrorToHttp(err('result_too_large'), 'f', 1)));
  assert.ok(isHttpError(503, 'binding_not_found')(invocationErrorToHttp(err('binding_not_found'), 'f', 1)));
  // The function's own message reaches the client only with expose_errors; it is kept for the log.
  const hidden = invocationErrorToHttp(err('out_of_stock', 'SELECT * FROM users WHERE pw=hunter2'), 'f', 1);
  assert.ok(isHttpError(500, 'out_of_stock', /^Function f failed; its error message is not sent to HTTP clients: find it in the logs .* by this response's trace_id$/)(hidden));
  assert.doesNotMatch(hidden.message, /hunter2/);
  assert.equal(hidden.withheldMessage, 'SELECT * FROM users WHERE pw=hunter2');
  assert.ok(isHttpError(500, 'out_of_stock', /^no more$/)(invocationErrorToHttp(err('out_of_stock', 'no more'), 'f', 1, true)));
  assert.ok(isHttpError(500, 'internal_error', /^Function f failed; its error message is not sent/)(invocationErrorToHttp(new TypeError('boom /etc/x'), 'f', 1)));
  assert.ok(isHttpError(500, 'internal_error', /^Calling f failed: boom \/etc\/x$/)(invocationErrorToHttp(new TypeError('boom /etc/x'), 'f', 1, true)));
  // A function may throw an engine's code too: svc-http's own text goes, the error's message only
  // with expose_errors (else it is kept for the request log).
  for (const [code, status] of [['binding_not_found', 503], ['cancelled', 503], ['connection_lost', 503], ['shutting_down', 503], ['payload_too_large', 413], ['frame_too_large', 413], ['result_too_large', 502]] as const) {
    const quiet = invocationErrorToHttp(err(code, 'pw=hunter2'), 'f', 1);
    assert.equal(quiet.status, status, code);
    assert.doesNotMatch(quiet.message, /hunter2/, code);
    assert.equal(quiet.withheldMessage, 'pw=hunter2', code);
    const told = invocationErrorToHttp(err(code, 'pw=hunter2'), 'f', 1, true);
    assert.match(told.message, /hunter2/, code);
    assert.equal(told.withheldMessage, undefined, code);
  }
  const r = errorResponse(new HttpError(404, 'not_found', 'No route for GET /x'));
  assert.deepEqual(r, { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":"not_found","message":"No route for GET /x"}}' });
  const traced = errorResponse(hidden, '0af7651916cd43dd8448eb211c80319c');
  assert.deepEqual(JSON.parse(traced.body!), { error: { code: 'out_of_stock', message: hidden.message, trace_id: '0af7651916cd43dd8448eb211c80319c' } });
});

test('worker config: defaults, snake_case keys, refusals', () => {
  assert.deepEqual(parseHttpWorkerConfig(undefined), DEFAULT_HTTP_CONFIG);
  assert.equal(DEFAULT_HTTP_CONFIG.port, 3111);
  assert.equal(DEFAULT_HTTP_CONFIG.host, '127.0.0.1');
  assert.equal(DEFAULT_HTTP_CONFIG.bodyLimitBytes, 1048576);
  assert.equal(DEFAULT_HTTP_CONFIG.timeoutMs, undefined, "the engine's default deadline");
  const c = parseHttpWorkerConfig({ host: '0.0.0.0', port: 8080, body_limit_bytes: 10, timeout_ms: 5, request_log: false, cors: { origins: 'https://a.example' }, streaming: 'all', stream_body_limit_bytes: 20, max_connections: 7, request_timeout_ms: 9000, expose_errors: true });
  assert.deepEqual(c, { host: '0.0.0.0', port: 8080, bodyLimitBytes: 10, streamBodyLimitBytes: 20, maxConnections: 7, requestTimeoutMs: 9000, timeoutMs: 5, requestLog: false, streaming: 'all', exposeErrors: true, cors: { origins: ['https://a.example'] } });
  assert.equal(DEFAULT_HTTP_CONFIG.exposeErrors, false, "a function's error message is not sent by default");
  assert.throws(() => parseHttpWorkerConfig({ expose_errors: 'yes' }), /expose_errors must be true or false/);
  assert.equal(DEFAULT_HTTP_CONFIG.maxConnections, 10_000);
  assert.throws(() => parseHttpWorkerConfig({ max_connections: 0 }), /max_connections must be an integer from 1 to 1000000, got 0/);
  assert.equal(DEFAULT_HTTP_CONFIG.streamBodyLimitBytes, 1024 ** 3);
  assert.equal(DEFAULT_HTTP_CONFIG.streaming, 'routes', 'only routes bound with stream: true stream');
  assert.throws(() => parseHttpWorkerConfig({ streaming: true }), /streaming must be "routes" or "all", got true/);
  assert.deepEqual(parseHttpWorkerConfig({ cors: true }).cors, { origins: ['*'] });
  assert.throws(() => parseHttpWorkerConfig({ prot: 1 }), (e: unknown) => e instanceof HttpConfigError && /unknown key "prot"/.test(e.message));
  assert.throws(() => parseHttpWorkerConfig({ port: 70000 }), /port must be an integer from 0 to 65535, got 70000/);
  assert.throws(() => parseHttpWorkerConfig({ cors: { origin: ['*'] } }), /unknown cors key "origin"/);
  assert.throws(() => parseHttpWorkerConfig({ cors: { origins: [] } }), /at least one origin/);
  assert.throws(() => parseHttpWorkerConfig([]), HttpConfigError);
});
