/**
 * svc-state as the published npm iii-sdk (pinned 0.22.1) types it: the handler of a `state` trigger
 * and the answers of state::list/set/delete/update are typed with iii-sdk/state's own declarations, which
 * this file is compiled against (tsc), and checked at run time against its StateEventType enum.
 * The PyPI releases validate the same with their pydantic models: sdk/python/tests/test_iii_matrix.py.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { StateEventType, type IState, type StateEventData, type StateSetResult, type StateUpdateInput, type StateUpdateResult } from 'iii-sdk/state';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let state: RunningStateWorker;
let iii: IIIClient;
const dir = mkdtempSync(join(tmpdir(), 'svc-iii-state-'));
const events: StateEventData<unknown>[] = [];

/** iii's IState over `trigger`, as an iii program writes it. */
const iiiState = (client: IIIClient): Pick<IState, 'set' | 'list' | 'delete' | 'update'> => ({
  update: async <T>(input: StateUpdateInput) => (await client.trigger({ function_id: 'state::update', payload: input })) as StateUpdateResult<T>,
  set: async <T>(input: { scope: string; key: string; value: unknown }) => (await client.trigger({ function_id: 'state::set', payload: input })) as StateSetResult<T>,
  list: async <T>(input: { scope: string }) => (await client.trigger({ function_id: 'state::list', payload: input })) as T[],
  delete: async (input: { scope: string; key: string }) => client.trigger({ function_id: 'state::delete', payload: input }),
});

before(async () => {
  eng = await startEngine();
  state = await startStateWorker({ url: eng.url, config: { data_dir: dir } });
  iii = registerIiiWorker(eng.url, { workerName: 'iii-state' });
  iii.registerFunction('iii::on-state', async (event: StateEventData<unknown>) => {
    events.push(event);
    return null;
  });
  iii.registerTrigger({ type: 'state', function_id: 'iii::on-state', config: { scope: 'iii-typed' } });
});

after(async () => {
  await Promise.allSettled([iii?.shutdown(), state?.shutdown()]);
  await eng?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("state answers and events have iii-sdk/state's shapes", { timeout: 30_000 }, async () => {
  const s = iiiState(iii);
  // The binding is made once the iii worker's registrations reach svc-state.
  await eventually(async () => {
    await s.set({ scope: 'iii-typed', key: 'probe', value: 0 });
    assert.ok(events.length > 0);
  }, 10_000);
  events.length = 0;
  await s.delete({ scope: 'iii-typed', key: 'probe' });
  const set = await s.set<{ n: number }>({ scope: 'iii-typed', key: 'a', value: { n: 1 } });
  assert.deepEqual(set, { old_value: null, new_value: { n: 1 } });
  await s.set({ scope: 'iii-typed', key: 'b', value: 2 });
  const values = await s.list<{ n: number } | number>({ scope: 'iii-typed' });
  assert.deepEqual(values, [{ n: 1 }, 2], 'a flat array of values, in key order');
  // iii's engine answers the deleted value itself (the SDK's StateDeleteResult type says {old_value}).
  assert.equal(await s.delete({ scope: 'iii-typed', key: 'b' }), 2);
  assert.equal(await s.delete({ scope: 'iii-typed', key: 'never-set' }), null);
  await eventually(() => assert.equal(events.length, 5), 5000);
  const kinds = new Set<string>(Object.values(StateEventType));
  for (const e of events) assert.ok(kinds.has(e.event_type), `event_type ${e.event_type} is one of iii's StateEventType`);
  assert.deepEqual(
    events.map((e) => [e.event_type, e.key, e.old_value, e.new_value]).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
    [
      [StateEventType.Created, 'a', null, { n: 1 }],
      [StateEventType.Created, 'b', null, 2],
      [StateEventType.Deleted, 'b', 2, null],
      [StateEventType.Deleted, 'never-set', null, null],
      [StateEventType.Deleted, 'probe', 0, null],
    ].sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
  );
});

test("state::update as iii-sdk/state types it: best-effort per op with errors, a string path is one field", { timeout: 30_000 }, async () => {
  const s = iiiState(iii);
  // Ops typed by iii's UpdateOp (string paths name first-level fields, arrays are nested paths).
  const input: StateUpdateInput = {
    scope: 'iii-update',
    key: 'doc',
    ops: [
      { type: 'set', path: '', value: { n: 1, name: 'ada' } },
      { type: 'increment', path: 'n', by: 2 },
      { type: 'increment', path: 'name', by: 1 }, // a string: this op fails, the others apply
      { type: 'set', path: 'a.b', value: true },
      { type: 'merge', path: ['nested', 'x'], value: { y: 1 } },
      { type: 'append', path: 'text', value: 'he' },
      { type: 'append', path: 'text', value: 'llo' },
      { type: 'remove', path: 'missing' },
    ],
  };
  const r = await s.update<Record<string, unknown>>(input);
  const want = { n: 3, name: 'ada', 'a.b': true, nested: { x: { y: 1 } }, text: 'hello' };
  assert.ok(r);
  assert.deepEqual(r.new_value, want);
  assert.deepEqual(
    r.errors?.map((e) => [e.op_index, e.code]),
    [[2, 'type_error']],
  );
  assert.match(r.errors![0]!.message, /ops\[2\] \(increment at "name"\)/);
  assert.deepEqual(await iii.trigger({ function_id: 'state::get', payload: { scope: 'iii-update', key: 'doc' } }), want);
  // No op failed: no errors field, as iii leaves it out when empty.
  const ok = await s.update<number>({ scope: 'iii-update', key: 'count', ops: [{ type: 'increment', path: '', by: 1 }] });
  assert.deepEqual(ok, { old_value: null, new_value: 1 });
});
