/**
 * The trigger types of iii's `EngineTriggers` (npm iii-sdk 0.22.1), served by the engine itself
 * (src/engine/engine-triggers.ts): an iii worker binds them with the SDK's own constants and gets
 * iii's payloads, `{event: "functions_changed", functions}` and `OtelLogEvent` (typed with
 * @iii-dev/helpers/observability's declaration, compiled in this file).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { EngineTriggers } from 'iii-sdk/engine';
import type { OtelLogEvent } from '@iii-dev/helpers/observability';
import { Logger, registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';

let eng: Awaited<ReturnType<typeof startEngine>>;
let iii: IIIClient;
let svc: Worker;
const functionEvents: Array<{ event: string; functions: Array<{ function_id: string }> }> = [];
const logEvents: OtelLogEvent[] = [];

before(async () => {
  eng = await startEngine({ functionsPollMs: 100 });
  svc = registerWorker(eng.url, { workerName: 'svc-engine-triggers', echoLogs: false });
  await svc.ready();
  iii = registerIiiWorker(eng.url, { workerName: 'iii-engine-triggers', otel: { enabled: false } });
  iii.registerFunction('iii::on-functions', async (e: (typeof functionEvents)[number]) => void functionEvents.push(e));
  iii.registerFunction('iii::on-log', async (e: OtelLogEvent) => void logEvents.push(e));
  iii.registerTrigger({ type: EngineTriggers.FUNCTIONS_AVAILABLE, function_id: 'iii::on-functions', config: {} });
  iii.registerTrigger({ type: EngineTriggers.LOG, function_id: 'iii::on-log', config: { level: 'warn' } });
  const bound = async () => {
    const r = (await svc.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ function_id: string; status: string }> };
    return ['iii::on-functions', 'iii::on-log'].every((f) => r.triggers.some((t) => t.function_id === f && t.status === 'active'));
  };
  await eventually(async () => assert.ok(await bound(), 'both engine trigger bindings are active'), 10_000);
});
after(async () => {
  await Promise.allSettled([iii?.shutdown(), svc?.shutdown()]);
  await eng?.stop();
});

test('engine::functions-available fires functions_changed with the function list when functions change', { timeout: 30_000 }, async () => {
  functionEvents.length = 0;
  svc.registerFunction('svc::appeared', async () => null);
  await eventually(() => {
    const e = functionEvents.find((x) => x.functions.some((f) => f.function_id === 'svc::appeared'));
    assert.ok(e, JSON.stringify(functionEvents).slice(0, 500));
    assert.equal(e.event, 'functions_changed');
  }, 10_000);
});

test("log fires iii's OtelLogEvent for each new line at or above the bound level", { timeout: 30_000 }, async () => {
  const logger = new Logger(svc, { echo: false });
  svc.registerFunction('svc::logs', async () => {
    logger.info('quiet line from svc');
    logger.warn('loud line from svc', { order: 7 });
    return null;
  });
  await eventually(async () => assert.equal(await svc.trigger({ function_id: 'svc::logs', payload: {} }), null), 10_000);
  await eventually(() => assert.ok(logEvents.some((e) => e.body === 'loud line from svc')), 10_000);
  const e = logEvents.find((x) => x.body === 'loud line from svc')!;
  assert.deepEqual([e.severity_text, e.severity_number, e.service_name, e.resource['service.name']], ['WARN', 13, 'svc-engine-triggers', 'svc-engine-triggers']);
  assert.deepEqual(e.attributes['log.data'], { order: 7 });
  assert.equal(e.attributes['function_id'], 'svc::logs');
  assert.ok(Number.isFinite(e.timestamp_unix_nano) && e.timestamp_unix_nano > 1e18);
  assert.ok(!logEvents.some((x) => x.body === 'quiet line from svc'), 'below the bound level: not fired');
});

test('a log binding with an unknown level is refused; binding needs the right to read what it reveals', { timeout: 30_000 }, async () => {
  svc.registerFunction('svc::on-log', async () => null);
  await assert.rejects(svc.registerTrigger({ type: 'log', function_id: 'svc::on-log', config: { level: 'loud' } }), (err: { code?: string; message?: string }) => {
    assert.equal(err.code, 'trigger_registration_failed');
    assert.match(err.message ?? '', /"level" must be one of debug, info, warn, error; got "loud"/);
    return true;
  });
  const types = (await svc.trigger({ function_id: 'engine::triggers::list' })) as { trigger_types: Array<{ id: string }> } | { triggers: Array<{ id: string }> };
  const ids = JSON.stringify(types);
  assert.ok(ids.includes('engine::functions-available') && ids.includes('"log"'), ids.slice(0, 500));
});
