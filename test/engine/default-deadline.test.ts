/**
 * A call that sets no deadline gets the engine's `engine.invocation_timeout_ms`, whoever makes it:
 * svc-sdk workers, svc-http (a built-in), the console server. (The CLI: e2e/cli.test.ts; the Python
 * SDK: sdk/python/tests/test_calls.py.) And the SDK's safety timer, for an engine that never
 * answers, follows the default the engine advertised in `hello`, not a 30 s of its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { startConsoleServer, type ConsoleServer } from '../../src/console-server/server.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../src/workers/http/worker.js';
import { startEngine } from '../helpers/engine.js';
import { eventually, sleep } from '../helpers/util.js';

const DEFAULT_MS = 400;
const SLOW_MS = 5000;

describe("the engine's default deadline applies to calls that set none", { timeout: 30_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let callee: Worker;
  let caller: Worker;
  let http: HttpWorkerHandle;
  let consoleServer: ConsoleServer;
  before(async () => {
    eng = await startEngine({ invocationTimeoutMs: DEFAULT_MS });
    callee = registerWorker(eng.url, { workerName: 'slow', echoLogs: false });
    callee.registerFunction('slow::fn', () => sleep(SLOW_MS).then(() => 'late'));
    await callee.registerTrigger({ type: 'http', function_id: 'slow::fn', config: { api_path: '/slow', http_method: 'GET' } });
    caller = registerWorker(eng.url, { workerName: 'caller', echoLogs: false });
    http = await startHttpWorker({ url: eng.url, port: 0, requestLog: false });
    consoleServer = await startConsoleServer({ engineUrl: eng.url, port: 0 });
    await caller.ready();
    await eventually(() => assert.equal(consoleServer.worker.state, 'connected'));
    await eventually(async () => assert.notEqual((await fetch(`http://127.0.0.1:${http.port}/slow`, { method: 'HEAD' })).status, 404), 5000);
  });
  after(async () => {
    await consoleServer?.close();
    await http?.shutdown();
    await caller?.shutdown(0);
    await callee?.shutdown(0);
    await eng?.stop();
  });

  test('svc-sdk: trigger() without timeoutMs ends with `timeout` at the engine default', async () => {
    const t0 = performance.now();
    await assert.rejects(caller.trigger({ function_id: 'slow::fn' }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, new RegExp(`after ${DEFAULT_MS}ms`));
      return true;
    });
    const ms = performance.now() - t0;
    assert.ok(ms >= DEFAULT_MS && ms < DEFAULT_MS + 1500, `ended after ${ms.toFixed(0)} ms`);
    assert.equal(caller.defaultTimeoutMs, DEFAULT_MS, "the worker knows the engine's default from hello");
  });

  test('svc-sdk: a deadline of the caller still wins over the default', async () => {
    const fast = registerWorker(eng.url, { workerName: 'fast', echoLogs: false });
    fast.registerFunction('fast::fn', () => sleep(DEFAULT_MS + 300).then(() => 'done'));
    try {
      await fast.ready();
      assert.equal(await caller.trigger({ function_id: 'fast::fn', timeoutMs: 3000 }), 'done');
    } finally {
      await fast.shutdown(0);
    }
  });

  test('svc-http: a request to a slow function answers 504 at the engine default', async () => {
    const t0 = performance.now();
    const res = await fetch(`http://127.0.0.1:${http.port}/slow`);
    const ms = performance.now() - t0;
    assert.equal(res.status, 504);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'timeout');
    assert.match(body.error.message, new RegExp(`within ${DEFAULT_MS} ms`));
    assert.ok(ms < DEFAULT_MS + 1500, `answered after ${ms.toFixed(0)} ms`);
  });

  test('console: /api/call without timeout_ms ends with `timeout` at the engine default', async () => {
    // The console's API answers only its own page: it needs the session's CSRF token.
    const session = (await (await fetch(`${consoleServer.url}api/session`)).json()) as { csrf_token: string };
    const t0 = performance.now();
    const res = await fetch(`${consoleServer.url}api/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
      body: JSON.stringify({ function_id: 'slow::fn' }),
    });
    const ms = performance.now() - t0;
    const body = (await res.json()) as { ok: boolean; error?: { code: string } };
    assert.equal(body.ok, false);
    assert.equal(body.error?.code, 'timeout');
    assert.ok(ms < DEFAULT_MS + 1500, `answered after ${ms.toFixed(0)} ms`);
  });
});

describe("svc-sdk's safety timer follows the engine's advertised default", { timeout: 20_000 }, () => {
  /**
   * A peer that speaks the handshake of an engine whose default is 300 ms, then never answers a
   * call: what a stuck engine looks like to the SDK (a real engine always answers at its deadline).
   */
  let wss: WebSocketServer;
  let url: string;
  const calls: Array<Record<string, unknown>> = [];
  before(async () => {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    wss.on('connection', (ws) => {
      ws.send(JSON.stringify({ type: 'workerregistered', worker_id: 'w-1' }));
      ws.on('message', (data) => {
        const f = JSON.parse(data.toString()) as Record<string, unknown>;
        if (f.type === 'hello') {
          ws.send(JSON.stringify({ type: 'hello', protocol: 1, features: ['cancel', 'ack'], engine: { name: 'svc', version: '0', max_frame_bytes: 1 << 20, invocation_timeout_ms: 300 } }));
        }
        if (f.type === 'invokefunction' && f.invocation_id) calls.push(f);
      });
    });
  });
  after(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  });

  test('a call without a deadline gives up a second after the advertised default, not after 31 s', async () => {
    const w = registerWorker(url, { workerName: 'stranded', echoLogs: false });
    try {
      await w.ready();
      await eventually(() => assert.equal(w.defaultTimeoutMs, 300));
      const t0 = performance.now();
      await assert.rejects(w.trigger({ function_id: 'any::fn' }), { code: 'timeout' });
      const ms = performance.now() - t0;
      assert.ok(ms >= 1300 && ms < 3000, `gave up after ${ms.toFixed(0)} ms`);
      assert.equal(calls.at(-1)?.timeout_ms, undefined, 'the call carried no deadline: the engine applies its own');
    } finally {
      await w.shutdown(0);
    }
  });
});
