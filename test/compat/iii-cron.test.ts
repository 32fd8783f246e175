/**
 * An unmodified iii-sdk 0.22.1 worker binding iii's `cron` trigger type, served by svc-cron: the
 * same config (`{expression}` with seconds first, as iii's cron worker takes it) and the payload
 * fields iii's handlers read (`trigger: "cron"`, `job_id`, `scheduled_time`, `actual_time`).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { startEngine } from '../helpers/engine.js';
import { startCronWorker, type RunningCronWorker } from '../../src/workers/cron/worker.js';
import { until } from '../workers/cron/helpers.js';

let engine: Awaited<ReturnType<typeof startEngine>>;
let cron: RunningCronWorker;
let iii: IIIClient;
const dir = mkdtempSync(join(tmpdir(), 'svc-cron-iii-'));

before(async () => {
  engine = await startEngine();
  cron = await startCronWorker({ url: engine.url, config: { data_dir: dir }, echoLogs: false });
});
after(async () => {
  await iii?.shutdown();
  await cron?.shutdown();
  await engine?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('an iii-sdk worker\'s cron trigger fires every second with iii\'s payload fields', async () => {
  iii = registerIiiWorker(engine.url, { workerName: 'iii-cron' });
  const fired: Array<Record<string, unknown> & { at: number }> = [];
  iii.registerFunction('iii::every_second', async (input: Record<string, unknown>) => {
    fired.push({ ...input, at: Date.now() });
    return null;
  });
  const trigger = iii.registerTrigger({ type: 'cron', function_id: 'iii::every_second', config: { expression: '* * * * * *' } });
  await until('three fires', () => fired.length >= 3, 15_000);
  trigger.unregister();
  for (const f of fired.slice(0, 3)) {
    assert.equal(f.trigger, 'cron');
    assert.equal(typeof f.job_id, 'string');
    assert.equal(f.job_id, f.trigger_id);
    const t = Date.parse(String(f.scheduled_time));
    assert.equal(t % 1000, 0);
    assert.ok(Date.parse(String(f.actual_time)) >= t);
    assert.ok(f.at - t <= 100, `ran ${f.at - t} ms after its second`);
  }
  const seconds = fired.slice(0, 3).map((f) => Date.parse(String(f.scheduled_time)));
  assert.deepEqual([seconds[1]! - seconds[0]!, seconds[2]! - seconds[1]!], [1000, 1000]);
});
