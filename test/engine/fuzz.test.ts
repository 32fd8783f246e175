/**
 * Property-based tests (fast-check) of where frames enter the engine (issue 9):
 *  (a) `decodeFrame` alone over arbitrary strings, arbitrary JSON and mutated valid frames: it never
 *      throws, and answers either a known message or an error with a known code and a short message;
 *  (b) a real engine fed random frame sequences (valid, mutated, garbage, binary, oversized) from
 *      several raw connections at once, beside real SDK workers calling each other: every refused
 *      frame is answered with an `error` frame (and a call's `invocationresult`), every call ends, the
 *      SDK traffic never fails, and afterwards nothing is left in flight.
 *
 * Runs are seeded: FUZZ_SEED=<n> replays one; the seed is printed, and fast-check's failure message
 * also carries the seed and the shrink path.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InvocationError, type Worker } from 'svc-sdk';
import { decodeFrame, MESSAGE_TYPES } from 'svc-sdk/protocol';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);

const DECODE_CODES = new Set(['malformed_frame', 'unknown_message_type', 'invalid_frame', 'frame_too_deep']);
const MAX_MESSAGE = 512;

// ---- generators ---------------------------------------------------------------------------------

type Obj = Record<string, unknown>;
const shortStr = fc.string({ maxLength: 24 });
const weirdStr = fc.oneof(shortStr, fc.string({ unit: 'binary', maxLength: 24 }), fc.constantFrom('', ' ', '\u0000', '\ud800', '💥', 'engine::x', 'a'.repeat(300)));
const json = fc.jsonValue({ maxDepth: 3 });
const FUNCTIONS = ['engine::health::check', 'fuzz::echo', 'fuzz::slow', 'fuzz::fail', 'nope::missing', 'engine::functions::list'];

/** Frames the engine accepts, each with a fresh invocation id where it has one. */
function validFrame(idPrefix: string): fc.Arbitrary<Obj> {
  const callId = fc.nat().map((n) => `${idPrefix}${n}`);
  return fc.oneof(
    fc.constant({ type: 'ping' }),
    fc.constant({ type: 'pong' }),
    fc.record({ type: fc.constant('registerfunction'), id: shortStr.map((s) => `raw::${s}x`), description: fc.option(shortStr) }),
    fc.record({ type: fc.constant('unregisterfunction'), id: shortStr.map((s) => `raw::${s}x`) }),
    fc.record(
      {
        type: fc.constant('invokefunction'),
        function_id: fc.constantFrom(...FUNCTIONS),
        invocation_id: callId,
        data: json,
        timeout_ms: fc.integer({ min: 20, max: 3000 }),
        traceparent: fc.option(fc.constantFrom('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'garbage')),
      },
      { requiredKeys: ['type', 'function_id', 'invocation_id'] },
    ),
    fc.record({ type: fc.constant('invokefunction'), function_id: fc.constantFrom(...FUNCTIONS), data: json, action: fc.constant({ type: 'void' }) }),
    fc.record({ type: fc.constant('invokefunction'), function_id: fc.constantFrom(...FUNCTIONS), invocation_id: callId, action: fc.record({ type: fc.constant('enqueue'), queue: shortStr }) }),
    fc.record({ type: fc.constant('invocationresult'), invocation_id: weirdStr, result: json }),
    fc.record({ type: fc.constant('cancel'), invocation_id: weirdStr, reason: shortStr }),
    fc.record({ type: fc.constant('registerservice'), id: shortStr }),
    fc.record({ type: fc.constant('hello'), protocol: fc.integer({ min: 0, max: 3 }), features: fc.subarray(['cancel', 'ack', 'zstd']) }),
    fc.record({ type: fc.constant('reattach'), previous_worker_id: fc.uuid(), reattach_token: fc.uuid() }),
    fc.record({ type: fc.constant('registertriggertype'), id: shortStr.map((s) => `fuzz-${s}`) }),
    fc.record({ type: fc.constant('unregistertriggertype'), id: shortStr.map((s) => `fuzz-${s}`) }),
    fc.record(
      {
        type: fc.constant('observe'),
        id: shortStr.map((s) => `obs-${s}`),
        source: fc.record({ function_id: fc.constantFrom(...FUNCTIONS), filters: fc.constantFrom({ 'input.x': { $eq: 1 } }, { $or: [] }, { 'input.x': 1 }) }, { requiredKeys: ['function_id'] }),
        target: fc.record({ function_id: fc.constantFrom(...FUNCTIONS) }),
        max_fires: fc.integer({ min: -1, max: 3 }),
        expires_in_ms: fc.integer({ min: 0, max: 500 }),
      },
      { requiredKeys: ['type', 'id', 'source', 'target'] },
    ),
    fc.record({ type: fc.constant('unobserve'), id: shortStr.map((s) => `obs-${s}`) }),
    // Frames only a provider or the engine sends, from a client: a result for no binding, and the engine's own.
    fc.record({ type: fc.constant('triggerregistrationresult'), id: weirdStr, error: fc.option(fc.record({ code: shortStr, message: shortStr })) }),
    fc.record({ type: fc.constant('registrationrejected'), code: shortStr, namespace: shortStr }),
    fc.record({ type: fc.constant('workerregistered'), worker_id: shortStr }),
    fc.record({ type: fc.constant('error'), error: fc.record({ code: shortStr, message: shortStr }) }),
    fc.record({ type: fc.constant('registertrigger'), id: fc.uuid(), trigger_type: shortStr.map((s) => `fuzz-${s}`), function_id: fc.constant('fuzz::echo'), config: json }),
    fc.record({ type: fc.constant('unregistertrigger'), id: fc.uuid() }),
  );
}

/** A valid frame, then broken (or not) in one of several ways: as an object, then as text. */
function mutatedFrame(idPrefix: string): fc.Arbitrary<string> {
  const field = fc.constantFrom('type', 'id', 'function_id', 'invocation_id', 'data', 'timeout_ms', 'action', 'error', 'features', 'protocol', 'trigger_type', 'description', 'metadata', '__proto__');
  const objMutation = fc.oneof(
    fc.record({ op: fc.constant('drop' as const), field }),
    fc.record({ op: fc.constant('set' as const), field, value: fc.oneof(json, fc.constant(null)) }),
    fc.record({ op: fc.constant('type' as const), value: fc.oneof(weirdStr, fc.constantFrom(...MESSAGE_TYPES).map((t) => t.toUpperCase()), fc.constantFrom(...MESSAGE_TYPES).map((t) => ` ${t}`)) }),
  );
  const textMutation = fc.oneof(
    fc.record({ op: fc.constant('none' as const) }),
    fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({ op: fc.constant('insert' as const), at: fc.nat(), s: fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }) }),
    fc.record({ op: fc.constant('wrap' as const) }),
  );
  return fc.tuple(validFrame(idPrefix), fc.array(objMutation, { minLength: 1, maxLength: 3 }), textMutation).map(([frame, muts, tm]) => {
    const o: Obj = { ...frame };
    for (const m of muts) {
      if (m.op === 'drop') delete o[m.field];
      else if (m.op === 'set') Object.defineProperty(o, m.field, { value: m.value, enumerable: true, writable: true, configurable: true });
      else o.type = m.value;
    }
    const text = JSON.stringify(o);
    switch (tm.op) {
      case 'none':
        return text;
      case 'truncate':
        return text.slice(0, tm.at % text.length);
      case 'insert': {
        const at = tm.at % (text.length + 1);
        return text.slice(0, at) + tm.s + text.slice(at);
      }
      case 'wrap':
        return `[${text}]`;
    }
  });
}

