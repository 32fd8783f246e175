import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Worker, InvocationError } from 'svc-sdk';
import { decodeFrame, MAX_FRAME_DEPTH, MESSAGE_TYPES } from 'svc-sdk/protocol';
import { backoffDelay, jsonDepthOver, toErrorBody } from 'svc-sdk/internal';
import { buildPayload, typeValue } from '../../src/cli/payload.js';

describe('protocol decoding', () => {
  test('every message type of the iii 0.22 set is known', () => {
    for (const t of ['workerregistered', 'reattach', 'registerfunction', 'unregisterfunction', 'invokefunction', 'invocationresult',
      'registertriggertype', 'unregistertriggertype', 'registertrigger', 'unregistertrigger', 'triggerregistrationresult', 'ping', 'pong']) {
      assert.ok(MESSAGE_TYPES.includes(t as never), t);
    }
  });
  test('unknown extra fields are ignored and null optionals treated as absent', () => {
    const r = decodeFrame('{"type":"invokefunction","function_id":"a::b","invocation_id":null,"traceparent":null,"future":1}');
    assert.equal(r.ok, true);
  });
  test('errors name the field and what was wrong', () => {
    const r = decodeFrame('{"type":"invocationresult","invocation_id":"x","error":{"code":1}}');
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.error.code, 'invalid_frame');
      assert.match(r.error.message, /field "error" must be an object \{code: string, message: string\}/);
      assert.deepEqual(r.ref, { type: 'invocationresult', id: 'x' });
    }
  });
  test('type names of Object.prototype are unknown types, not messages', () => {
    for (const t of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf']) {
      const r = decodeFrame(JSON.stringify({ type: t }));
      assert.equal(r.ok, false, t);
      if (!r.ok) assert.equal(r.error.code, 'unknown_message_type', t);
    }
  });
  test('an action must be void or enqueue with a queue', () => {
    assert.equal(decodeFrame('{"type":"invokefunction","function_id":"a","action":{"type":"enqueue"}}').ok, false);
    assert.equal(decodeFrame('{"type":"invokefunction","function_id":"a","action":{"type":"enqueue","queue":"q"}}').ok, true);
  });
});

describe('nesting depth (frame_too_deep)', () => {
  /** The depth of a parsed value, counted by walking it: what jsonDepthOver must find in its text. */
  const depthOf = (v: unknown): number =>
    typeof v === 'object' && v !== null ? 1 + Math.max(0, ...(Array.isArray(v) ? v : Object.values(v)).map(depthOf)) : 0;
  const nested = (n: number): string => '['.repeat(n) + ']'.repeat(n);

  test('a frame MAX_FRAME_DEPTH deep is accepted, one level deeper is refused naming both depths, with its ref', () => {
    assert.equal(MAX_FRAME_DEPTH, 128);
    // The frame's object and `data` are two levels.
    const at = `{"type":"invokefunction","function_id":"a::b","invocation_id":"i1","data":${nested(MAX_FRAME_DEPTH - 1)}}`;
    assert.equal(decodeFrame(at).ok, true);
    const over = decodeFrame(`{"type":"invokefunction","function_id":"a::b","invocation_id":"i1","data":${nested(MAX_FRAME_DEPTH)}}`);
    assert.equal(over.ok, false);
    if (!over.ok) {
      assert.deepEqual(over.error, { code: 'frame_too_deep', message: 'Frame nests arrays and objects 129 deep; the limit is 128 (its own object counted)' });
      assert.deepEqual(over.ref, { type: 'invokefunction', id: 'i1' });
    }
    // A limit of one's own (the SDKs receive with twice the engine's).
    assert.equal(decodeFrame(`{"type":"ping","x":${nested(200)}}`, 256).ok, true);
    assert.equal(decodeFrame(`{"type":"ping","x":${nested(300)}}`, 256).ok, false);
  });

  test('brackets inside strings, escaped quotes and backslashes do not count', () => {
    const tricky = JSON.stringify({ type: 'ping', s: '['.repeat(500), t: '\\"[[[', u: '\\', v: '"{{{{' + '\\'.repeat(3) });
    assert.equal(decodeFrame(tricky).ok, true);
    assert.equal(jsonDepthOver(tricky, 0), 1);
  });

  test('jsonDepthOver finds the depth of any JSON text, strings of brackets and escapes included', () => {
    const str = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', 'é', '\n') });
    const value = fc.letrec<{ v: unknown }>((tie) => ({
      v: fc.oneof({ depthSize: 'small', maxDepth: 12 }, str, fc.integer(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(str, tie('v'), { maxKeys: 3 })),
    })).v;
    fc.assert(
      fc.property(value, (v) => {
        const text = JSON.stringify(v);
        const depth = depthOf(v);
        assert.equal(jsonDepthOver(text, 0), depth);
        assert.equal(jsonDepthOver(text, depth), 0);
      }),
      { numRuns: 2000 },
    );
  });

  test('every text frame decodes without throwing, however deep (V8 parses without recursion)', () => {
    const r = decodeFrame(`{"type":"ping","x":${nested(1_000_000)}}`);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error.message, /1000001 deep/);
  });
});

