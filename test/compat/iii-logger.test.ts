/**
 * The Logger of the published npm iii SDK (@iii-dev/helpers 0.22.1, iii-sdk 0.22.1's own helpers,
 * pinned beside it), telemetry on as by default: its lines travel as OTLP logs over /otel and the
 * engine keeps them, so `engine::logs::list` (what `svc logs` and the console read) shows them.
 * The PyPI releases: sdk/python/tests/test_iii_matrix.py.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { Logger } from '@iii-dev/helpers/observability';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let iii: IIIClient;
let svc: Worker;

before(async () => {
  eng = await startEngine();
  iii = registerIiiWorker(eng.url, { workerName: 'iii-logger' });
  iii.registerFunction('iii::log', async (input: { text: string }) => {
    new Logger(undefined, 'iii-orders').warn(input.text, { order: 42 });
    return null;
  });
  svc = registerWorker(eng.url, { workerName: 'svc-log-reader', echoLogs: false });
  await svc.ready();
});
after(async () => {
  await Promise.allSettled([iii?.shutdown(), svc?.shutdown()]);
  await eng?.stop();
});

interface Line {
  level: string;
  message: string;
  worker_name?: string;
  trace_id?: string;
  data?: unknown;
}

test("an npm iii worker's Logger line is in the engine's logs, with its level, data and name", { timeout: 30_000 }, async () => {
  await eventually(async () => {
    await svc.trigger({ function_id: 'iii::log', payload: { text: 'npm-iii-logger line' } });
  }, 10_000);
  let found: Line | undefined;
  await eventually(async () => {
    const r = (await svc.trigger({ function_id: 'engine::logs::list', payload: { text: 'npm-iii-logger line' } })) as { logs: Line[] };
    found = r.logs[0];
    assert.ok(found, 'the line arrived');
  }, 15_000);
  assert.deepEqual([found!.level, found!.message, found!.worker_name, found!.data], ['warn', 'npm-iii-logger line', 'iii-orders', { order: 42 }]);
  assert.match(found!.trace_id ?? '', /^[0-9a-f]{32}$/, 'the trace of the call it was logged in');
});
