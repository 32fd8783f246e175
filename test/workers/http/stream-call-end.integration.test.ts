/**
 * Issue 22: on a streaming route, a call that fails or times out after its handler began the
 * response on the `response` channel (control frames, perhaps body) and left its writer open ends
 * the HTTP response at the call's end, not when (if ever) the channel ends: the client gets the
 * call's error before the first body byte, and a cut connection mid-body; the channels are freed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerWorker, type ChannelRef, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { eventually } from '../../helpers/util.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';

type Req = { response: ChannelRef };

const TIMEOUT_MS = 1_000;
/** Far longer than any answer here should take; a response still open then is the bug. */
const HANG_MS = 8_000;

let engine: Awaited<ReturnType<typeof startEngine>>;
let http: HttpWorkerHandle;
let app: Worker;
let base: string;

/** Opens the response channel, sends set_status/set_headers (and a first chunk), and never ends it. */
async function beginAndHold(req: Req, firstChunk?: string): Promise<void> {
  const out = app.openWriter(req.response);
  out.on('error', () => {}); // svc-http closes the channel when the call ends: this writer then fails
  await out.sendText(JSON.stringify({ type: 'set_status', status_code: 201 }));
  await out.sendText(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/event-stream' } }));
  if (firstChunk) out.write(firstChunk);
  // Let the frames reach svc-http before the call's answer does (they travel on another socket).
  await sleep(300);
}

before(async () => {
  engine = await startEngine();
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica: 0 });
  http = await startHttpWorker({ url: engine.url, port: 0, timeoutMs: TIMEOUT_MS, runSecret, requestLog: false });
  base = `http://127.0.0.1:${http.port}`;
  app = registerWorker(engine.url, { workerName: 'app', echoLogs: false });
  app.registerFunction('fails_after_head', async (req: Req) => {
    await beginAndHold(req);
    throw Object.assign(new Error('the upstream model went away'), { code: 'upstream_failed' });
  });
  app.registerFunction('fails_mid_body', async (req: Req) => {
    await beginAndHold(req, 'data: first\n\n');
    throw Object.assign(new Error('the upstream model went away'), { code: 'upstream_failed' });
  });
  app.registerFunction('times_out_after_head', async (req: Req) => {
    await beginAndHold(req);
    await sleep(HANG_MS);
    return null;
  });
  for (const [function_id, api_path] of [
    ['fails_after_head', '/fails-after-head'],
    ['fails_mid_body', '/fails-mid-body'],
    ['times_out_after_head', '/times-out-after-head'],
  ] as const) {
    await app.registerTrigger({ type: 'http', function_id, config: { api_path, http_method: 'GET', stream: true } });
  }
  await eventually(() => assert.equal(http.routes.size, 3), 10_000);
});

after(async () => {
  await app?.shutdown();
  await http?.shutdown();
  await engine?.stop();
});

test('a call failing after set_status/set_headers, its writer open, is answered with its error', async () => {
  const started = performance.now();
  const res = await fetch(`${base}/fails-after-head`, { signal: AbortSignal.timeout(HANG_MS) });
  assert.equal(res.status, 500);
  const body = (await res.json()) as { error: { code: string; message: string; trace_id?: string } };
  assert.equal(body.error.code, 'upstream_failed');
  // The function's own message stays in the logs (svc-http's expose_errors is off); the trace names it.
  assert.match(body.error.message, /^Function fails_after_head failed; its error message is not sent/);
  assert.match(body.error.trace_id ?? '', /^[0-9a-f]{32}$/);
  assert.ok(performance.now() - started < HANG_MS / 2, `answered after ${(performance.now() - started).toFixed(0)} ms`);
  await eventually(() => assert.equal(engine.engine.channels.size, 0), 5000);
});

test('a call timing out after set_status/set_headers, its writer open, is a 504 at timeout_ms', async () => {
  const started = performance.now();
  const res = await fetch(`${base}/times-out-after-head`, { signal: AbortSignal.timeout(HANG_MS) });
  assert.equal(res.status, 504);
  assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'timeout');
  const took = performance.now() - started;
  assert.ok(took >= TIMEOUT_MS - 50 && took < HANG_MS / 2, `answered after ${took.toFixed(0)} ms`);
  await eventually(() => assert.equal(engine.engine.channels.size, 0), 5000);
});

test('a call failing mid-body, its writer open, cuts the connection after the bytes sent', async () => {
  const started = performance.now();
  const res = await fetch(`${base}/fails-mid-body`, { signal: AbortSignal.timeout(HANG_MS) });
  assert.equal(res.status, 201);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  let text = '';
  const reading = (async () => {
    for await (const chunk of res.body!) text += Buffer.from(chunk).toString();
  })();
  const failure = await reading.then(
    () => null,
    (e: Error) => e,
  );
  assert.ok(failure, 'the body ended normally; it should have been cut');
  assert.notEqual(failure.name, 'TimeoutError', 'the response stayed open until the client gave up');
  assert.equal(text, 'data: first\n\n');
  assert.ok(performance.now() - started < HANG_MS / 2, `cut after ${(performance.now() - started).toFixed(0)} ms`);
  await eventually(() => assert.equal(engine.engine.channels.size, 0), 5000);
});
