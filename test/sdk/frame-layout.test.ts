/**
 * The frame layout svc-sdk writes calls and results in (svc-sdk/protocol's INVOKE_KEY_ORDER and
 * RESULT_KEY_ORDER) is the one the engine's fast path recognises (src/engine/call-frames.ts): a
 * large payload is then passed on as text instead of being serialised again. The SDK writes the
 * two frames as text templates; each must be exactly what JSON.stringify writes for the object
 * with the same keys in the same order (the reference builders below), whatever the values.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { INVOKE_KEY_ORDER, RESULT_KEY_ORDER, type ErrorBody, type InvocationAction } from 'svc-sdk/protocol';
import { invokeFrameText, jsonString, resultFrameText } from 'svc-sdk/internal';
import { callDataTail, forwardedResult } from '../../src/engine/hot/call-frames.js';

const big = { blob: 'x'.repeat(1000), n: [1, 2, 3] };

/** The call frame as an object, keys added in layout order, only those set: the reference. */
function invokeObject(fid: string, id?: string, timeoutMs?: number, bindingId?: string, data?: unknown, action?: InvocationAction, metadata?: unknown, traceparent?: string, baggage?: string, namespace?: string): Record<string, unknown> {
  const msg: Record<string, unknown> = { type: 'invokefunction', function_id: fid };
  if (id !== undefined) msg.invocation_id = id;
  if (timeoutMs !== undefined) msg.timeout_ms = timeoutMs;
  if (bindingId !== undefined) msg.binding_id = bindingId;
  msg.data = data;
  if (action !== undefined) msg.action = action;
  if (metadata !== undefined) msg.metadata = metadata;
  if (traceparent) msg.traceparent = traceparent;
  if (baggage) msg.baggage = baggage;
  if (namespace !== undefined && namespace !== 'default') msg.namespace = namespace;
  return msg;
}

function resultObject(id: string, fid: string, result: unknown, error: ErrorBody | undefined): Record<string, unknown> {
  return error ? { type: 'invocationresult', invocation_id: id, function_id: fid, error } : { type: 'invocationresult', invocation_id: id, function_id: fid, result: result === undefined ? null : result };
}

/** Values JSON.stringify treats each its own way. */
const values: unknown[] = [
  big,
  { a: 1, b: 'two' },
  [1, undefined, () => 1],
  null,
  0,
  -0,
  NaN,
  'text',
  'quote " backslash \\ newline \n',
  'é ☃ 😀',
  'lone \ud800 surrogate',
  { toJSON: () => ({ made: 'by toJSON' }) },
  // toJSON is given the member's key, as JSON.stringify of the whole object gives it.
  { toJSON: (key: string) => `under ${key}` },
  { toJSON: () => undefined },
  { skipped: undefined, fn: () => 1, sym: Symbol('s') },
  () => 'a function',
  Symbol('alone'),
  new Date(0),
];
const ids = ['e1f2a3b4-5678-4abc-8def-000000001234', 'math::add', 'naïve ☃', 'quote"id', 'tab\tid', '\udc00'];

describe('frame layout', () => {
  test('a call frame begins with INVOKE_KEY_ORDER (the keys that are set), and the engine passes its data on', () => {
    const cases: Array<[string | undefined, number | undefined, string | undefined]> = [
      ['inv-1', undefined, undefined],
      ['inv-2', 2500, undefined],
      ['inv-3', 2500, 'binding-1'],
      ['inv-4', undefined, 'binding-2'],
    ];
    for (const [id, timeoutMs, bindingId] of cases) {
      const text = invokeFrameText('math::add', id, timeoutMs, bindingId, big, undefined, { m: 1 }, '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01', undefined);
      const keys = Object.keys(JSON.parse(text) as object);
      const expected = INVOKE_KEY_ORDER.filter((k) => keys.includes(k));
      assert.deepEqual(keys.slice(0, expected.length), expected);
      const tail = callDataTail(text, JSON.stringify('math::add'), id!, timeoutMs, bindingId);
      assert.ok(tail !== null, `the engine did not recognise ${text.slice(0, 120)}`);
      assert.deepEqual(JSON.parse(`{"data":${tail}}`).data, big);
    }
  });

  test('a result frame begins with RESULT_KEY_ORDER, and the engine passes it on', () => {
    const text = resultFrameText('engine-id-1', 'math::add', big, undefined);
    const msg = JSON.parse(text) as { type: 'invocationresult'; invocation_id: string; function_id: string; result: unknown };
    assert.deepEqual(Object.keys(msg), [...RESULT_KEY_ORDER]);
    const forwarded = forwardedResult(text, msg, 'engine-id-1', 'math::add', JSON.stringify('math::add'), '"caller-id"');
    assert.ok(forwarded !== null);
    assert.deepEqual(JSON.parse(forwarded), { type: 'invocationresult', function_id: 'math::add', result: big, invocation_id: 'caller-id' });
    assert.deepEqual(Object.keys(JSON.parse(resultFrameText('i', 'f', undefined, { code: 'x', message: 'y' })) as object), ['type', 'invocation_id', 'function_id', 'error']);
    assert.equal((JSON.parse(resultFrameText('i', 'f', undefined, undefined)) as { result: unknown }).result, null);
  });

  test('the call frame text is JSON.stringify of the object, for every kind of value and id', () => {
    const traceparent = '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01';
    for (const fid of ids) {
      for (const data of values) {
        for (const [id, timeoutMs, bindingId, action, metadata, tp, baggage, ns] of [
          [undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined],
          [fid, 2500, fid, { type: 'enqueue', queue: fid }, data, traceparent, 'k=v', fid],
          ['c0ffee', 1.5, 'b', { type: 'void' }, { m: data }, '', '', 'default'],
        ] as Array<[string?, number?, string?, InvocationAction?, unknown?, string?, string?, string?]>) {
          const want = JSON.stringify(invokeObject(fid, id, timeoutMs, bindingId, data, action, metadata, tp, baggage, ns));
          assert.equal(invokeFrameText(fid, id, timeoutMs, bindingId, data, action, metadata, tp, baggage, ns), want);
        }
      }
    }
  });

  test('the result frame text is JSON.stringify of the object, for every kind of value, id and error', () => {
    for (const id of ids) {
      for (const result of [...values, undefined]) assert.equal(resultFrameText(id, 'f::g', result, undefined), JSON.stringify(resultObject(id, 'f::g', result, undefined)));
      const error = { code: 'boom', message: `failed on ${id}`, stacktrace: 'at x\nat y' };
      assert.equal(resultFrameText(id, id, undefined, error), JSON.stringify(resultObject(id, id, undefined, error)));
    }
  });

  test('what JSON.stringify throws on, the builders throw on too', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const bad of [cycle, 10n]) {
      assert.throws(() => JSON.stringify(bad));
      assert.throws(() => invokeFrameText('f', 'i', undefined, undefined, bad, undefined, undefined, undefined, undefined));
      assert.throws(() => resultFrameText('i', 'f', bad, undefined));
    }
  });

  test('jsonString is JSON.stringify for a string', () => {
    for (const s of [...ids, '', 'a\u2028b', '\u007f', '\ud83d\ude00']) assert.equal(jsonString(s), JSON.stringify(s));
  });
});