/** A call with an invocation_id and one wrongly typed field: refused, and answered on its id. */
function badCall(idPrefix: string): fc.Arbitrary<string> {
  const bad = fc.oneof(
    fc.record({ function_id: fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.array(shortStr, { maxLength: 2 })) }),
    fc.record({ function_id: fc.constant('fuzz::echo'), timeout_ms: fc.oneof(shortStr, fc.constant(true), fc.constant({})) }),
    fc.record({ function_id: fc.constant('fuzz::echo'), action: fc.oneof(fc.constant({ type: 'x' }), fc.constant({ type: 'enqueue' }), shortStr, fc.integer()) }),
    fc.record({ function_id: fc.constant('fuzz::echo'), traceparent: fc.oneof(fc.integer(), fc.constant({})) }),
  );
  return fc.tuple(fc.nat(), bad).map(([n, b]) => JSON.stringify({ type: 'invokefunction', invocation_id: `${idPrefix}bad${n}`, ...b }));
}

const garbage = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ maxLength: 200 }),
  json.map((v) => JSON.stringify(v)),
  fc.constantFrom('{', '}', '{}', '[]', 'null', '"type"', '{"type":null}', '{"type":{}}', '{"type":"invokefunction"}', '\u0000', '{"type":"ping"}{"type":"ping"}', '\ufeff{"type":"ping"}'),
);

