/**
 * The hot path of a routed call: the call/result validator (asCallFrame) against the general one,
 * and payloads passed on as text (src/engine/hot/call-frames.ts), which must reach the other side
 * exactly as they would have re-serialised, with the engine's own keys winning.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker, type Worker } from 'svc-sdk';
import { asCallFrame, validateMessage, type InvocationResultMsg } from 'svc-sdk/protocol';
import { jsonString } from 'svc-sdk/internal';
import { callDataTail, forwardedResult, PASS_ON_MIN_CHARS } from '../../src/engine/hot/call-frames.js';
import { hex12 } from '../../src/engine/hot/hex12.js';
import { counterOf, IdGenerator } from '../../src/engine/ids.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';

const BIG = 'x'.repeat(PASS_ON_MIN_CHARS);

describe('asCallFrame accepts exactly what validateMessage accepts for calls and results', () => {
  const bases: Record<string, unknown>[] = [
    { type: 'invokefunction', function_id: 'a::b' },
    { type: 'invokefunction', function_id: 'a::b', invocation_id: 'i', data: { x: 1 }, timeout_ms: 5, traceparent: 't', baggage: 'b', metadata: [1], action: { type: 'void' } },
    { type: 'invocationresult', invocation_id: 'i' },
    { type: 'invocationresult', invocation_id: 'i', function_id: 'a::b', result: 1, error: { code: 'c', message: 'm' }, traceparent: 't', baggage: 'b' },
  ];
  const values: unknown[] = [undefined, null, 'text', 0, 1.5, Infinity, NaN, true, {}, [], { type: 'void' }, { type: 'enqueue' }, { type: 'enqueue', queue: 'q' }, { code: 'c' }, { code: 'c', message: 'm' }];
  const fields = ['function_id', 'invocation_id', 'timeout_ms', 'binding_id', 'traceparent', 'baggage', 'action', 'error', 'result', 'data', 'metadata'];
  test('every field of both types set to every kind of value', () => {
    let checked = 0;
    for (const base of bases) {
      for (const field of fields) {
        for (const v of values) {
          const frame = { ...base, [field]: v };
          if (v === undefined) delete frame[field];
          const general = validateMessage(frame).ok;
          assert.equal(asCallFrame(frame) !== null, general, `${JSON.stringify(frame)}: general says ${general}`);
          checked++;
        }
      }
    }
    assert.ok(checked > 500);
  });
  test('other types and non-objects are left to validateMessage', () => {
    for (const v of [null, 1, 'x', [], { type: 'ping' }, { type: 'toString' }, { type: 'registerfunction', id: 'a' }]) assert.equal(asCallFrame(v), null);
  });
});

describe('ids rendered on every call', () => {
  test('jsonString is JSON.stringify for every kind of character', () => {
    const samples = ['', '5a4e3c2b-1d0f-4e9a-8b7c-0123456789ab', 'a"b', 'a\\b', 'tab\there', 'nl\n', '\u0000', '\u001f', '\u007f', 'é ü 日本', '😀', '\ud800', 'x\udc00y', '\u2028'];
    for (let c = 0; c < 0x10000; c += 97) samples.push(String.fromCharCode(c), 'id-' + String.fromCharCode(c) + '-end');
    for (const s of samples) assert.equal(jsonString(s), JSON.stringify(s), `for ${JSON.stringify(s)}`);
  });
  test('hex12 renders 12 hex digits across its table and its 4096-number blocks', () => {
    for (const n of [0, 1, 4095, 4096, 4097, 8191, 8192, 123_456_789, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 4095, 2 ** 48 - 1]) {
      assert.equal(hex12(n), n.toString(16).padStart(12, '0'), `for ${n}`);
    }
    // Out of order, as ids of several engines' traces are rendered: the cached block must not leak.
    for (const n of [5 * 4096 + 7, 3, 5 * 4096 + 8, 2 ** 40 + 1, 9]) assert.equal(hex12(n), n.toString(16).padStart(12, '0'));
  });
  test('an invocation id and a root traceparent are made from one number', () => {
    const ids = new IdGenerator();
    const n = ids.next();
    const id = ids.invocationId(n);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(counterOf(id), n);
    assert.equal(ids.rootTraceparent(n, hex12(n)), `00-${ids.traceId(n)}-${ids.spanId(n)}-01`);
  });
});

describe('payloads passed on as text', () => {
  const fid = '"a::b"';
  const cid = '"c-1"';
  const callerId = 'c-1';
  const call = (data: string, tail = ''): string => `{"type":"invokefunction","function_id":"a::b","invocation_id":"c-1","timeout_ms":30000,"data":${data}${tail}}`;
  test("a call in the SDK's layout gives its data and later keys", () => {
    assert.equal(callDataTail(call(`"${BIG}"`, ',"baggage":"k=v"'), fid, callerId, 30000, undefined), `"${BIG}","baggage":"k=v"`);
  });
  test('a call without a deadline of its own (the engine applies its default) is passed on too', () => {
    const text = `{"type":"invokefunction","function_id":"a::b","invocation_id":"c-1","data":"${BIG}","metadata":1}`;
    assert.equal(callDataTail(text, fid, callerId, undefined, undefined), `"${BIG}","metadata":1`);
    assert.equal(callDataTail(text, fid, callerId, 30000, undefined), null, 'a timeout the text does not hold');
  });
  test("a provider's call for a binding: the binding id stays with the engine, the data is passed on", () => {
    const text = `{"type":"invokefunction","function_id":"a::b","invocation_id":"c-1","binding_id":"b-1","data":"${BIG}"}`;
    assert.equal(callDataTail(text, fid, callerId, undefined, 'b-1'), `"${BIG}"`);
    assert.equal(callDataTail(text, fid, callerId, undefined, 'b-2'), null, 'a binding id the parse did not see');
    assert.equal(callDataTail(call(`"${BIG}"`), fid, callerId, 30000, 'b-1'), null, 'a binding id the text does not hold');
  });
  test('small frames, other layouts and escaped ids are serialised again', () => {
    assert.equal(callDataTail(call('{"a":1}'), fid, callerId, 30000, undefined), null, 'small');
    assert.equal(callDataTail(call(`"${BIG}"`), fid, callerId, 5, undefined), null, 'other timeout');
    assert.equal(callDataTail(call(`"${BIG}"`), fid, callerId, undefined, undefined), null, 'a timeout the parse did not see');
    assert.equal(callDataTail(call(`"${BIG}"`) + ' ', fid, callerId, 30000, undefined), null, 'trailing space');
    const escaped = call(`"${BIG}"`).replace('"c-1"', '"\\u0063-1"');
    assert.equal(callDataTail(escaped, fid, callerId, 30000, undefined), null, 'id written with an escape');
    const reordered = `{"type":"invokefunction","data":"${BIG}","function_id":"a::b","invocation_id":"c-1","timeout_ms":30000}`;
    assert.equal(callDataTail(reordered, fid, callerId, 30000, undefined), null, 'data first');
  });
  test('a result keeps its keys, and the caller id is written last', () => {
    const text = `{"type":"invocationresult","invocation_id":"e-1","function_id":"a::b","result":"${BIG}","invocation_id":"e-1"}`;
    const msg = JSON.parse(text) as InvocationResultMsg;
    const out = forwardedResult(text, msg, 'e-1', 'a::b', fid, cid);
    assert.ok(out);
    assert.deepEqual(JSON.parse(out), { type: 'invocationresult', function_id: 'a::b', result: BIG, invocation_id: 'c-1' });
  });
  test('results with an error, another function id or another layout are rebuilt', () => {
    const ok = `{"type":"invocationresult","invocation_id":"e-1","function_id":"a::b","result":"${BIG}"}`;
    const parse = (t: string): InvocationResultMsg => JSON.parse(t) as InvocationResultMsg;
    assert.ok(forwardedResult(ok, parse(ok), 'e-1', 'a::b', fid, cid));
    const withError = ok.replace(/}$/, ',"error":{"code":"c","message":"m"}}');
    assert.equal(forwardedResult(withError, parse(withError), 'e-1', 'a::b', fid, cid), null);
    const redirected = ok.replace(/}$/, ',"function_id":"z::z"}');
    assert.equal(forwardedResult(redirected, parse(redirected), 'e-1', 'a::b', fid, cid), null);
    assert.equal(forwardedResult(ok, parse(ok), 'e-2', 'a::b', fid, cid), null, 'another invocation');
    const small = '{"type":"invocationresult","invocation_id":"e-1","function_id":"a::b","result":1}';
    assert.equal(forwardedResult(small, parse(small), 'e-1', 'a::b', fid, cid), null);
  });
});

describe('through a real engine', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let callee: RawClient;
  let caller: RawClient;
  before(async () => {
    eng = await startEngine();
    callee = await RawClient.connect(eng.url);
    caller = await RawClient.connect(eng.url);
    callee.send({ type: 'registerfunction', id: 'big::echo' });
    await new Promise((r) => setTimeout(r, 50));
  });
  after(async () => {
    callee.close();
    caller.close();
    await eng.stop();
  });

  test("the callee gets the caller's data and later keys, but the engine's id and traceparent", async () => {
    const data = { text: `ünïcødé "quoted" \\ ${BIG}`, n: [1, 2.5, null] };
    const stranger = '00-11111111111111111111111111111111-2222222222222222-01';
    caller.send(
      `{"type":"invokefunction","function_id":"big::echo","invocation_id":"mine-1","timeout_ms":30000,"data":${JSON.stringify(data)},"baggage":"k=v","invocation_id":"mine-1","traceparent":"${stranger}"}`,
    );
    const inv = await callee.next((f) => f.type === 'invokefunction');
    assert.deepEqual(inv.data, data);
    assert.equal(inv.baggage, 'k=v');
    assert.notEqual(inv.invocation_id, 'mine-1');
    assert.match(String(inv.traceparent), /^00-1{32}-[0-9a-f]{16}-01$/, 'a child span of the caller\'s trace');
    assert.notEqual(inv.traceparent, stranger);
    const result = { echoed: data.text };
    callee.send(`{"type":"invocationresult","invocation_id":"${String(inv.invocation_id)}","function_id":"big::echo","result":${JSON.stringify(result)},"invocation_id":"${String(inv.invocation_id)}"}`);
    const answer = await caller.next((f) => f.type === 'invocationresult');
    assert.equal(answer.invocation_id, 'mine-1');
    assert.equal(answer.function_id, 'big::echo');
    assert.deepEqual(answer.result, result);
  });

  test('svc-sdk workers: a large payload and result arrive intact', async () => {
    const a: Worker = registerWorker(eng.url, { workerName: 'big-callee' });
    const b: Worker = registerWorker(eng.url, { workerName: 'big-caller' });
    try {
      a.registerFunction('big::reverse', async (d: { s: string }) => ({ s: [...d.s].reverse().join(''), len: d.s.length }));
      await a.ready();
      await b.ready();
      const s = `→ ${'\u2028'} \u0001 "q" \\ 🙂 ${BIG}`;
      const r = await b.trigger<{ s: string; len: number }>({ function_id: 'big::reverse', payload: { s } });
      assert.equal(r.s, [...s].reverse().join(''));
      assert.equal(r.len, s.length);
    } finally {
      await a.shutdown();
      await b.shutdown();
    }
  });
});
