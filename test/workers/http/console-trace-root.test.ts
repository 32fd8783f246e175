/**
 * The console's calls start traces of their own (`POST /api/call` answers the trace_id), and the
 * call's span is the root of its trace: the console has no span of its own, and a parent span
 * nobody exports would leave trace UIs fed over OTLP without a root (src/engine/traces.ts,
 * namesNoParent). A page's periodic read (`background: true`) too, in a trace whose id begins with
 * the session's background_trace_prefix.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker, type Worker } from 'svc-sdk';
import { startConsoleServer, type ConsoleServer } from '../../../src/console-server/server.js';
import { startEngine } from '../../helpers/engine.js';
import { eventually } from '../../helpers/util.js';

interface Trace {
  spans: Array<{ function_id: string; parent_span_id: string | null }>;
}

describe('the console: a call it makes is the root of its trace', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let consoleServer: ConsoleServer;
  let app: Worker;
  let headers: Record<string, string>;
  let backgroundPrefix: string;
  before(async () => {
    eng = await startEngine();
    consoleServer = await startConsoleServer({ engineUrl: eng.url, port: 0, workerName: 'trace-console', log: () => {} });
    app = registerWorker(eng.url, { workerName: 'shop', echoLogs: false });
    app.registerFunction('shop::ping', () => 'pong');
    await eventually(() => assert.equal(consoleServer.worker.state, 'connected'), 10_000);
    await app.ready();
    const session = (await (await fetch(`${consoleServer.url}api/session`)).json()) as { csrf_token: string; background_trace_prefix: string };
    headers = { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token };
    backgroundPrefix = session.background_trace_prefix;
  });
  after(async () => {
    await app?.shutdown();
    await consoleServer?.close();
    await eng?.stop();
  });

  for (const background of [false, true]) {
    test(background ? 'a background read' : "a call the user made", async () => {
      const r = await fetch(`${consoleServer.url}api/call`, { method: 'POST', headers, body: JSON.stringify({ function_id: 'shop::ping', background }) });
      const answer = (await r.json()) as { ok: boolean; result: unknown; trace_id: string };
      assert.deepEqual([answer.ok, answer.result], [true, 'pong']);
      assert.match(answer.trace_id, /^[0-9a-f]{32}$/);
      assert.equal(answer.trace_id.startsWith(backgroundPrefix), background);
      const trace = (await app.trigger({ function_id: 'engine::traces::get', payload: { trace_id: answer.trace_id } })) as Trace;
      assert.deepEqual(trace.spans.map((s) => [s.function_id, s.parent_span_id]), [['shop::ping', null]]);
    });
  }
});
