/**
 * The console by keyboard alone, in headless Chromium: Tab reaches every list entry that opens
 * something (a trace, a queue's jobs) and Enter opens it, as a click does. Needs console/dist
 * (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startQueueWorker, type RunningQueueWorker } from '../../src/workers/queue/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

/** Presses Tab until the focus is inside `selector` (at most `max` times); whether it got there. */
async function tabInto(page: Page, selector: string, max = 40): Promise<boolean> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((sel) => document.activeElement?.closest(sel) !== null && document.activeElement?.closest(sel) !== undefined, selector)) return true;
  }
  return false;
}

describe('console: by keyboard', { timeout: 90_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-console-keys-'));
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let queue: RunningQueueWorker;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    queue = await startQueueWorker({ url: eng.url, config: { data_dir: dir, queues: { orders: {} } } });
    worker = registerWorker(eng.url, { workerName: 'orders-worker', echoLogs: false });
    worker.registerFunction('orders::process', (d: { id: number }) => ({ id: d.id }));
    await worker.ready();
    await worker.trigger({ function_id: 'orders::process', payload: { id: 1 } });
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

  // Before: trace rows answered clicks only; Tab went from the sidebar past the table.
  test('Traces: Tab reaches a trace and Enter opens it', async () => {
    await page.goto(`${console_.url}#/traces`);
    await page.locator('[data-testid=trace-row][data-root="orders::process"]').waitFor();
    assert.ok(await tabInto(page, '[data-testid=traces-table]'), 'Tab reaches the traces table');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid=span-row][data-function="orders::process"]').waitFor({ timeout: 5000 });
  });

  test("Queues: Tab reaches a queue and Enter opens its jobs", async () => {
    await page.goto(`${console_.url}#/queues`);
    await page.locator('[data-testid=queue-row][data-queue=orders]').waitFor();
    assert.ok(await tabInto(page, '[data-testid=queues-table]'), 'Tab reaches the queues table');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid=queue-detail]').waitFor({ timeout: 5000 });
  });
});
