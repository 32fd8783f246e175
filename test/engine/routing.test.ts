import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

describe('routing', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  const w = (name: string): Worker => pool.make(name);
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a call reaches the worker that registered the id and the result comes back', async () => {
    const callee = w('adder');
    callee.registerFunction('math::add', (d: { a: number; b: number }) => ({ c: d.a + d.b }));
    await callee.ready();
    const caller = w('caller');
    await eventually(async () => assert.deepEqual(await caller.trigger({ function_id: 'math::add', payload: { a: 2, b: 3 } }), { c: 5 }));
  });

  test('the caller gets its own invocation_id back; the callee sees an engine-minted one', async () => {
    const seen: string[] = [];
    const callee = w('echo-ids');
    callee.registerFunction('ids::echo', (_d, ctx) => {
      seen.push(ctx.invocationId);
      return 'ok';
    });
    await callee.ready();
    const raw = await RawClient.connect(eng.url);
    await eventually(async () => {
      raw.send({ type: 'invokefunction', invocation_id: 'my-call-1', function_id: 'ids::echo', data: {} });
      const res = await raw.next((f) => f.type === 'invocationresult', 500);
      assert.equal(res.invocation_id, 'my-call-1');
      assert.equal(res.function_id, 'ids::echo');
      assert.equal(res.result, 'ok');
    });
    assert.ok(seen.length >= 1);
    assert.notEqual(seen[0], 'my-call-1');
    raw.close();
  });

  test('an unknown id answers function_not_found with the iii wording', async () => {
    const caller = w('nf-caller');
    await caller.ready();
    await assert.rejects(caller.trigger({ function_id: 'math::nope', payload: {} }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'function_not_found');
      assert.equal(e.message, 'Function math::nope not found');
      return true;
    });
  });

  test('a handler error reaches the caller as invocation_failed with its message; a coded error keeps its code', async () => {
    const callee = w('thrower');
    callee.registerFunction('err::plain', () => {
      throw new Error('boom at step 3');
    });
    callee.registerFunction('err::coded', () => {
      throw Object.assign(new Error('value too big'), { code: 'value_too_large' });
    });
    await callee.ready();
    const caller = w('err-caller');
    await eventually(async () =>
      assert.rejects(caller.trigger({ function_id: 'err::plain' }), { code: 'invocation_failed', message: 'boom at step 3' }),
    );
    await assert.rejects(caller.trigger({ function_id: 'err::coded' }), { code: 'value_too_large', message: 'value too big' });
  });

  test('replicas share the calls and the id stays callable until the last provider leaves', async () => {
    const served = new Map<string, number>();
    const mk = (name: string): Worker => {
      const r = w(name);
      r.registerFunction('rep::work', async () => {
        served.set(name, (served.get(name) ?? 0) + 1);
        await new Promise((res) => setTimeout(res, 5));
        return name;
      });
      return r;
    };
    const r1 = mk('rep-1');
    const r2 = mk('rep-2');
    await Promise.all([r1.ready(), r2.ready()]);
    const caller = w('rep-caller');
    await eventually(async () => {
      const fn = (await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'rep::work' } })) as { workers: unknown[] };
      assert.equal(fn.workers.length, 2);
    });
    await Promise.all(Array.from({ length: 100 }, () => caller.trigger({ function_id: 'rep::work' })));
    assert.equal((served.get('rep-1') ?? 0) + (served.get('rep-2') ?? 0), 100);
    // Least in-flight with round-robin among equals: neither replica idles.
    assert.ok((served.get('rep-1') ?? 0) >= 30, `rep-1 served ${served.get('rep-1')}`);
    assert.ok((served.get('rep-2') ?? 0) >= 30, `rep-2 served ${served.get('rep-2')}`);
    await r1.shutdown();
    await eventually(async () => assert.equal(await caller.trigger({ function_id: 'rep::work' }), 'rep-2'));
    await r2.shutdown();
    await eventually(() => assert.rejects(caller.trigger({ function_id: 'rep::work' }), { code: 'function_not_found' }));
  });

  test('fire-and-forget: the callee runs it, the caller gets no reply (no id, or action void)', async () => {
    const got: unknown[] = [];
    const callee = w('void-callee');
    callee.registerFunction('void::sink', (d) => {
      got.push(d);
      return 'ignored';
    });
    await callee.ready();
    const raw = await RawClient.connect(eng.url);
    await eventually(async () => {
      raw.send({ type: 'invokefunction', function_id: 'void::sink', data: { n: 1 } });
      raw.send({ type: 'invokefunction', invocation_id: 'v-2', function_id: 'void::sink', data: { n: 2 }, action: { type: 'void' } });
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(got.some((d) => (d as { n: number }).n === 1));
      assert.ok(got.some((d) => (d as { n: number }).n === 2));
    });
    assert.equal(await raw.receives((f) => f.type === 'invocationresult', 200), false);
    raw.close();
  });

  test('a result from a worker the call was not sent to is ignored', async () => {
    const callee = await RawClient.connect(eng.url);
    callee.send({ type: 'registerfunction', id: 'spoof::target' });
    const spoofer = await RawClient.connect(eng.url);
    const caller = await RawClient.connect(eng.url);
    await eventually(async () => {
      caller.send({ type: 'invokefunction', invocation_id: 'c-1', function_id: 'spoof::target', data: {} });
      await callee.next((f) => f.type === 'invokefunction', 300);
    });
    caller.send({ type: 'invokefunction', invocation_id: 'c-2', function_id: 'spoof::target', data: {} });
    const call = await callee.next((f) => f.type === 'invokefunction');
    spoofer.send({ type: 'invocationresult', invocation_id: call.invocation_id, function_id: 'spoof::target', result: 'forged' });
    assert.equal(await caller.receives((f) => f.type === 'invocationresult' && f.invocation_id === 'c-2', 200), false);
    callee.send({ type: 'invocationresult', invocation_id: call.invocation_id, function_id: 'spoof::target', result: 'genuine' });
    const res = await caller.next((f) => f.type === 'invocationresult' && f.invocation_id === 'c-2');
    assert.equal(res.result, 'genuine');
    for (const c of [callee, spoofer, caller]) c.close();
  });

  test('a worker cannot register an engine:: builtin id', async () => {
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'registerfunction', id: 'engine::workers::list' });
    const err = await raw.next((f) => f.type === 'error');
    assert.equal((err.error as { code: string }).code, 'invalid_function_id');
    raw.close();
  });

  test('builtins list workers, functions, trigger types and bindings', async () => {
    const callee = w('listed-worker');
    callee.registerFunction('list::me', () => 1, { description: 'listed' });
    await callee.ready();
    const caller = w('lister');
    await eventually(async () => {
      const ws = (await caller.trigger({ function_id: 'engine::workers::list' })) as { workers: Array<{ name: string; functions: string[]; runtime: string }> };
      const me = ws.workers.find((x) => x.name === 'listed-worker');
      assert.ok(me);
      assert.deepEqual(me.functions, ['list::me']);
      assert.equal(me.runtime, 'node');
    });
    const fs = (await caller.trigger({ function_id: 'engine::functions::list' })) as { functions: Array<{ function_id: string; description: string }> };
    assert.equal(fs.functions.find((f) => f.function_id === 'list::me')?.description, 'listed');
    assert.ok(fs.functions.some((f) => f.function_id === 'engine::workers::list'));
    assert.ok('trigger_types' in ((await caller.trigger({ function_id: 'engine::triggers::list' })) as object));
    assert.ok('triggers' in ((await caller.trigger({ function_id: 'engine::registered-triggers::list' })) as object));
  });
});
