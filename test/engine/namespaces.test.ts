import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TriggerBinding, Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

/** A worker in `namespace` (undefined: default) serving `ns::who`, answering `answer`. */
async function who(pool: WorkerPool, name: string, namespace: string | undefined, answer: string): Promise<Worker> {
  const w = pool.make(name, namespace === undefined ? {} : { namespace });
  w.registerFunction('ns::who', () => answer);
  await w.ready();
  return w;
}

async function listed(w: Worker): Promise<Array<{ function_id: string; namespace: string; workers: Array<{ worker_name: string }> }>> {
  const r = (await w.trigger({ function_id: 'engine::functions::list', payload: { include_builtins: false } })) as {
    functions: Array<{ function_id: string; namespace: string; workers: Array<{ worker_name: string }> }>;
  };
  return r.functions;
}

describe('namespaces (iii 0.23+)', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('one function id in three namespaces: each call reaches the namespace it names, none reaching default', async () => {
    await who(pool, 'who-a', 'a', 'from a');
    await who(pool, 'who-b', 'b', 'from b');
    await who(pool, 'who-default', undefined, 'from default');
    const caller = pool.make('ns-caller');
    await eventually(async () => assert.equal(await caller.trigger({ function_id: 'ns::who', namespace: 'a' }), 'from a'));
    assert.equal(await caller.trigger({ function_id: 'ns::who', namespace: 'b' }), 'from b');
    assert.equal(await caller.trigger({ function_id: 'ns::who' }), 'from default');
    assert.equal(await caller.trigger({ function_id: 'ns::who', namespace: 'default' }), 'from default');
    // A worker's own calls resolve in its namespace unless they name another.
    const inA = pool.make('ns-caller-a', { namespace: 'a' });
    assert.equal(await inA.trigger({ function_id: 'ns::who' }), 'from a');
    assert.equal(await inA.trigger({ function_id: 'ns::who', namespace: 'b' }), 'from b');
    // The engine's own functions answer in every namespace.
    const rows = (await listed(inA)).filter((f) => f.function_id === 'ns::who');
    assert.deepEqual(rows.map((f) => [f.namespace, f.workers.map((x) => x.worker_name)]).sort(), [
      ['a', ['who-a']],
      ['b', ['who-b']],
      ['default', ['who-default']],
    ]);
    const workers = (await inA.trigger({ function_id: 'engine::workers::list' })) as { workers: Array<{ name: string; namespace: string }> };
    assert.equal(workers.workers.find((x) => x.name === 'who-a')?.namespace, 'a');
    assert.equal(workers.workers.find((x) => x.name === 'ns-caller')?.namespace, 'default');
  });

  test('a function of another namespace, or an unknown namespace, is function_not_found naming where it is', async () => {
    const w = pool.make('only-in-c', { namespace: 'c' });
    w.registerFunction('ns::only-c', () => 'c');
    await w.ready();
    const caller = pool.make('nf-caller');
    await assert.rejects(caller.trigger({ function_id: 'ns::only-c' }), {
      code: 'function_not_found',
      message: 'Function ns::only-c not found in namespace default. It is registered in namespace(s): c',
    });
    await assert.rejects(caller.trigger({ function_id: 'ns::only-c', namespace: 'nowhere' }), {
      code: 'function_not_found',
      message: 'Function ns::only-c not found in namespace nowhere. It is registered in namespace(s): c',
    });
    await assert.rejects(caller.trigger({ function_id: 'ns::absent' }), { code: 'function_not_found', message: 'Function ns::absent not found' });
    // An iii 0.22 client names no namespace: default.
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'invokefunction', invocation_id: 'r1', function_id: 'ns::only-c', data: {} });
    assert.equal(((await raw.next((f) => f.type === 'invocationresult')).error as { code: string }).code, 'function_not_found');
    raw.send({ type: 'invokefunction', invocation_id: 'r2', function_id: 'ns::only-c', data: {}, namespace: 'c' });
    assert.equal((await raw.next((f) => f.type === 'invocationresult')).result, 'c');
    raw.close();
  });

  test('two workers exporting one id in one namespace are replicas: both serve it (engine.namespace_conflicts: replicas)', async () => {
    await who(pool, 'rep-1', 'rep', 'one');
    await who(pool, 'rep-2', 'rep', 'two');
    const caller = pool.make('rep-caller', { namespace: 'rep' });
    const seen = new Set<unknown>();
    for (let i = 0; i < 8; i++) seen.add(await caller.trigger({ function_id: 'ns::who' }));
    assert.deepEqual([...seen].sort(), ['one', 'two']);
  });

  test('a worker that names its namespace after registering moves its functions there', async () => {
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'registerfunction', id: 'ns::late' });
    raw.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'late-mover', namespace: 'late' }, action: { type: 'void' } });
    const caller = pool.make('late-caller');
    await eventually(async () => {
      const rows = (await listed(caller)).filter((f) => f.function_id === 'ns::late');
      assert.deepEqual(rows.map((f) => f.namespace), ['late']);
    });
    raw.close();
  });

  test('a blank or oversized namespace is refused with invalid_namespace', async () => {
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'invokefunction', invocation_id: 'reg', function_id: 'engine::workers::register', data: { name: 'blank-ns', namespace: '  ' } });
    const res = await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'reg');
    assert.equal((res.error as { code: string }).code, 'invalid_namespace');
    raw.send({ type: 'registertrigger', id: 't-long', trigger_type: 'x', function_id: 'y::z', namespace: 'n'.repeat(129) });
    const t = await raw.next((f) => f.type === 'triggerregistrationresult' && f.id === 't-long');
    assert.equal((t.error as { code: string }).code, 'invalid_namespace');
    assert.throws(() => pool.make('blank-opt', { namespace: ' ' }), { code: 'invalid_namespace' });
    await assert.rejects(pool.make('blank-call').trigger({ function_id: 'ns::who', namespace: '' }), { code: 'invalid_namespace' });
    raw.close();
  });

  test("a binding fires its function in the binder's namespace, whatever the provider's", async () => {
    const held = new Map<string, TriggerBinding>();
    const prov = pool.make('ns-provider');
    await prov.registerTriggerType({ id: 'ns-hook' }, { registerTrigger: (b) => void held.set(b.id, b), unregisterTrigger: (b) => void held.delete(b.id) });
    await prov.ready();
    await who(pool, 'hook-default', undefined, 'default fired');
    const user = pool.make('hook-user', { namespace: 'hooks' });
    user.registerFunction('ns::who', () => 'hooks fired');
    const t = await user.registerTrigger({ type: 'ns-hook', function_id: 'ns::who' });
    const b = held.get(t.id)!;
    assert.equal(b.namespace, 'hooks');
    assert.equal(await prov.trigger({ function_id: b.function_id, bindingId: b.id }), 'hooks fired');
    const bindings = (await user.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ id: string; namespace: string }> };
    assert.equal(bindings.triggers.find((x) => x.id === t.id)?.namespace, 'hooks');
  });

  test('an enqueue in a namespace is refused (svc-queue runs jobs in default)', async () => {
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'invokefunction', invocation_id: 'q1', function_id: 'ns::who', data: {}, namespace: 'a', action: { type: 'enqueue', queue: 'q' } });
    const res = await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'q1');
    assert.equal((res.error as { code: string }).code, 'enqueue_error');
    raw.close();
  });
});