function assertDecodeContract(text: string): void {
  let r: ReturnType<typeof decodeFrame>;
  try {
    r = decodeFrame(text);
  } catch (e) {
    assert.fail(`decodeFrame threw on ${JSON.stringify(text).slice(0, 200)}: ${(e as Error).stack}`);
  }
  if (r.ok) {
    assert.ok((MESSAGE_TYPES as readonly string[]).includes(r.msg.type), `accepted unknown type ${r.msg.type}`);
    assert.deepEqual(r.msg, JSON.parse(text), 'the accepted message is the parsed frame');
    return;
  }
  assert.ok(DECODE_CODES.has(r.error.code), `unexpected code ${r.error.code}`);
  assert.equal(typeof r.error.message, 'string');
  assert.ok(r.error.message.length > 0 && r.error.message.length <= MAX_MESSAGE, `message length ${r.error.message.length}: ${r.error.message.slice(0, 100)}`);
  if (r.ref) {
    if (r.ref.type !== undefined) assert.ok(typeof r.ref.type === 'string' && r.ref.type.length <= 64);
    if (r.ref.id !== undefined) assert.ok(typeof r.ref.id === 'string' && r.ref.id.length <= 128);
  }
}

// ---- (a) the decoder alone ------------------------------------------------------------------------

describe('decodeFrame never throws and answers every input', () => {
  test('arbitrary strings', () => {
    fc.assert(fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ maxLength: 300 })), assertDecodeContract), { seed: SEED, numRuns: 3000, includeErrorInReport: true });
  });

  test('arbitrary JSON values', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => assertDecodeContract(JSON.stringify(v))), { seed: SEED, numRuns: 3000, includeErrorInReport: true });
  });

  test('mutated valid frames', () => {
    fc.assert(fc.property(fc.oneof(mutatedFrame('m-'), badCall('b-')), assertDecodeContract), { seed: SEED, numRuns: 5000, includeErrorInReport: true });
  });

  test('valid frames round-trip, unknown fields are ignored, and null optionals count as absent', () => {
    fc.assert(
      fc.property(validFrame('v-'), shortStr, (frame, extra) => {
        const r = decodeFrame(JSON.stringify({ ...frame, [`x_${extra}`]: 1 }));
        assert.ok(r.ok, `refused a valid frame ${JSON.stringify(frame)}: ${r.ok ? '' : r.error.message}`);
        assert.equal(r.msg.type, frame.type);
        if (frame.type === 'invokefunction') {
          const withNulls = decodeFrame(JSON.stringify({ ...frame, traceparent: null, baggage: null, action: null }));
          assert.ok(withNulls.ok);
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

// ---- (b) a real engine ----------------------------------------------------------------------------

type Action = { kind: 'text'; text: string } | { kind: 'binary'; bytes: Uint8Array } | { kind: 'oversized'; text: string };
type Frame = Obj & { type?: string };

const LIMIT = 8 * 1024;
/** What the runs exercised, so that a generator gone wrong cannot make the test pass vacuously. */
const seen = { refused: 0, refusedCalls: 0, oversized: 0, binary: 0, accepted: 0, calls: 0 };

function actions(idPrefix: string): fc.Arbitrary<Action[]> {
  const text = (a: fc.Arbitrary<string>): fc.Arbitrary<Action> => a.map((t) => ({ kind: 'text' as const, text: t }));
  const action: fc.Arbitrary<Action> = fc.oneof(
    { arbitrary: text(validFrame(idPrefix).map((f) => JSON.stringify(f))), weight: 3 },
    { arbitrary: text(mutatedFrame(idPrefix)), weight: 4 },
    { arbitrary: text(garbage), weight: 2 },
    { arbitrary: text(badCall(idPrefix)), weight: 1 },
    { arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ kind: 'binary' as const, bytes })), weight: 1 },
    {
      // Between the limit and twice it: refused with frame_too_large, the connection stays open.
      arbitrary: fc.tuple(fc.integer({ min: LIMIT + 1, max: 2 * LIMIT }), fc.nat(), fc.boolean()).map(([size, n, call]) => ({
        kind: 'oversized' as const,
        text: call
          ? JSON.stringify({ type: 'invokefunction', function_id: 'fuzz::echo', invocation_id: `${idPrefix}big${n}`, data: { pad: 'x'.repeat(size) } })
          : JSON.stringify({ type: 'registerfunction', id: 'raw::big', description: 'x'.repeat(size) }),
      })),
      weight: 1,
    },
  );
  return fc.array(action, { minLength: 1, maxLength: 20 });
}

/** A raw connection that keeps every frame it receives, in order. */
async function rawPeer(url: string): Promise<{ raw: RawClient; log: Frame[] }> {
  const raw = await RawClient.connect(url);
  const log: Frame[] = [];
  raw.ws.on('message', (data, isBinary) => {
    if (!isBinary) log.push(JSON.parse(data.toString()) as Frame);
  });
  return { raw, log };
}

/**
 * Play `acts` on one connection. After each frame a health-check call serves as a barrier: frames
 * are handled in order and refusals are sent synchronously, so everything the engine says about a
 * frame has arrived before the barrier's result.
 */
async function play(url: string, conn: string, acts: Action[]): Promise<void> {
  const { raw, log } = await rawPeer(url);
  /** Calls that must each end with an invocationresult, by the id the engine answers on. */
  const expectResult = new Map<string, number>();
  let from = 0;
  try {
    for (let i = 0; i < acts.length; i++) {
      const a = acts[i]!;
      if (a.kind === 'binary') raw.ws.send(a.bytes, { binary: true });
      else raw.send(a.text);
      const barrier = `barrier-${conn}-${i}`;
      raw.send({ type: 'invokefunction', invocation_id: barrier, function_id: 'engine::health::check', data: {} });
      await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === barrier, 5000);
      const end = log.findIndex((f) => f.type === 'invocationresult' && f.invocation_id === barrier);
      const window = log.slice(from, end);
      from = end + 1;
      const errors = window.filter((f) => f.type === 'error') as Array<Frame & { error: { code: string; message: string }; ref?: { type?: string; id?: string } }>;
      const what = `action ${i} (${a.kind}) ${a.kind === 'binary' ? '' : JSON.stringify(a.text.slice(0, 200))}; got ${JSON.stringify(window).slice(0, 400)}`;
      for (const e of errors) assert.ok(typeof e.error.code === 'string' && typeof e.error.message === 'string' && e.error.message.length > 0, what);

      if (a.kind === 'binary') {
        assert.equal(errors.length, 0, `binary frames are ignored: ${what}`);
        seen.binary++;
        continue;
      }
      const decoded = decodeFrame(a.text);
      if (a.kind === 'oversized') {
        assert.equal(errors.length, 1, what);
        assert.equal(errors[0]!.error.code, 'frame_too_large', what);
        const call = decoded.ok && decoded.msg.type === 'invokefunction' ? decoded.msg : null;
        if (call?.invocation_id) {
          const r = window.find((f) => f.type === 'invocationresult' && f.invocation_id === call.invocation_id) as { error?: { code: string } } | undefined;
          assert.equal(r?.error?.code, 'payload_too_large', what);
        }
        seen.oversized++;
        continue;
      }
      if (a.text.trim().length === 0) {
        // Nothing answers a blank frame; a late result of an earlier accepted call may still land here.
        const answered = window.filter((f) => !(f.type === 'invocationresult' && expectResult.has(f.invocation_id as string)));
        assert.equal(answered.length, 0, `blank frames are skipped: ${what}`);
        continue;
      }
      if (!decoded.ok) {
        // Every refused frame: exactly one error frame, with the decoder's code.
        assert.equal(errors.length, 1, `one error frame per bad frame: ${what}`);
        assert.equal(errors[0]!.error.code, decoded.error.code, what);
        seen.refused++;
        if (decoded.ref?.type === 'invokefunction' && decoded.ref.id) {
          const r = window.find((f) => f.type === 'invocationresult' && f.invocation_id === decoded.ref!.id) as { error?: { code: string } } | undefined;
          assert.equal(r?.error?.code, decoded.error.code, `a malformed call is answered on its id: ${what}`);
          seen.refusedCalls++;
        }
        continue;
      }
      // Accepted frames are never refused as malformed.
      for (const e of errors) assert.ok(!DECODE_CODES.has(e.error.code), `a valid frame was refused: ${what}`);
      const m = decoded.msg;
      seen.accepted++;
      if (m.type === 'invokefunction' && typeof m.invocation_id === 'string' && m.action?.type !== 'void') {
        seen.calls++;
        expectResult.set(m.invocation_id, (expectResult.get(m.invocation_id) ?? 0) + 1);
      }
      if (m.type === 'ping') assert.ok(window.some((f) => f.type === 'pong'), what);
    }
    // Every call with an id ends with a result (timeouts are at most 3 s; the default deadline is
    // shortened for this engine), at most once per time it was sent.
    await eventually(() => {
      for (const [id, n] of expectResult) {
        const got = log.filter((f) => f.type === 'invocationresult' && f.invocation_id === id).length;
        assert.ok(got >= 1 && got <= n, `call ${JSON.stringify(id)} on ${conn}: ${got} results for ${n} sends`);
      }
    }, 8000);
    assert.equal(raw.closed, false, `connection ${conn} was closed by the engine (code ${raw.closeCode})`);
  } finally {
    raw.close();
  }
}

describe('a real engine under random frames from several connections', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  const pool = new WorkerPool(() => eng.url);
  let callee: Worker;
  let caller: Worker;
  before(async () => {
    eng = await startEngine({ maxFrameBytes: LIMIT, invocationTimeoutMs: 3000, maxInvocationTimeoutMs: 3000 });
    callee = pool.make('fuzz-callee', { maxFrameBytes: LIMIT, invocationTimeoutMs: 3000 });
    callee.registerFunction('fuzz::echo', (data: unknown) => data ?? null);
    callee.registerFunction('fuzz::slow', async (_d: unknown, ctx) => {
      await sleep(100);
      if (ctx.signal.aborted) return null;
      return { slow: true };
    });
    callee.registerFunction('fuzz::fail', () => {
      throw Object.assign(new Error('planned'), { code: 'planned_failure' });
    });
    caller = pool.make('fuzz-caller', { maxFrameBytes: LIMIT, invocationTimeoutMs: 3000 });
    await eventually(async () => {
      assert.deepEqual(await caller.trigger({ function_id: 'fuzz::echo', payload: { x: 1 } }), { x: 1 });
    });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('every bad frame is answered, every call ends, SDK traffic keeps working, nothing is left in flight', { timeout: 60_000 }, async () => {
    // Real SDK traffic the whole time: each of these must succeed (or fail exactly as asked).
    let stop = false;
    let sdkCalls = 0;
    const sdkFailures: string[] = [];
    const sdkLoop = (async () => {
      for (let n = 0; !stop; n++) {
        try {
          const r = await caller.trigger({ function_id: 'fuzz::echo', payload: { n }, timeoutMs: 2000 });
          if ((r as { n?: number }).n !== n) sdkFailures.push(`echo ${n} returned ${JSON.stringify(r)}`);
          if (n % 10 === 0) {
            const e = await caller.trigger({ function_id: 'fuzz::fail', timeoutMs: 2000 }).then(
              () => null,
              (err: unknown) => err,
            );
            if (!(e instanceof InvocationError) || e.code !== 'planned_failure') sdkFailures.push(`fuzz::fail ended with ${String(e)}`);
            const t = await caller.trigger({ function_id: 'fuzz::slow', timeoutMs: 30 }).then(
              () => null,
              (err: unknown) => err,
            );
            if (!(t instanceof InvocationError) || t.code !== 'timeout') sdkFailures.push(`a 30 ms call of fuzz::slow ended with ${String(t)}`);
          }
          sdkCalls++;
        } catch (e) {
          sdkFailures.push(`call ${n}: ${String(e)}`);
        }
      }
    })();

    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.constant(null), { minLength: 1, maxLength: 3 }).chain((conns) => fc.tuple(...conns.map((_, i) => actions(`c${i}-`)))), async (plans) => {
          const r = run++;
          await Promise.all(plans.map((acts, i) => play(eng.url, `r${r}c${i}`, acts)));
        }),
        { seed: SEED, numRuns: 250, endOnFailure: true, includeErrorInReport: true },
      );
    } finally {
      stop = true;
      await sdkLoop;
    }
    console.log(`engine fuzz: ${run} runs, ${JSON.stringify(seen)}, ${sdkCalls} SDK call rounds beside them`);
    for (const [k, n] of Object.entries(seen)) assert.ok(n >= 10, `too few ${k} frames exercised (${n})`);
    assert.deepEqual(sdkFailures, [], 'SDK calls beside the fuzzing all succeeded');
    assert.ok(sdkCalls > 20, `SDK traffic ran (${sdkCalls} calls)`);
    // The raw connections are gone: only the two SDK workers remain, and nothing is in flight.
    await eventually(() => {
      assert.equal(eng.engine.sessionCount, 2);
      assert.equal(eng.engine.invocations.size, 0);
    }, 5000);
    assert.deepEqual(await caller.trigger({ function_id: 'fuzz::echo', payload: 'after' }), 'after');
  });

  test('a text frame that is not UTF-8 closes only that connection (1007); the engine serves on', async () => {
    const { raw } = await rawPeer(eng.url);
    raw.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    await eventually(() => assert.equal(raw.closed, true));
    assert.equal(raw.closeCode, 1007);
    assert.deepEqual(await caller.trigger({ function_id: 'fuzz::echo', payload: 1 }), 1);
    await eventually(() => assert.equal(eng.engine.sessionCount, 2));
  });

  test('a call sent in fragments split inside characters is answered; UTF-8 broken across fragments closes only that connection (1007)', async () => {
    const { raw } = await rawPeer(eng.url);
    const data = { s: 'é💥\u0000\u202e' };
    const bytes = Buffer.from(JSON.stringify({ type: 'invokefunction', invocation_id: 'frag-1', function_id: 'fuzz::echo', data }));
    const cuts = [bytes.indexOf(Buffer.from('é')) + 1, bytes.indexOf(Buffer.from('💥')) + 2];
    raw.ws.send(bytes.subarray(0, cuts[0]), { binary: false, fin: false });
    raw.ws.send(bytes.subarray(cuts[0], cuts[1]), { binary: false, fin: false });
    raw.ws.send(bytes.subarray(cuts[1]), { binary: false, fin: true });
    assert.deepEqual((await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'frag-1')).result, data);

    const bad = await rawPeer(eng.url);
    // 0xc3 begins a two-byte character; 0x28 cannot continue it.
    bad.raw.ws.send(Buffer.concat([Buffer.from('{"type":"ping","x":"'), Buffer.from([0xc3])]), { binary: false, fin: false });
    bad.raw.ws.send(Buffer.from([0x28, 0x22, 0x7d]), { binary: false, fin: true });
    await eventually(() => assert.equal(bad.raw.closed, true));
    assert.equal(bad.raw.closeCode, 1007);
    assert.equal(raw.closed, false);
    raw.close();
    assert.deepEqual(await caller.trigger({ function_id: 'fuzz::echo', payload: 3 }), 3);
    await eventually(() => assert.equal(eng.engine.sessionCount, 2));
  });

  test('a frame beyond four times the limit closes only that connection (1009); the engine serves on', async () => {
    const { raw } = await rawPeer(eng.url);
    raw.send({ type: 'ping', pad: 'x'.repeat(LIMIT * 4 + 1) });
    await eventually(() => assert.equal(raw.closed, true));
    assert.equal(raw.closeCode, 1009);
    assert.deepEqual(await caller.trigger({ function_id: 'fuzz::echo', payload: 2 }), 2);
    await eventually(() => assert.equal(eng.engine.sessionCount, 2));
  });
});
