/**
 * Times in the console, in headless Chromium: a job dead-lettered, a log line written or a trace
 * started on another day shows that day, not only a time of day. The browser's clock is moved two days on, as if the page
 * were opened later. Needs console/dist (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { registerWorker, TriggerAction, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startQueueWorker, type RunningQueueWorker } from '../../src/workers/queue/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

const DAY_MS = 24 * 3600_000;

describe('console: dates of other days', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-console-dlq-'));
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let queue: RunningQueueWorker;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    queue = await startQueueWorker({ url: eng.url, config: { data_dir: dir, queues: { orders: { max_attempts: 1 } } } });
    worker = registerWorker(eng.url, { workerName: 'orders-worker', echoLogs: false });
    worker.registerFunction('orders::process', () => {
      throw new Error('payment declined');
    });
    worker.registerFunction('orders::count', () => ({ count: 0 }));
    await worker.ready();
    await worker.trigger({ function_id: 'orders::count', payload: {} });
    await worker.trigger({ function_id: 'orders::process', payload: { id: 1 }, action: TriggerAction.Enqueue({ queue: 'orders' }) });
    const deadline = Date.now() + 15_000;
    for (;;) {
      const r = await worker.trigger<{ total: number }>({ function_id: 'queue::jobs', payload: { queue: 'orders', state: 'dlq' } });
      if (r.total === 1) break;
      assert.ok(Date.now() < deadline, 'the job reaches the DLQ');
      await new Promise((res) => setTimeout(res, 100));
    }
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await queue?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // Before: "failed at 14:02:11", the same today as two days later.
  test('a job dead-lettered two days ago shows its date', async () => {
    const failedAt = Date.now();
    await page.clock.setFixedTime(failedAt + 2 * DAY_MS);
    await page.goto(`${console_.url}#/queues/orders`);
    const error = page.locator('[data-testid=job-error]');
    await error.waitFor();
    const date = await page.evaluate((ms) => new Date(ms).toLocaleDateString(), failedAt);
    assert.ok((await error.innerText()).includes(`failed at ${date} `), `${await error.innerText()} names ${date}`);
  });

  // Before: "14:02:11.123", the same today as two days later.
  test('log lines and traces of two days ago show their date', async () => {
    const then = Date.now();
    await page.clock.setFixedTime(then + 2 * DAY_MS);
    const date = await page.evaluate((ms) => new Date(ms).toLocaleDateString(), then);
    await page.goto(`${console_.url}#/logs`);
    const line = page.locator('[data-testid=log-row]', { hasText: 'orders::process failed' }).first();
    await line.waitFor();
    assert.ok((await line.locator('td').first().innerText()).startsWith(`${date} `), await line.innerText());
    await page.goto(`${console_.url}#/traces`);
    const trace = page.locator('[data-testid=trace-row][data-root="orders::count"]').first();
    await trace.waitFor();
    assert.ok((await trace.locator('td').first().innerText()).startsWith(`${date} `), await trace.innerText());
  });

  test('today, the time alone', async () => {
    await page.clock.setFixedTime(Date.now());
    await page.goto(`${console_.url}#/queues/orders`);
    const error = page.locator('[data-testid=job-error]');
    await error.waitFor();
    assert.match(await error.innerText(), /failed at \d\d:\d\d:\d\d after/);
    await page.goto(`${console_.url}#/logs`);
    const line = page.locator('[data-testid=log-row]', { hasText: 'orders::process failed' }).first();
    await line.waitFor();
    assert.match(await line.locator('td').first().innerText(), /^\d\d:\d\d:\d\d\.\d{3}$/);
  });
});