describe('sdk helpers', () => {
  test('backoff grows exponentially to its cap, with jitter inside the band', () => {
    const o = { initialDelayMs: 100, maxDelayMs: 1000, factor: 2, jitter: 0.3 };
    for (let i = 0; i < 50; i++) {
      const d0 = backoffDelay(0, o);
      assert.ok(d0 >= 70 && d0 <= 130, String(d0));
      const d9 = backoffDelay(9, o);
      assert.ok(d9 >= 700 && d9 <= 1300, String(d9));
    }
  });
  test('thrown values become wire errors', () => {
    assert.equal(toErrorBody(new Error('x')).code, 'invocation_failed');
    assert.equal(toErrorBody(Object.assign(new Error('y'), { code: 'value_too_large' })).code, 'value_too_large');
    assert.deepEqual(toErrorBody('plain'), { code: 'invocation_failed', message: 'plain' });
  });
});

describe('svc trigger payloads', () => {
  test('key=value values are typed as JSON when they parse, else strings', () => {
    assert.equal(typeValue('2'), 2);
    assert.equal(typeValue('true'), true);
    assert.equal(typeValue('null'), null);
    assert.deepEqual(typeValue('{"x":1}'), { x: 1 });
    assert.equal(typeValue('alice'), 'alice');
    assert.equal(typeValue('"quoted"'), 'quoted');
    assert.equal(typeValue(''), '');
  });
  test('--payload must be an object; pairs merge over it', () => {
    assert.deepEqual(buildPayload('{"a":1,"b":1}', ['b=2']), { ok: true, payload: { a: 1, b: 2 } });
    const bad = buildPayload('[1]', []);
    assert.equal(bad.ok, false);
    if (!bad.ok) assert.match(bad.message, /must be a JSON object.*got an array/);
    const notPair = buildPayload(undefined, ['oops']);
    assert.equal(notPair.ok, false);
    if (!notPair.ok) assert.match(notPair.message, /"oops" is not key=value/);
  });
});

describe('ChurnMap', () => {
  test('keeps its entries, their order and its size across the moves to a new Map', async () => {
    const { ChurnMap } = await import('svc-sdk/internal');
    const m = new ChurnMap<number, string>();
    const live = new Map<number, string>();
    for (let i = 0; i < 20_000; i++) {
      m.set(i, `v${i}`);
      live.set(i, `v${i}`);
      if (i >= 50) {
        assert.equal(m.delete(i - 50), true);
        live.delete(i - 50);
      }
    }
    assert.equal(m.size, 50);
    assert.deepEqual([...m], [...live]);
    assert.deepEqual([...m.values()], [...live.values()]);
    assert.equal(m.get(19_999), 'v19999');
    assert.equal(m.has(0), false);
    assert.equal(m.delete(0), false);
  });
});

describe('function ids the SDK refuses before sending', () => {
  test('lookalike, invisible and control characters: invalid_function_id naming the code point', () => {
    const w = new Worker('ws://127.0.0.1:1', { workerName: 'ids', echoLogs: false });
    for (const [id, why] of [
      ['state::\u200bget', /U\+200B \(a zero-width character\)/],
      ['state::get\u202e', /U\+202E \(a bidirectional control\)/],
      ['x\u007f', /U\+007F \(a control character\)/],
      ['x\u0085', /U\+0085 \(a control character\)/],
      ['', /is empty/],
      ['x'.repeat(257), /longer than 256/],
    ] as Array<[string, RegExp]>) {
      assert.throws(() => w.registerFunction(id, () => null), (e: unknown) => e instanceof InvocationError && e.code === 'invalid_function_id' && why.test(e.message), JSON.stringify(id));
    }
    assert.doesNotThrow(() => w.registerFunction('検索::日本語/🙂', () => null));
  });
});

describe('invocation ids of the calls a worker makes', () => {
  test('UUID-shaped, distinct, one random prefix per Caller (a counter after it)', async () => {
    // The Caller is not exported; the built SDK's module is loaded as bench/sdk-caller-cost.ts does.
    const { Caller } = (await import(new URL('../../../sdk/typescript/dist/caller.js', import.meta.url).href)) as {
      Caller: new (conn: unknown, host: unknown) => { call(req: { function_id: string }): Promise<unknown>; onResult(m: unknown): void };
    };
    const sent: string[] = [];
    const conn = { oversize: () => null, sendText: (t: string) => (sent.push(t), true), send: () => true };
    const host = { state: 'connected', defaultTimeoutMs: 30_000, invocationTimeoutMs: undefined, canCancel: false, closedBy: null, ready: async () => {} };
    const a = new Caller(conn, host);
    const b = new Caller(conn, host);
    const calls = [a.call({ function_id: 'x::y' }), a.call({ function_id: 'x::y' }), b.call({ function_id: 'x::y' })];
    const ids = sent.map((t) => (JSON.parse(t) as { invocation_id: string }).invocation_id);
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(new Set(ids).size, 3);
    assert.equal(ids[0]!.slice(0, 24), ids[1]!.slice(0, 24));
    assert.notEqual(ids[0]!.slice(0, 24), ids[2]!.slice(0, 24));
    // b's first id ends in the same counter as a's first: a answer under it is not a's.
    assert.equal(ids[2]!.slice(-12), ids[0]!.slice(-12));
    a.onResult({ type: 'invocationresult', invocation_id: ids[2], result: 'not a call of a' });
    ids.forEach((id, i) => (i < 2 ? a : b).onResult({ type: 'invocationresult', invocation_id: id, result: i }));
    assert.deepEqual(await Promise.all(calls), [0, 1, 2]);
  });
});
