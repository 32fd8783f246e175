/**
 * engine::queues::list: calls in flight per function, and `exclude_trace_prefix`, which leaves out
 * the calls of traces a caller started itself (the console's Queues page counted its own reads).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually, WorkerPool } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
const pool = new WorkerPool(() => eng.url);
let w: Worker;
const waiting: Array<() => void> = [];
const release = (): void => {
  for (const f of waiting.splice(0)) f();
};
before(async () => {
  eng = await startEngine();
  w = pool.make('slow');
  w.registerFunction('slow::wait', () => new Promise<string>((resolve) => waiting.push(() => resolve('done'))));
  await w.ready();
});
after(async () => {
  release();
  await pool.closeAll();
  await eng.stop();
});

type InFlight = { queues: Array<{ function_id: string; in_flight: number }> };
const inFlight = async (payload: unknown): Promise<number> =>
  ((await w.trigger({ function_id: 'engine::queues::list', payload })) as InFlight).queues.find((q) => q.function_id === 'slow::wait')?.in_flight ?? 0;

test('calls in a trace whose id begins with exclude_trace_prefix are left out; others count', async () => {
  const prefix = '0af7651916cd43dd';
  // One call in a trace of that prefix (as the console's reads are), one in a trace of the engine's.
  const mine = w.trigger({ function_id: 'slow::wait', payload: {}, parent: { traceparent: `00-${prefix}00000000a1b2c3d4-${prefix}-01` } });
  const other = w.trigger({ function_id: 'slow::wait', payload: {} });
  await eventually(async () => assert.equal(await inFlight({}), 2));
  assert.equal(await inFlight({ exclude_trace_prefix: prefix }), 1);
  assert.equal(await inFlight({ exclude_trace_prefix: 'ffff' }), 2);
  for (const bad of ['', 'XYZ', 42, 'a'.repeat(33)]) {
    await assert.rejects(w.trigger({ function_id: 'engine::queues::list', payload: { exclude_trace_prefix: bad } }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'invalid_payload');
      assert.match(e.message, /exclude_trace_prefix must be 1 to 32 lowercase hex digits/);
      return true;
    });
  }
  release();
  assert.deepEqual(await Promise.all([mine, other]), ['done', 'done']);
});
