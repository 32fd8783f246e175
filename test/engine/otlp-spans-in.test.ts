/**
 * decodeOtlpSpans takes an untrusted peer's frame: it never throws, skips spans without valid ids or
 * times, and bounds what it keeps (spans per frame, the name, a failed span's message). The whole
 * path from a published iii SDK: test/compat/iii-spans.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeOtlpSpans, MAX_SPANS_PER_FRAME } from '../../src/engine/otlp-spans-in.js';

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