describe('namespaces with engine.namespace_conflicts: exclusive (iii 0.23 rules)', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine({ namespaceConflicts: 'exclusive' });
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a second owner of a function id in a namespace gets FUNCTION_NAMESPACE_CONFLICT and stays connected', async () => {
    const owner = await who(pool, 'owner', 'x', 'owner');
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'second', namespace: 'x' }, action: { type: 'void' } });
    raw.send({ type: 'registerfunction', id: 'ns::who' });
    const rej = await raw.next((f) => f.type === 'registrationrejected');
    assert.deepEqual(rej, { type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT', namespace: 'x', function_id: 'ns::who', owner_worker_id: rej.owner_worker_id });
    const rows = (await listed(owner)).filter((f) => f.function_id === 'ns::who' && f.namespace === 'x');
    assert.deepEqual(rows[0]?.workers.map((w) => w.worker_name), ['owner']);
    // The same id in another namespace is no conflict.
    raw.send({ type: 'invokefunction', invocation_id: 'p', function_id: 'engine::functions::list', data: {} });
    await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'p');
    assert.equal(raw.closed, false);
    raw.close();
  });

  test('a second live worker of one name in a namespace gets WORKER_NAMESPACE_CONFLICT and is closed', async () => {
    await who(pool, 'unique-name', 'y', 'first');
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'unique-name', namespace: 'y' }, action: { type: 'void' } });
    const rej = await raw.next((f) => f.type === 'registrationrejected');
    assert.equal(rej.code, 'WORKER_NAMESPACE_CONFLICT');
    assert.equal(rej.worker_name, 'unique-name');
    assert.equal(rej.namespace, 'y');
    await eventually(() => assert.equal(raw.closed, true));
  });
});
