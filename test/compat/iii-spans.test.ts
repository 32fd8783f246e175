/**
 * The spans of the published npm iii SDK (pinned 0.22.1), telemetry on as by default: it records a
 * span around each call it serves and sends it as OTLP over /otel; the engine keeps it in its
 * trace ring, so a nested call across an iii worker and an svc-sdk worker is one tree in
 * `engine::traces::get` (what the console reads), with the iii span between the
 * engine's span of the call it served and the calls it made. The PyPI releases:
 * sdk/python/tests/test_iii_matrix.py.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let iii: IIIClient;
let svc: Worker;

before(async () => {
  eng = await startEngine();
  svc = registerWorker(eng.url, { workerName: 'svc-spans', echoLogs: false });
  svc.registerFunction('svc::double', async (d: { n: number }) => ({ n: d.n * 2 }));
  await svc.ready();
  iii = registerIiiWorker(eng.url, { workerName: 'iii-spans' });
  iii.registerFunction('iii::nested', async (input: { n: number }) => iii.trigger({ function_id: 'svc::double', payload: input }));
});
after(async () => {
  await Promise.allSettled([iii?.shutdown(), svc?.shutdown()]);
  await eng?.stop();
});

type Span = { span_id: string; parent_span_id: string | null; function_id: string; depth: number; callee_worker_name: string; status: string };

test("an iii worker's own span joins the engine's spans in one tree: svc-sdk → iii → svc-sdk", { timeout: 30_000 }, async () => {
  await eventually(async () => assert.deepEqual(await svc.trigger({ function_id: 'iii::nested', payload: { n: 4 } }), { n: 8 }), 10_000);
  const traces = (await svc.trigger({ function_id: 'engine::traces::list', payload: { function_id: 'iii::nested' } })) as { traces: Array<{ trace_id: string }> };
  const traceId = traces.traces[0]!.trace_id;
  let spans: Span[] = [];
  // The SDK exports its spans in batches, shortly after the call ends.
  await eventually(async () => {
    spans = ((await svc.trigger({ function_id: 'engine::traces::get', payload: { trace_id: traceId } })) as { spans: Span[] }).spans;
    assert.equal(spans.length, 3, JSON.stringify(spans));
  }, 15_000);
  assert.deepEqual(
    spans.map((s) => [s.function_id, s.depth, s.status]),
    [
      ['iii::nested', 0, 'ok'],
      ['execute iii::nested', 1, 'ok'],
      ['svc::double', 2, 'ok'],
    ],
  );
  assert.equal(spans[0]!.parent_span_id, null);
  assert.equal(spans[1]!.parent_span_id, spans[0]!.span_id, "the iii span is the child of the engine's span of the call it served");
  assert.equal(spans[2]!.parent_span_id, spans[1]!.span_id, 'the nested call is the child of the iii span');
  assert.equal(spans[0]!.callee_worker_name, 'iii-spans');
  assert.equal(spans[2]!.callee_worker_name, 'svc-spans');
});
