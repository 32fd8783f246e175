/**
 * The frame layout svc-sdk writes calls and results in (svc-sdk/protocol's INVOKE_KEY_ORDER and
 * RESULT_KEY_ORDER) is the one the engine's fast path recognises (src/engine/call-frames.ts): a
 * large payload is then passed on as text instead of being serialised again.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { INVOKE_KEY_ORDER, RESULT_KEY_ORDER } from 'svc-sdk/protocol';
import { invokeFrame, resultFrame } from 'svc-sdk/internal';
import { callDataTail, forwardedResult } from '../../src/engine/hot/call-frames.js';

const big = { blob: 'x'.repeat(1000), n: [1, 2, 3] };

describe('frame layout', () => {
  test('a call frame begins with INVOKE_KEY_ORDER (the keys that are set), and the engine passes its data on', () => {
    const cases: Array<[string | undefined, number | undefined, string | undefined]> = [
      ['inv-1', undefined, undefined],
      ['inv-2', 2500, undefined],
      ['inv-3', 2500, 'binding-1'],
      ['inv-4', undefined, 'binding-2'],
    ];
    for (const [id, timeoutMs, bindingId] of cases) {
      const msg = invokeFrame('math::add', id, timeoutMs, bindingId, big, undefined, { m: 1 }, '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01', undefined);
      const keys = Object.keys(msg);
      const expected = INVOKE_KEY_ORDER.filter((k) => k in msg);
      assert.deepEqual(keys.slice(0, expected.length), expected);
      const text = JSON.stringify(msg);
      const tail = callDataTail(text, JSON.stringify('math::add'), id!, timeoutMs, bindingId);
      assert.ok(tail !== null, `the engine did not recognise ${text.slice(0, 120)}`);
      assert.deepEqual(JSON.parse(`{"data":${tail}}`).data, big);
    }
  });

  test('a result frame begins with RESULT_KEY_ORDER, and the engine passes it on', () => {
    const msg = resultFrame('engine-id-1', 'math::add', big, undefined);
    assert.deepEqual(Object.keys(msg), [...RESULT_KEY_ORDER]);
    const forwarded = forwardedResult(JSON.stringify(msg), msg, 'engine-id-1', 'math::add', JSON.stringify('math::add'), '"caller-id"');
    assert.ok(forwarded !== null);
    assert.deepEqual(JSON.parse(forwarded), { type: 'invocationresult', function_id: 'math::add', result: big, invocation_id: 'caller-id' });
    assert.deepEqual(Object.keys(resultFrame('i', 'f', undefined, { code: 'x', message: 'y' })), ['type', 'invocation_id', 'function_id', 'error']);
    assert.equal(resultFrame('i', 'f', undefined, undefined).result, null);
  });
});
