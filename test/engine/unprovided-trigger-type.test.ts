/**
 * A binding of a trigger type no worker provides is told of in the engine's log once it has waited
 * 5 s. Before, it waited in silence: an iii program binding iii's `subscribe` (pubsub, which svc has
 * no counterpart of) or a typo'd type saw registerTrigger succeed and its function never run.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually, sleep } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let binder: Worker;
let provider: Worker;
before(async () => {
  eng = await startEngine();
  binder = registerWorker(eng.url, { workerName: 'orders-iii', echoLogs: false });
  provider = registerWorker(eng.url, { workerName: 'ticker', echoLogs: false });
  await Promise.all([binder.ready(5000), provider.ready(5000)]);
});
after(async () => {
  await binder.shutdown();
  await provider.shutdown();
  await eng.stop();
});

const warnings = async (): Promise<string[]> => {
  const { logs } = (await binder.trigger({ function_id: 'engine::logs::list', payload: { level: 'warn' } })) as { logs: Array<{ message: string; worker_name?: string }> };
  return logs.map((l) => l.message);
};

test('a binding whose type has no provider after 5 s is logged, naming the type, the binding and the types provided; one provided in time is not', async () => {
  binder.registerFunction('orders::on_event', () => null);
  binder.registerFunction('orders::tick', () => null);
  const started = Date.now();
  await binder.registerTrigger({ type: 'subscribe', function_id: 'orders::on_event', config: { topic: 'events' } });
  await binder.registerTrigger({ type: 'tick', function_id: 'orders::tick', config: {} });
  // `tick` gets its provider within the wait: nothing to say about it.
  await sleep(1000);
  provider.registerTriggerType({ id: 'tick', description: 'ticks' }, { registerTrigger: async () => undefined, unregisterTrigger: async () => undefined });
  await eventually(async () => assert.ok((await warnings()).some((m) => m.startsWith('trigger type "subscribe"')), 'no warning yet'), 10_000);
  assert.ok(Date.now() - started >= 4900, 'not before 5 s');
  const told = (await warnings()).filter((m) => m.startsWith('trigger type'));
  assert.deepEqual(told, [
    'trigger type "subscribe" has no provider (iii\'s pubsub; svc has none: svc-queue\'s durable:subscriber with queue::publish is the closest): 1 binding(s) wait for one (orders::on_event from orders-iii); types provided now: engine::functions-available, log, tick',
  ]);
});
