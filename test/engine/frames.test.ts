import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
type ErrFrame = { error: { code: string; message: string }; ref?: { type?: string; id?: string } };

describe('bad input is answered, never fatal', () => {
  let eng: Eng;
  let raw: RawClient;
  const pool = new WorkerPool(() => eng.url);
  const LIMIT = 64 * 1024;
  before(async () => {
    eng = await startEngine({ maxFrameBytes: LIMIT });
    raw = await RawClient.connect(eng.url);
  });
  after(async () => {
    raw.close();
    await pool.closeAll();
    await eng.stop();
  });

  async function errorFor(frame: string): Promise<ErrFrame> {
    raw.send(frame);
    return (await raw.next((f) => f.type === 'error')) as unknown as ErrFrame;
  }

  async function stillServes(): Promise<void> {
    raw.send({ type: 'invokefunction', invocation_id: `alive-${Math.random()}`, function_id: 'engine::health::check', data: {} });
    const r = await raw.next((f) => f.type === 'invocationresult');
    assert.equal((r.result as { status: string }).status, 'ok');
  }

  test('malformed JSON', async () => {
    const e = await errorFor('{"type": "invokefunction", ');
    assert.equal(e.error.code, 'malformed_frame');
    assert.match(e.error.message, /not valid JSON/);
    await stillServes();
  });

  test('JSON that is not an object, or has no type', async () => {
    assert.equal((await errorFor('[1,2,3]')).error.code, 'malformed_frame');
    assert.equal((await errorFor('{"id": "x"}')).error.code, 'malformed_frame');
    await stillServes();
  });

  test('an unknown type names the type', async () => {
    const e = await errorFor('{"type":"registerfunctoin","id":"x"}');
    assert.equal(e.error.code, 'unknown_message_type');
    assert.match(e.error.message, /registerfunctoin/);
    await stillServes();
  });

  test('a wrongly typed field names the field; a malformed call is answered on its invocation_id', async () => {
    const e = await errorFor('{"type":"registerfunction","id":42}');
    assert.equal(e.error.code, 'invalid_frame');
    assert.match(e.error.message, /"id" must be a string, got number 42/);
    raw.send({ type: 'invokefunction', invocation_id: 'bad-call', function_id: 7 });
    const r = await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'bad-call');
    assert.equal((r.error as { code: string }).code, 'invalid_frame');
    const e2 = (await raw.next((f) => f.type === 'error')) as unknown as ErrFrame;
    assert.deepEqual(e2.ref, { type: 'invokefunction', id: 'bad-call' });
    await stillServes();
  });

  test('an invalid function id is refused with the reason', async () => {
    const e = await errorFor('{"type":"registerfunction","id":"has space"}');
    assert.equal(e.error.code, 'invalid_function_id');
    assert.match(e.error.message, /contains U\+0020 \(whitespace\) at index 3/);
  });

  test('lookalike and invisible characters in a function id are refused, naming the code point', async () => {
    const cases: Array<[string, RegExp]> = [
      ['state::\u200bget', /^Function id "state::\\u200bget" contains U\+200B \(a zero-width character\) at index 7$/],
      ['state::get\u202e', /U\+202E \(a bidirectional control\) at index 10/],
      ['state\u2066::get', /U\+2066 \(a bidirectional control\)/],
      ['del\u007f', /U\+007F \(a control character\)/],
      ['c1\u0085', /U\+0085 \(a control character\)/],
      ['c1\u009b[2J', /U\+009B \(a control character\)/],
      ['nbsp\u00a0id', /U\+00A0 \(whitespace\)/],
      ['bom\ufeff', /U\+FEFF \(a zero-width character\)/],
      ['soft\u00adhyphen', /U\+00AD \(an invisible formatting character\)/],
      ['lone\ud800', /U\+D800 \(an unpaired surrogate/],
    ];
    for (const [id, why] of cases) {
      const e = await errorFor(JSON.stringify({ type: 'registerfunction', id }));
      assert.equal(e.error.code, 'invalid_function_id', id);
      assert.match(e.error.message, why);
    }
    // Letters of any script, emoji (a surrogate pair) and punctuation stay allowed.
    raw.send({ type: 'registerfunction', id: '検索::日本語/🙂-v1.2_ok' });
    assert.equal(await raw.receives((f) => f.type === 'error', 200), false);
  });

  test('an oversized frame gets frame_too_large, its call ends with payload_too_large, and the connection stays open', async () => {
    const big = 'x'.repeat(LIMIT + 10);
    raw.send({ type: 'invokefunction', invocation_id: 'too-big', function_id: 'engine::health::check', data: { big } });
    const e = (await raw.next((f) => f.type === 'error')) as unknown as ErrFrame;
    assert.equal(e.error.code, 'frame_too_large');
    assert.match(e.error.message, new RegExp(`max_frame_bytes of ${LIMIT}`));
    const r = await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'too-big');
    assert.equal((r.error as { code: string }).code, 'payload_too_large');
    assert.equal(raw.closed, false);
    await stillServes();
  });

  test('an oversized result fails the call for the caller instead of hanging it', async () => {
    // A callee without svc-sdk's own check (an iii SDK, a raw client): the engine refuses the frame.
    const callee = await RawClient.connect(eng.url);
    try {
      callee.send({ type: 'registerfunction', id: 'big::result' });
      const caller = pool.make('big-caller');
      await eventually(async () => assert.ok(JSON.stringify(await caller.trigger({ function_id: 'engine::functions::list', payload: {} })).includes('big::result')));
      const answer = assert.rejects(caller.trigger({ function_id: 'big::result', timeoutMs: 5000 }), { code: 'result_too_large', message: new RegExp(`^Result of big::result: frame of \\d+ bytes exceeds the engine's max_frame_bytes of ${LIMIT}$`) });
      const call = await callee.next((f) => f.type === 'invokefunction' && f.function_id === 'big::result');
      callee.send({ type: 'invocationresult', invocation_id: call.invocation_id, function_id: 'big::result', result: 'y'.repeat(LIMIT * 2) });
      await answer;
    } finally {
      callee.close();
    }
  });

  test('svc-sdk refuses a result over the engine\'s announced limit itself, as result_too_large naming the limit and its source', async () => {
    // Its own limit (maxFrameBytes) is higher: the engine's, announced in its `hello`, is the one that counts.
    const callee = pool.make('big-result', { maxFrameBytes: LIMIT * 8 });
    callee.registerFunction('big::sdk_result', () => 'y'.repeat(LIMIT * 2));
    await callee.ready();
    assert.equal(callee.engine?.max_frame_bytes, LIMIT);
    const caller = pool.make('big-sdk-caller');
    await eventually(() => assert.rejects(caller.trigger({ function_id: 'big::sdk_result', timeoutMs: 5000 }), { code: 'result_too_large', message: new RegExp(`^Result of big::sdk_result: frame of \\d+ bytes exceeds the limit of ${LIMIT} bytes \\(the engine's max_frame_bytes, announced at connect\\)$`) }));
    // The option lower than the engine's: the option is the limit, and the message says both.
    const small = pool.make('small-result', { maxFrameBytes: 4096 });
    small.registerFunction('big::small_result', () => 'y'.repeat(8192));
    await small.ready();
    await eventually(() => assert.rejects(caller.trigger({ function_id: 'big::small_result', timeoutMs: 5000 }), { code: 'result_too_large', message: new RegExp(`^Result of big::small_result: frame of \\d+ bytes exceeds the limit of 4096 bytes \\(registerWorker option maxFrameBytes; the engine announced max_frame_bytes ${LIMIT} at connect\\)$`) }));
  });

  test('a result JSON cannot encode fails the call as the handler\'s invocation_failed, naming the function, on one line', async () => {
    const callee = pool.make('odd-result');
    callee.registerFunction('odd::bigint', () => ({ n: 10n }));
    callee.registerFunction('odd::cycle', () => {
      const a: Record<string, unknown> = {};
      a.self = a;
      return a;
    });
    await callee.ready();
    const caller = pool.make('odd-caller');
    await eventually(() => assert.rejects(caller.trigger({ function_id: 'odd::bigint', timeoutMs: 5000 }), { code: 'invocation_failed', message: 'Result of odd::bigint is not JSON-serializable: Do not know how to serialize a BigInt' }));
    await assert.rejects(caller.trigger({ function_id: 'odd::cycle', timeoutMs: 5000 }), { code: 'invocation_failed', message: /^Result of odd::cycle is not JSON-serializable: Converting circular structure to JSON --> starting at object [^\n]*closes the circle$/ });
    // The caller's own payload keeps its code.
    await assert.rejects(caller.trigger({ function_id: 'odd::bigint', payload: { n: 1n } }), { code: 'invalid_payload', message: /^Payload is not JSON-serializable: Do not know how to serialize a BigInt$/ });
  });

  test('a toJSON or getter that throws a non-Error fails the call (invocation_failed, invalid_payload), and no worker crashes', async () => {
    // JSON.stringify passes on whatever a toJSON or getter throws: a string, null, anything.
    const callee = pool.make('odd-throw-result');
    callee.registerFunction('odd::throws_string', () => ({ toJSON: () => { throw 'nope'; } }));
    callee.registerFunction('odd::throws_null', () => ({ get x(): never { throw null; } }));
    await callee.ready();
    const caller = pool.make('odd-throw-caller');
    await eventually(() => assert.rejects(caller.trigger({ function_id: 'odd::throws_string', timeoutMs: 5000 }), { code: 'invocation_failed', message: 'Result of odd::throws_string is not JSON-serializable: threw "nope"' }));
    await assert.rejects(caller.trigger({ function_id: 'odd::throws_null', timeoutMs: 5000 }), { code: 'invocation_failed', message: 'Result of odd::throws_null is not JSON-serializable: threw null' });
    // The caller's own payload: a rejection (trigger never throws), with its code.
    let sent: Promise<unknown> | undefined;
    assert.doesNotThrow(() => (sent = caller.trigger({ function_id: 'odd::throws_string', payload: { toJSON: () => { throw 'bad'; } } })));
    await assert.rejects(sent!, { code: 'invalid_payload', message: 'Payload is not JSON-serializable: threw "bad"' });
  });

  test('a handler that throws a value JSON cannot encode (a BigInt, a cycle) fails the call, and the worker lives on', async () => {
    const callee = pool.make('odd-throw-value');
    callee.registerFunction('odd::throws_bigint', () => {
      throw 10n;
    });
    callee.registerFunction('odd::rejects_cycle', async () => {
      const a: Record<string, unknown> = {};
      a.self = a;
      throw a;
    });
    await callee.ready();
    const caller = pool.make('odd-throw-value-caller');
    await eventually(() => assert.rejects(caller.trigger({ function_id: 'odd::throws_bigint', timeoutMs: 5000 }), { code: 'invocation_failed', message: 'a bigint' }));
    await assert.rejects(caller.trigger({ function_id: 'odd::rejects_cycle', timeoutMs: 5000 }), { code: 'invocation_failed', message: 'an object' });
  });

  test('the SDK refuses to send a frame over its limit, locally', async () => {
    const caller = pool.make('sdk-limit', { maxFrameBytes: 1024 });
    await caller.ready();
    assert.equal(caller.engine?.max_frame_bytes, LIMIT, 'ready() waits for the engine\'s hello');
    await assert.rejects(caller.trigger({ function_id: 'engine::health::check', payload: { s: 'z'.repeat(2000) } }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'payload_too_large');
      // Which call, how big, the limit and where it comes from (the SDK's option, and the engine's own).
      assert.match(e.message, /^Call of engine::health::check: frame of \d+ bytes exceeds the limit of 1024 bytes \(registerWorker option maxFrameBytes; the engine announced max_frame_bytes 65536 at connect\)$/);
      assert.equal(e.functionId, 'engine::health::check');
      return true;
    });
  });

  test('the SDK holds its frames to the engine\'s announced max_frame_bytes when that is lower than its own', async () => {
    const caller = pool.make('engine-limit');
    await caller.ready();
    // Refused here, before its bytes are sent: the engine's own refusal would say "exceeds the engine's max_frame_bytes of".
    await assert.rejects(caller.trigger({ function_id: 'engine::health::check', payload: { s: 'z'.repeat(LIMIT) } }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'payload_too_large');
      assert.match(e.message, new RegExp(`^Call of engine::health::check: frame of \\d+ bytes exceeds the limit of ${LIMIT} bytes \\(the engine's max_frame_bytes, announced at connect\\)$`));
      return true;
    });
    await caller.trigger({ function_id: 'engine::health::check', payload: { s: 'z'.repeat(LIMIT - 1024) } });
  });

  test('binary frames, blank frames and JSON ping are tolerated', async () => {
    raw.ws.send(Buffer.from('OTLP{"resourceSpans":[]}'));
    raw.send('   ');
    raw.send({ type: 'ping' });
    await raw.next((f) => f.type === 'pong');
    raw.send({ type: 'registerservice', id: 'legacy' });
    await stillServes();
  });

  test('a burst of garbage leaves the engine serving others', async () => {
    const junk = await RawClient.connect(eng.url);
    for (let i = 0; i < 200; i++) junk.send(i % 2 ? '{' : JSON.stringify({ type: 'invocationresult', invocation_id: `nope-${i}` }));
    junk.close();
    await stillServes();
  });
});

describe('graceful shutdown', () => {
  test('stop() lets calls in flight finish, then closes connections', async () => {
    const eng = await startEngine({ shutdownGraceMs: 3000 });
    const pool = new WorkerPool(() => eng.url);
    const callee = pool.make('drain-callee');
    callee.registerFunction('drain::slow', async () => {
      await new Promise((r) => setTimeout(r, 300));
      return 'finished';
    });
    await callee.ready();
    const caller = pool.make('drain-caller');
    await eventually(async () => assert.ok(await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'drain::slow' } })));
    const inflight = caller.trigger({ function_id: 'drain::slow' });
    await new Promise((r) => setTimeout(r, 50));
    const stopped = eng.stop();
    // New top-level calls are refused while draining.
    await assert.rejects(caller.trigger({ function_id: 'drain::slow' }), { code: 'shutting_down' });
    assert.equal(await inflight, 'finished');
    await stopped;
    await pool.closeAll();
  });
});
