/**
 * The console API's error middleware, over real HTTP: a body the client got wrong is answered with
 * a code naming what (body-parser's refusals), and a failure of the console server's own code is a
 * logged 500 `internal_error`. Before, every one of them was 400 `invalid_request`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { startConsoleServer, type ConsoleServer } from '../../../src/console-server/server.js';
import { apiErrors } from '../../../src/console-server/api-errors.js';
import { startEngine } from '../../helpers/engine.js';
import { eventually } from '../../helpers/util.js';
import { documentedCodes } from '../fuzz-stack.js';

type ApiError = { ok: false; error: { code: string; message: string } };
const CODES = documentedCodes();

async function post(url: string, body: string | Blob, headers: Record<string, string>): Promise<{ status: number; body: ApiError }> {
  const r = await fetch(url, { method: 'POST', body, headers });
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  return { status: r.status, body: (await r.json()) as ApiError };
}

describe('the console API answers a bad body with its own code, and its own failure with a logged 500', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let consoleServer: ConsoleServer;
  const logged: string[] = [];
  let headers: Record<string, string>;
  before(async () => {
    eng = await startEngine();
    consoleServer = await startConsoleServer({ engineUrl: eng.url, port: 0, workerName: 'errors-console', log: (line) => logged.push(line) });
    await eventually(() => assert.equal(consoleServer.worker.state, 'connected'), 10_000);
    const session = (await (await fetch(`${consoleServer.url}api/session`)).json()) as { csrf_token: string };
    headers = { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token };
  });
  after(async () => {
    await consoleServer?.close();
    await eng?.stop();
  });

  test('a body that is not JSON: 400 invalid_json naming why', async () => {
    const r = await post(`${consoleServer.url}api/call`, '{"function_id":', headers);
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_json');
    assert.match(r.body.error.message, /^The request body is not JSON: .*JSON/);
  });

  test('a charset other than UTF-8: 415 unsupported_charset; an unknown Content-Encoding: 415 unsupported_encoding', async () => {
    const charset = await post(`${consoleServer.url}api/call`, '{}', { ...headers, 'content-type': 'application/json; charset=latin1' });
    assert.equal(charset.status, 415);
    assert.equal(charset.body.error.code, 'unsupported_charset');
    assert.match(charset.body.error.message, /unsupported charset "LATIN1".*send UTF-8/);
    const encoding = await post(`${consoleServer.url}api/call`, '{}', { ...headers, 'content-encoding': 'compress' });
    assert.equal(encoding.status, 415);
    assert.equal(encoding.body.error.code, 'unsupported_encoding');
    assert.match(encoding.body.error.message, /"compress"/);
  });

  test('a gzip body that does not inflate: 400 invalid_request; a good one is served', async () => {
    const bad = await post(`${consoleServer.url}api/call`, new Blob(['not gzip at all']), { ...headers, 'content-encoding': 'gzip' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_request');
    assert.match(bad.body.error.message, /^The request body could not be read: /);
    const good = await fetch(`${consoleServer.url}api/call`, { method: 'POST', headers: { ...headers, 'content-encoding': 'gzip' }, body: new Blob([gzipSync(JSON.stringify({ function_id: 'engine::health::check' }))]) });
    assert.equal(((await good.json()) as { ok: boolean }).ok, true);
  });

  test('every code is in docs/errors.md, and none of the client\'s mistakes was logged as ours', () => {
    for (const code of ['invalid_json', 'unsupported_charset', 'unsupported_encoding', 'invalid_request', 'payload_too_large', 'internal_error']) assert.ok(CODES.has(code), code);
    assert.deepEqual(logged, []);
  });
});

// The console server's routes catch what they call; what still reaches the middleware is a bug,
// which cannot be made to happen there on purpose. So: the same middleware after a route that
// throws, and after body-parser finding the request stream decoding text (its `stream.encoding.set`,
// a 500 of ours, not the client's).
describe('a failure of the server\'s own code', () => {
  let server: Server;
  let base: string;
  const logged: string[] = [];
  before(async () => {
    const app = express();
    app.post('/api/decoding', (req, _res, next) => {
      req.setEncoding('utf8');
      next();
    });
    app.use('/api', express.json());
    app.post('/api/broken', async () => {
      const rows: { name: string }[] | undefined = undefined;
      return rows!.map((r) => r.name);
    });
    app.post('/api/decoding', (_req, res) => res.json({ ok: true }));
    app.use('/api', apiErrors('8mb', (line) => logged.push(line)));
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('is 500 internal_error naming the request and the cause, with the stack in the log', async () => {
    const r = await post(`${base}/api/broken`, '{}', { 'content-type': 'application/json' });
    assert.equal(r.status, 500);
    assert.equal(r.body.error.code, 'internal_error');
    assert.match(r.body.error.message, /^The console server failed on POST \/api\/broken: Cannot read properties of undefined \(reading 'map'\) \(a bug; its log has the stack\)$/);
    assert.equal(logged.length, 1);
    assert.match(logged[0]!, /^svc console: POST \/api\/broken failed in the console server: TypeError: Cannot read properties of undefined \(reading 'map'\)\n\s+at /);
  });

  test('a body-parser error that is ours (a stream set to decode text) is 500 too, not the client\'s 400', async () => {
    const r = await post(`${base}/api/decoding`, '{"a":1}', { 'content-type': 'application/json' });
    assert.equal(r.status, 500);
    assert.equal(r.body.error.code, 'internal_error');
    assert.match(r.body.error.message, /^The console server failed on POST \/api\/decoding: stream encoding should not be set/);
    assert.equal(logged.length, 2);
  });
});
