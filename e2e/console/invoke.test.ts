/**
 * Invoking a function from the Functions page, in headless Chromium, when it fails: the page shows
 * the error and the worker's stack trace as lines, and links to the call's trace. Needs
 * console/dist (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

describe('console: invoking a function that fails', { timeout: 60_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    worker = registerWorker(eng.url, { workerName: 'orders-worker', echoLogs: false });
    worker.registerFunction('orders::process', (d: { id: number }) => {
      throw new Error(`order ${d.id} cannot be processed: payment declined`);
    });
    worker.registerFunction('orders::count', () => ({ count: 3 }));
    await worker.ready();
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await eng?.stop();
  });

  // Before: the error was `{"code": …, "message": …}` alone: the stack trace the worker sent was
  // dropped by the console server, and nothing led from the call to its trace.
  test('shows the error, the stack trace as lines, and a link to the trace of the call', async () => {
    await page.goto(`${console_.url}#/functions/${encodeURIComponent('orders::process')}`);
    await page.fill('[data-testid=payload]', '{"id": 7}');
    await page.click('[data-testid=invoke]');
    const result = page.locator('[data-testid=outcome] [data-testid=result]');
    await result.waitFor();
    assert.equal(await result.innerText(), 'invocation_failed order 7 cannot be processed: payment declined');
    assert.match(await page.locator('[data-testid=outcome-stack]').innerText(), /^Error: order 7 cannot be processed: payment declined\n\s+at /);
    await page.click('[data-testid=outcome-trace]');
    const span = page.locator('[data-testid=span-row][data-function="orders::process"]');
    await span.waitFor({ timeout: 5000 });
    assert.equal(await span.getAttribute('data-status'), 'error');
    assert.match(await page.locator('[data-testid=span-stack]').innerText(), /payment declined/);
  });

  test('a call that succeeds links to its trace too', async () => {
    await page.goto(`${console_.url}#/functions/${encodeURIComponent('orders::count')}`);
    await page.click('[data-testid=invoke]');
    assert.deepEqual(JSON.parse(await page.locator('[data-testid=result]').innerText()), { count: 3 });
    await page.click('[data-testid=outcome-trace]');
    await page.locator('[data-testid=span-row][data-function="orders::count"][data-status=ok]').waitFor({ timeout: 5000 });
  });
});
