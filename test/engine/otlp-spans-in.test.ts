/**
 * decodeOtlpSpans takes an untrusted peer's frame: it never throws, skips spans without valid ids or
 * times, and bounds what it keeps (spans per frame, the name, a failed span's message). The whole
 * path from a published iii SDK: test/compat/iii-spans.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { registerWorker } from 'svc-sdk';
import { decodeOtlpSpans, MAX_SPANS_PER_FRAME } from '../../src/engine/otlp-spans-in.js';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';

const T = '0af7651916cd43dd8448eb211c80319c';
const span = (over: Record<string, unknown> = {}) => ({
  traceId: T,
  spanId: '02cc20b3b0d3625d',
  parentSpanId: 'b7ad6b7169203331',
  name: 'execute math::add',
  startTimeUnixNano: '1795526542930000000',
  endTimeUnixNano: '1795526542933002073',
  status: { code: 1 },
  ...over,
});
const frame = (spans: unknown[], resource: unknown = { attributes: [{ key: 'service.name', value: { stringValue: 'iii-node' } }] }) =>
  JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ spans }] }] });

test('a span of an iii SDK becomes an engine span', () => {
  const [s] = decodeOtlpSpans(frame([span()]), 1000);
  assert.deepEqual(s, {
    trace_id: T,
    span_id: '02cc20b3b0d3625d',
    parent_span_id: 'b7ad6b7169203331',
    function_id: 'execute math::add',
    invocation_id: '',
    caller_worker_id: '',
    caller_worker_name: 'iii-node',
    callee_worker_id: '',
    callee_worker_name: 'iii-node',
    start_ms: 1795526542930,
    duration_ms: s!.duration_ms,
    status: 'ok',
    error: null,
  });
  assert.ok(Math.abs(s!.duration_ms - 3.002073) < 1e-3, String(s!.duration_ms)); // a double of epoch ms holds about 0.2 µs
  // On a worker's own connection the span is that worker's.
  const [w] = decodeOtlpSpans(frame([span({ parentSpanId: '' })]), 1000, { id: 'w-1', name: 'orders' });
  assert.deepEqual([w!.callee_worker_id, w!.callee_worker_name, w!.parent_span_id], ['w-1', 'orders', null]);
});

test('malformed input yields no spans and never throws', () => {
  for (const text of ['', 'not json', 'null', '[]', '{"resourceSpans":7}', '{"resourceSpans":[null,{"scopeSpans":[{"spans":[1,"x",null]}]}]}']) {
    assert.deepEqual(decodeOtlpSpans(text, 1000), [], text);
  }
  const bad = [
    span({ traceId: 'zz' }),
    span({ traceId: '0'.repeat(32) }),
    span({ spanId: 12 }),
    span({ spanId: '0'.repeat(16) }),
    span({ startTimeUnixNano: 'soon' }),
    span({ endTimeUnixNano: '1e400' }),
  ];
  assert.deepEqual(decodeOtlpSpans(frame(bad), 1000), []);
  // A bad parent id is no parent; a bad resource is no name.
  const [s] = decodeOtlpSpans(frame([span({ parentSpanId: 'nope', name: 7 })], 'x'), 1000);
  assert.deepEqual([s!.parent_span_id, s!.function_id, s!.callee_worker_name], [null, '(unnamed span)', 'iii worker']);
});

test('bounded: spans per frame, the name, and a failed span message', () => {
  const many = Array.from({ length: MAX_SPANS_PER_FRAME + 10 }, () => span());
  assert.equal(decodeOtlpSpans(frame(many), 1000).length, MAX_SPANS_PER_FRAME);
  const [s] = decodeOtlpSpans(frame([span({ name: 'n'.repeat(5000), status: { code: 2, message: 'm'.repeat(5000) } })]), 100);
  assert.equal(s!.function_id.length, 256);
  assert.equal(s!.status, 'error');
  assert.equal(s!.error!.code, 'span_error');
  assert.match(s!.error!.message, /^m{100}… \[svc_truncated: error message of 5000 characters/);
});

test('spans a peer sends cannot break engine::traces::get: a repeated id, a self-parent, a cycle, a chain deeper than the stack', async () => {
  const eng = await startEngine();
  const ws = new WebSocket(`${eng.url}/otel`);
  const reader = registerWorker(eng.url, { workerName: 'trace-reader' });
  try {
    await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    await reader.ready();
    const id = (n: number) => n.toString(16).padStart(16, '0');
    const send = (spans: unknown[]) => ws.send(Buffer.concat([Buffer.from('OTLP'), Buffer.from(frame(spans))]));
    const get = async (traceId: string) => (await reader.trigger({ function_id: 'engine::traces::get', payload: { trace_id: traceId } })) as { spans: Array<{ span_id: string; depth: number }> };
    // One span and a second with its id naming it as parent; and a two-span cycle beside them.
    const A = 'aaaaaaaaaaaaaaaa';
    send([span({ spanId: A, parentSpanId: '' }), span({ spanId: A, parentSpanId: A }), span({ spanId: id(1), parentSpanId: id(2), startTimeUnixNano: '1795526542920000000' }), span({ spanId: id(2), parentSpanId: id(1) })]);
    await eventually(async () => assert.equal((await get(T)).spans.length, 4));
    const t = await get(T);
    assert.deepEqual(t.spans.map((s) => [s.span_id, s.depth]), [[A, 0], [A, 1], [id(1), 0], [id(2), 1]]);
    // A chain of 20,000 spans (the default ring), each the parent of the next, in frames of 2,000.
    const deep = 'd'.repeat(32);
    const chain = Array.from({ length: 20_000 }, (_, k) => span({ traceId: deep, spanId: id(k + 1), parentSpanId: k === 0 ? '' : id(k) }));
    for (let k = 0; k < chain.length; k += 2000) send(chain.slice(k, k + 2000));
    await eventually(async () => assert.equal((await get(deep)).spans.length, 20_000));
    const d = await get(deep);
    assert.equal(d.spans[19_999]!.depth, 19_999);
  } finally {
    ws.close();
    await reader.shutdown();
    await eng.stop();
  }
});
