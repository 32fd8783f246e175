import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TriggerBinding, Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

/** A provider of trigger type `type` that records what the engine hands it and refuses config {refuse: true} (or {refuse: <its name>}). */
async function provider(w: Worker, type: string, mode?: 'one' | 'all', name?: string): Promise<Map<string, TriggerBinding>> {
  const held = new Map<string, TriggerBinding>();
  await w.registerTriggerType(
    { id: type, description: `test type ${type}`, ...(mode ? { binding_mode: mode } : {}) },
    {
      registerTrigger: (b) => {
        const refuse = (b.config as { refuse?: boolean | string }).refuse;
        if (refuse === true || (name !== undefined && refuse === name)) throw Object.assign(new Error(`refused ${b.function_id}`), { code: 'route_conflict' });
        held.set(b.id, b);
      },
      unregisterTrigger: (b) => {
        held.delete(b.id);
      },
    },
  );
  await w.ready();
  return held;
}

describe('trigger types and bindings', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('a binding is forwarded to the provider of its type, and acknowledged to the registering worker', async () => {
    const p = pool.make('prov-a');
    const held = await provider(p, 'webhook');
    const user = pool.make('user-a');
    const t = await user.registerTrigger({ type: 'webhook', function_id: 'hook::fn', config: { path: '/a' } });
    assert.equal(held.get(t.id)?.function_id, 'hook::fn');
    assert.deepEqual(held.get(t.id)?.config, { path: '/a' });
    t.unregister();
    await eventually(() => assert.equal(held.has(t.id), false));
  });

  test("the provider's refusal reaches the registering worker with its code", async () => {
    const p = pool.make('prov-b');
    await provider(p, 'strict');
    const user = pool.make('user-b');
    await assert.rejects(user.registerTrigger({ type: 'strict', function_id: 'x::y', config: { refuse: true } }), {
      code: 'route_conflict',
      message: 'refused x::y',
    });
    const list = (await user.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ function_id: string }> };
    assert.equal(list.triggers.some((b) => b.function_id === 'x::y'), false);
  });

  test('a binding for a type nobody provides yet is parked, then handed over when a provider registers', async () => {
    const user = pool.make('user-c');
    const t = await user.registerTrigger({ type: 'later', function_id: 'later::fn', config: {} });
    const list = (await user.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ id: string; status: string }> };
    assert.equal(list.triggers.find((b) => b.id === t.id)?.status, 'parked');
    const p = pool.make('prov-c');
    const held = await provider(p, 'later');
    await eventually(() => assert.ok(held.has(t.id)));
  });

  test("when the provider leaves, its bindings move to the next provider; with none they are parked", async () => {
    const p1 = pool.make('prov-d1');
    const held1 = await provider(p1, 'handover');
    const p2 = pool.make('prov-d2');
    const held2 = await provider(p2, 'handover');
    const user = pool.make('user-d');
    const t = await user.registerTrigger({ type: 'handover', function_id: 'ho::fn', config: {} });
    assert.ok(held1.has(t.id));
    assert.equal(held2.has(t.id), false);
    await p1.shutdown();
    await eventually(() => assert.ok(held2.has(t.id)));
    await p2.shutdown();
    await eventually(async () => {
      const list = (await user.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ id: string; status: string }> };
      assert.equal(list.triggers.find((b) => b.id === t.id)?.status, 'parked');
    });
  });

  test('unregistertriggertype hands bindings on like a departure', async () => {
    const p1 = pool.make('prov-e1');
    const held1 = new Map<string, TriggerBinding>();
    const type = await p1.registerTriggerType(
      { id: 'switch' },
      { registerTrigger: (b) => void held1.set(b.id, b), unregisterTrigger: (b) => void held1.delete(b.id) },
    );
    const p2 = pool.make('prov-e2');
    const held2 = await provider(p2, 'switch');
    const user = pool.make('user-e');
    const t = await user.registerTrigger({ type: 'switch', function_id: 's::fn', config: {} });
    assert.ok(held1.has(t.id));
    type.unregister();
    await eventually(() => assert.ok(held2.has(t.id)));
    assert.equal(held1.has(t.id), false);
  });

  test("the owner's bindings are removed from the provider when the owner leaves, and replayed when it reconnects", async () => {
    const p = pool.make('prov-f');
    const held = await provider(p, 'owned');
    const user = pool.make('user-f');
    const t = await user.registerTrigger({ type: 'owned', function_id: 'o::fn', config: {} });
    assert.ok(held.has(t.id));
    user.simulateDisconnect();
    // Gone with the connection, back with the replay (same binding id).
    await eventually(async () => {
      await sleep(20);
      assert.ok(held.has(t.id));
    });
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'registertrigger', id: 'raw-binding', trigger_type: 'owned', function_id: 'r::fn', config: {} });
    await eventually(() => assert.ok(held.has('raw-binding')));
    raw.close();
    await eventually(() => assert.equal(held.has('raw-binding'), false));
  });

  test('an iii-style client (no hello) gets errors only, never acknowledgements', async () => {
    const p = pool.make('prov-g');
    await provider(p, 'quiet');
    const raw = await RawClient.connect(eng.url);
    raw.send({ type: 'registertrigger', id: 'ok-1', trigger_type: 'quiet', function_id: 'q::ok', config: {} });
    raw.send({ type: 'registertrigger', id: 'bad-1', trigger_type: 'quiet', function_id: 'q::bad', config: { refuse: true } });
    const err = await raw.next((f) => f.type === 'triggerregistrationresult');
    assert.equal(err.id, 'bad-1');
    assert.equal((err.error as { code: string }).code, 'route_conflict');
    assert.equal(await raw.receives((f) => f.type === 'triggerregistrationresult', 200), false);
    assert.equal(await raw.receives((f) => f.type === 'hello', 50), false);
    raw.close();
  });

  describe('binding_mode "all": every provider holds every binding', () => {
    const listed = async (w: Worker, id: string) =>
      ((await w.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ id: string; status: string; providers: unknown[] }> }).triggers.find((b) => b.id === id);

    test('each provider gets it, a later one too; one leaving keeps it active at the others; none parks it', async () => {
      const p1 = pool.make('all-1');
      const p2 = pool.make('all-2');
      const held1 = await provider(p1, 'fanout', 'all');
      const held2 = await provider(p2, 'fanout', 'all');
      const user = pool.make('all-user');
      const t = await user.registerTrigger({ type: 'fanout', function_id: 'f::fn', config: {} });
      await eventually(() => assert.ok(held1.has(t.id) && held2.has(t.id)));
      const p3 = pool.make('all-3');
      const held3 = await provider(p3, 'fanout', 'all');
      await eventually(() => assert.ok(held3.has(t.id)));
      assert.equal((await listed(user, t.id))?.providers.length, 3);
      // The type's listing names every replica that holds its bindings, not only the first.
      const types = (await user.trigger({ function_id: 'engine::triggers::list' })) as { trigger_types: Array<{ id: string; providers: Array<{ worker_name: string }> }> };
      assert.deepEqual(types.trigger_types.find((x) => x.id === 'fanout')?.providers.map((p) => p.worker_name), ['all-1', 'all-2', 'all-3']);
      await p1.shutdown();
      await eventually(async () => assert.equal((await listed(user, t.id))?.providers.length, 2));
      assert.equal((await listed(user, t.id))?.status, 'active');
      await p2.shutdown();
      await p3.shutdown();
      await eventually(async () => assert.equal((await listed(user, t.id))?.status, 'parked'));
    });

    /** A provider of `type` (binding_mode all) that answers after `delayMs`, refusing when `refuse`. */
    async function slowProvider(w: Worker, type: string, delayMs: number, refuse: boolean): Promise<Set<string>> {
      const held = new Set<string>();
      await w.registerTriggerType(
        { id: type, binding_mode: 'all' },
        {
          registerTrigger: async (b) => {
            await sleep(delayMs);
            if (refuse) throw Object.assign(new Error(`refused ${b.function_id}`), { code: 'route_conflict' });
            held.add(b.id);
          },
          unregisterTrigger: (b) => void held.delete(b.id),
        },
      );
      await w.ready();
      return held;
    }

    test("a refusal before any provider accepted ends the binding at every provider and reaches the owner", async () => {
      const held1 = await slowProvider(pool.make('allr-1'), 'fanout-strict', 300, false);
      await slowProvider(pool.make('allr-2'), 'fanout-strict', 0, true);
      const user = pool.make('allr-user');
      await assert.rejects(user.registerTrigger({ type: 'fanout-strict', function_id: 'g::fn', config: {} }), { code: 'route_conflict' });
      await sleep(400); // allr-1 accepts late: the engine has ended the binding and takes it back
      await eventually(async () => {
        assert.equal(held1.size, 0);
        const list = (await user.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ function_id: string }> };
        assert.equal(list.triggers.some((b) => b.function_id === 'g::fn'), false);
      });
    });

    test('a refusal after another provider accepted drops only the refusing provider', async () => {
      const held1 = await slowProvider(pool.make('allk-1'), 'fanout-keep', 0, false);
      await slowProvider(pool.make('allk-2'), 'fanout-keep', 300, true);
      const user = pool.make('allk-user');
      const t = await user.registerTrigger({ type: 'fanout-keep', function_id: 'k::fn', config: {} });
      assert.ok(held1.has(t.id));
      await sleep(400);
      const b = await listed(user, t.id);
      assert.equal(b?.status, 'active');
      assert.equal(b?.providers.length, 1);
      assert.ok(held1.has(t.id));
    });

    test('a provider declaring the other mode follows the type; a mode that is neither is refused where the frame enters', async () => {
      const p1 = pool.make('mix-1');
      const p2 = pool.make('mix-2');
      const held1 = await provider(p1, 'mixed', 'one');
      const held2 = await provider(p2, 'mixed', 'all');
      const user = pool.make('mix-user');
      const t = await user.registerTrigger({ type: 'mixed', function_id: 'm::fn', config: {} });
      assert.ok(held1.has(t.id));
      assert.equal(held2.has(t.id), false);
      const raw = await RawClient.connect(eng.url);
      raw.send({ type: 'registertriggertype', id: 'odd', binding_mode: 'some' });
      const err = await raw.next((f) => f.type === 'error');
      assert.match((err.error as { message: string }).message, /binding_mode.*"one" or "all"/);
      raw.close();
    });
  });
});
