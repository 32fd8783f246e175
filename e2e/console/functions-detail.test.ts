/**
 * The Functions page with a long list, in headless Chromium (1280×800): the detail of a function
 * picked low in the list is in view beside it, not at the top of the page out of sight. Needs
 * console/dist (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

const COUNT = 80;
const id = (i: number): string => `catalog::item_${String(i).padStart(3, '0')}`;

describe('console: the Functions detail beside a long list', { timeout: 60_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    worker = registerWorker(eng.url, { workerName: 'catalog', echoLogs: false });
    for (let i = 0; i < COUNT; i++) worker.registerFunction(id(i), () => ({ ok: i }));
    await worker.ready();
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await eng?.stop();
  });

  // Before: the detail stayed at the top of the page; picking the last function showed nothing.
  test('picking the last function of a long list shows its detail in the window', async () => {
    await page.goto(`${console_.url}#/functions`);
    const last = page.locator(`[data-testid=function-item][data-id="${id(COUNT - 1)}"]`);
    await last.scrollIntoViewIfNeeded();
    await last.click();
    await page.locator('[data-testid=function-detail] h2', { hasText: id(COUNT - 1) }).waitFor();
    const scrolled = await page.evaluate(() => window.scrollY);
    assert.ok(scrolled > 400, `the list is longer than the window (scrolled ${scrolled} px)`);
    const box = await page.locator('[data-testid=function-detail-panel]').boundingBox();
    assert.ok(box, 'the detail panel is laid out');
    assert.ok(box.y >= 0 && box.y < 800 - 100, `the detail's top is in the window: y = ${box.y}`);
    // Its Invoke button is reachable without scrolling back up.
    const invoke = await page.locator('[data-testid=invoke]').boundingBox();
    assert.ok(invoke && invoke.y >= 0 && invoke.y + invoke.height <= 800, `Invoke in the window: ${JSON.stringify(invoke)}`);
  });
});
