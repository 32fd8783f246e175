/**
 * What a client sees when a bound function fails (docs/http.md "Errors"): by default a 500 with the
 * function's code, a generic message and the call's trace_id, never the function's own message,
 * which the logs hold under that trace id; with `expose_errors: true` the message itself. A
 * function's deliberate 4xx envelope is sent as it wrote it either way.
 *
 * Two svc-http replicas on one engine hold the same routes (the `http` trigger type binds to all):
 * replica 0 with the default, replica 1 with expose_errors.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { eventually } from '../../helpers/util.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../../src/workers/http/worker.js';

const FAST = { reconnect: { initialDelayMs: 50, maxDelayMs: 200 }, echoLogs: false };
const SECRET = 'password=hunter2 at /srv/app/db.ts';

interface ErrorBody {
  error: { code: string; message: string; trace_id?: string };
}
interface Log {
  message: string;
  worker_name?: string;
  trace_id?: string | null;
  data?: Record<string, unknown>;
}

let engine: Awaited<ReturnType<typeof startEngine>>;
let app: Worker;
let quiet: HttpWorkerHandle;
let exposing: HttpWorkerHandle;

function startReplica(replica: number, exposeErrors: boolean): Promise<HttpWorkerHandle> {
  const runSecret = engine.engine.run.issue({ kind: 'instance', worker: 'svc-http', replica });
  return startHttpWorker({ url: engine.url, port: 0, timeoutMs: 2000, runSecret, exposeErrors });
}

async function get(h: HttpWorkerHandle, path: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`http://127.0.0.1:${h.port}${path}`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const logsWith = async (text: string): Promise<Log[]> => ((await app.trigger({ function_id: 'engine::logs::list', payload: { text } })) as { logs: Log[] }).logs;

describe('svc-http: the body of a failed function', () => {
  before(async () => {
    engine = await startEngine();
    quiet = await startReplica(0, false);
    exposing = await startReplica(1, true);
    app = registerWorker(engine.url, { workerName: 'shop', ...FAST });
    app.registerFunction('shop::coded', () => {
      throw Object.assign(new Error(`db refused: ${SECRET}`), { code: 'db_unavailable' });
    });
    app.registerFunction('shop::crash', () => {
      throw new Error(`crashed: ${SECRET}`);
    });
    app.registerFunction('shop::refuse', () => ({ status_code: 422, body: { error: { code: 'invalid_quantity', message: 'quantity must be at least 1' } } }));
    // Codes the engine also uses, thrown by the function (a nested call's failure passed on, say).
    app.registerFunction('shop::relayed', (data: { query_params?: { code?: string } }) => {
      throw Object.assign(new Error(`Function billing::charge failed: ${SECRET}`), { code: data.query_params?.code ?? 'cancelled' });
    });
    for (const [function_id, api_path] of [
      ['shop::coded', '/coded'],
      ['shop::crash', '/crash'],
      ['shop::refuse', '/refuse'],
      ['shop::relayed', '/relayed'],
    ] as const) {
      await app.registerTrigger({ type: 'http', function_id, config: { api_path, http_method: 'GET' } });
    }
    await eventually(() => assert.ok(quiet.routes.size === 4 && exposing.routes.size === 4), 10_000);
  });
  after(async () => {
    await app?.shutdown();
    await exposing?.shutdown();
    await quiet?.shutdown();
    await engine?.stop();
  });

  test('by default a 500 carries the code and the trace_id, not the message', async () => {
    for (const [path, code] of [
      ['/coded', 'db_unavailable'],
      ['/crash', 'invocation_failed'],
    ] as const) {
      const r = await get(quiet, path);
      assert.equal(r.status, 500);
      assert.match(r.type ?? '', /^application\/json/);
      assert.doesNotMatch(r.text, /hunter2|\/srv\/app/, `the function's message reached the client: ${r.text}`);
      const { error } = JSON.parse(r.text) as ErrorBody;
      assert.equal(error.code, code);
      assert.match(error.message, /^Function shop::\w+ failed; its error message is not sent to HTTP clients: find it in the logs \(svc logs, the console\) by this response's trace_id$/);
      assert.match(error.trace_id ?? '', /^[0-9a-f]{32}$/);
    }
  });

  test("the trace_id finds the function's message in the logs: the engine's line and svc-http's request line", async () => {
    const { error } = JSON.parse((await get(quiet, '/coded')).text) as ErrorBody;
    let failure: Log | undefined;
    let request: Log | undefined;
    await eventually(async () => {
      failure = (await logsWith('hunter2')).find((l) => l.trace_id === error.trace_id);
      request = (await logsWith('GET /coded 500')).find((l) => l.trace_id === error.trace_id);
      assert.ok(failure && request);
    });
    assert.equal(failure?.worker_name, 'shop');
    assert.match(failure?.message ?? '', /^shop::coded failed: db_unavailable: db refused: password=hunter2/);
    assert.equal(request?.worker_name, 'svc-http');
    assert.equal(request?.data?.error_code, 'db_unavailable');
    assert.equal(request?.data?.error_message, `db refused: ${SECRET}`);
    // The trace is the call's: its span is the root (svc-http names no span of its own), so trace
    // UIs fed over OTLP have a root, not a child of a parent nobody exports.
    const trace = (await app.trigger({ function_id: 'engine::traces::get', payload: { trace_id: error.trace_id } })) as { spans: Array<{ function_id: string; parent_span_id: string | null }> };
    assert.deepEqual(trace.spans.map((s) => [s.function_id, s.parent_span_id]), [['shop::coded', null]]);
  });

  test("a function's error with one of the engine's codes keeps its status, not its message", async () => {
    for (const [code, status] of [
      ['cancelled', 503],
      // Naming another function (billing::charge): a nested failure passed on, the function's own.
      ['function_not_found', 500],
      ['invocation_stopped', 500],
      ['binding_not_found', 503],
      ['payload_too_large', 413],
      ['result_too_large', 502],
    ] as const) {
      const r = await get(quiet, `/relayed?code=${code}`);
      assert.equal(r.status, status, code);
      assert.doesNotMatch(r.text, /hunter2|\/srv\/app|billing/, `the function's message reached the client: ${r.text}`);
      const { error } = JSON.parse(r.text) as ErrorBody;
      assert.match(error.trace_id ?? '', /^[0-9a-f]{32}$/, code);
      const told = await get(exposing, `/relayed?code=${code}`);
      assert.equal(told.status, status, code);
      assert.match(told.text, /hunter2/, `expose_errors sends it: ${told.text}`);
    }
    // The request line keeps what the response withheld.
    const { error } = JSON.parse((await get(quiet, '/relayed?code=cancelled')).text) as ErrorBody;
    await eventually(async () => {
      const line = (await logsWith('GET /relayed 503')).find((l) => l.trace_id === error.trace_id);
      assert.equal(line?.data?.error_message, `Function billing::charge failed: ${SECRET}`);
    });
  });

  test("a request's W3C traceparent header: its call joins that trace, under the client's span", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await get(quiet, '/coded', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    assert.equal(r.status, 500);
    assert.equal((JSON.parse(r.text) as ErrorBody).error.trace_id, traceId);
    const trace = (await app.trigger({ function_id: 'engine::traces::get', payload: { trace_id: traceId } })) as { spans: Array<{ function_id: string; parent_span_id: string | null }> };
    assert.deepEqual(trace.spans.map((s) => [s.function_id, s.parent_span_id]), [['shop::coded', '00f067aa0ba902b7']]);
    // Not a valid one (all-zero trace id, another version, garbage): a trace of svc-http's own.
    for (const bad of [`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `01-${traceId}-00f067aa0ba902b7-01`, 'hello']) {
      const own = (JSON.parse((await get(quiet, '/coded', { traceparent: bad })).text) as ErrorBody).error.trace_id;
      assert.match(own ?? '', /^[0-9a-f]{32}$/, bad);
      assert.notEqual(own, traceId, bad);
      assert.notEqual(own, '0'.repeat(32), bad);
    }
  });

  test('with expose_errors the message is sent, with the trace_id', async () => {
    let r = await get(exposing, '/coded');
    assert.equal(r.status, 500);
    let { error } = JSON.parse(r.text) as ErrorBody;
    assert.equal(error.code, 'db_unavailable');
    assert.equal(error.message, `db refused: ${SECRET}`);
    assert.match(error.trace_id ?? '', /^[0-9a-f]{32}$/);
    r = await get(exposing, '/crash');
    ({ error } = JSON.parse(r.text) as ErrorBody);
    assert.deepEqual([r.status, error.code, error.message], [500, 'invocation_failed', `crashed: ${SECRET}`]);
  });

  test("a function's own 4xx envelope is sent as written, by both", async () => {
    for (const h of [quiet, exposing]) {
      const r = await get(h, '/refuse');
      assert.equal(r.status, 422);
      assert.deepEqual(JSON.parse(r.text), { error: { code: 'invalid_quantity', message: 'quantity must be at least 1' } });
    }
  });

  test("svc-http's own errors keep their message and name no trace when no call was made", async () => {
    const miss = JSON.parse((await get(quiet, '/nope')).text) as ErrorBody;
    assert.deepEqual(miss, { error: { code: 'not_found', message: 'No route for GET /nope' } });
  });
});
