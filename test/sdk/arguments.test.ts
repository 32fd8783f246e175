/**
 * Bad arguments to svc-sdk's Worker are reported before anything is sent, with the codes the Python
 * SDK uses for the same mistakes (sdk/python/tests/test_arguments.py): `invalid_function_id` for a
 * function id, `invalid_argument` for any other argument of the wrong kind, `duplicate_function`.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEngine } from '../helpers/engine.js';
import { InvocationError, registerWorker, SvcError, Worker, type CallRequest, type TriggerInput, type TriggerTypeDefinition, type TriggerTypeHandler } from 'svc-sdk';

describe('bad arguments', () => {
  // Never connects: every check below happens before the connection matters.
  const w = new Worker('ws://127.0.0.1:1', { workerName: 'arguments', echoLogs: false });
  after(() => w.shutdown());
  const is = (code: string, message: RegExp) => (e: unknown): boolean => e instanceof InvocationError && e instanceof SvcError && e.code === code && message.test(e.message);

  test('registerFunction: a handler that is not a function, an id registered twice', () => {
    assert.throws(() => w.registerFunction('args::h', 42 as never), is('invalid_argument', /Handler for args::h must be a function, got 42/));
    w.registerFunction('args::once', () => null);
    assert.throws(() => w.registerFunction('args::once', () => null), is('duplicate_function', /args::once is already registered/));
    assert.throws(() => w.registerFunction(7 as never, () => null), is('invalid_function_id', /got 7/));
  });

  test('trigger: the request, its function id, deadline, action and binding id', async () => {
    await assert.rejects(w.trigger(null as unknown as CallRequest), is('invalid_argument', /trigger\(\) takes \{function_id/));
    await assert.rejects(w.trigger({} as CallRequest), is('invalid_function_id', /needs a non-empty function_id, got undefined/));
    await assert.rejects(w.trigger({ function_id: '' }), is('invalid_function_id', /got ""/));
    for (const timeoutMs of [0, -5, Number.NaN, Infinity, '100' as unknown as number]) {
      await assert.rejects(w.trigger({ function_id: 'a::b', timeoutMs }), is('invalid_argument', /timeoutMs must be a positive number/), String(timeoutMs));
    }
    await assert.rejects(w.trigger({ function_id: 'a::b', action: { type: 'enqueue' } as never }), is('invalid_argument', /action must be .* got an object \{"type":"enqueue"\}/));
    await assert.rejects(w.trigger({ function_id: 'a::b', bindingId: '' }), is('invalid_argument', /bindingId must be a non-empty string/));
  });

  test('registerTrigger and registerTriggerType', async () => {
    await assert.rejects(w.registerTrigger({ type: '', function_id: 'a::b' }), is('invalid_argument', /registerTrigger\(\) needs \{type/));
    await assert.rejects(w.registerTrigger(undefined as unknown as TriggerInput), is('invalid_argument', /got undefined/));
    await assert.rejects(w.registerTrigger({ type: 'http', function_id: '' }), is('invalid_function_id', /registerTrigger\(\) needs a non-empty function_id/));
    const handler: TriggerTypeHandler = { registerTrigger: () => {}, unregisterTrigger: () => {} };
    await assert.rejects(w.registerTriggerType({ id: '' }, handler), is('invalid_argument', /registerTriggerType\(\) needs \{id/));
    await assert.rejects(w.registerTriggerType({ id: 't' } as TriggerTypeDefinition, {} as TriggerTypeHandler), is('invalid_argument', /must have registerTrigger and unregisterTrigger/));
  });
});

describe('a refused registerTrigger', () => {
  // Before, its stack held only TriggerRegistry.onResult, WorkerSession.onMessage and ws's frames:
  // a worker with several bindings crashed without saying which line made the refused one.
  test("names the program's line that awaited it", async () => {
    const engine = await startEngine();
    const w = registerWorker(engine.url, { workerName: 'refused', echoLogs: false });
    try {
      // A config over engine.limits.max_stored_value_bytes: the engine itself refuses the binding.
      const err = await w.registerTrigger({ type: 'http', function_id: 'refused::f', config: { blob: 'x'.repeat(70_000) } }).then(
        () => assert.fail('the binding was accepted'),
        (e: unknown) => e as InvocationError,
      );
      assert.ok(err instanceof InvocationError);
      assert.equal(err.code, 'payload_too_large');
      assert.equal(err.functionId, 'refused::f');
      assert.match(err.stack ?? '', /arguments\.test\.(js|ts):\d+/, err.stack);
    } finally {
      await w.shutdown();
      await engine.stop();
    }
  });
});

describe('payloads that cannot be encoded', () => {
  test('one nested too deeply for JSON.stringify is invalid_payload naming the depth the engine accepts, not the stack', async () => {
    const engine = await startEngine();
    const w = registerWorker(engine.url, { workerName: 'deep', echoLogs: false });
    try {
      w.registerFunction('deep::echo', (d: unknown) => d);
      let deep: object = {};
      for (let i = 0; i < 20_000; i++) deep = { a: deep };
      await assert.rejects(w.trigger({ function_id: 'deep::echo', payload: deep }), (e: unknown) => {
        assert.ok(e instanceof InvocationError && e.code === 'invalid_payload', String(e));
        assert.match(e.message, /nested too deeply to encode \(the engine accepts 128 levels of arrays and objects\)/);
        return true;
      });
      // The worker is unharmed.
      assert.deepEqual(await w.trigger({ function_id: 'deep::echo', payload: { a: 1 } }), { a: 1 });
    } finally {
      await w.shutdown();
      await engine.stop();
    }
  });
});
