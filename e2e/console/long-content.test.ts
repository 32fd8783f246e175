/**
 * The console with what a real project puts in it: long worker names, function ids and state keys,
 * large values, and failed calls whose error lines carry the worker's stack trace. In headless
 * Chromium at 1280×800, every page must fit the window (nothing pushed off its right edge) and
 * keep what it shows readable. Needs console/dist (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

const WORKER = 'orders-worker-with-a-rather-long-name-for-layout-checks';
const LONG_FN = 'orders::a_very_long_function_name_that_goes_on_and_on_for_layout_checks::v2';
const LONG_KEY = `customer-${'x'.repeat(160)}`;

/** How far the page reaches past the window's right edge (0 when it fits). */
const overflow = (page: Page): Promise<number> => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

describe('console: long names, large values and stack traces fit the window', { timeout: 90_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-console-long-'));
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let state: RunningStateWorker;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    state = await startStateWorker({ url: eng.url, config: { data_dir: join(dir, 'state') } });
    worker = registerWorker(eng.url, { workerName: WORKER, echoLogs: false });
    worker.registerFunction('orders::process', (d: { id: number }) => {
      throw new Error(`order ${d.id} cannot be processed: payment declined`);
    });
    worker.registerFunction(LONG_FN, () => ({ ok: true }));
    await worker.ready();
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'customers', key: LONG_KEY, value: { name: 'Alice', note: 'lorem ipsum '.repeat(40) } } });
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'customers', key: 'bob', value: { name: 'Bob', age: 30 } } });
    await assert.rejects(worker.trigger({ function_id: 'orders::process', payload: { id: 7 } }), /payment declined/);
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await state?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // Before: the error line's data was one line of JSON, its stack trace a string of `\n` escapes
  // and file paths that widened the table ~700 px past the window, the trace link with it.
  test('Logs: a failed call shows its stack trace as lines, and the page fits the window', async () => {
    await page.goto(`${console_.url}#/logs`);
    const row = page.locator('[data-testid=log-row].log-error', { hasText: 'orders::process failed' });
    await row.waitFor();
    assert.doesNotMatch(await row.innerText(), /\\n\s*at /, 'no escaped newlines in the line');
    await row.getByText('stack trace').click();
    const stack = await row.locator('[data-testid=log-stack]').innerText();
    assert.match(stack, /^Error: order 7 cannot be processed: payment declined\n\s+at /);
    assert.equal(await overflow(page), 0);
    const link = await row.getByRole('button', { name: 'trace' }).boundingBox();
    assert.ok(link && link.x + link.width <= 1280, `the trace link is inside the window: ${JSON.stringify(link)}`);
  });

  // Before: the 170-character key took the table's width; the value column was ~4 characters wide
  // and the Edit/Delete buttons hung past the card.
  test('State: a long key wraps and leaves the value readable', async () => {
    await page.goto(`${console_.url}#/state/customers`);
    const bob = page.locator('[data-testid=state-row][data-key=bob] [data-testid=state-value]');
    await bob.waitFor();
    assert.equal(await overflow(page), 0);
    const box = await bob.boundingBox();
    assert.ok(box && box.width >= 300, `the value column is ${box?.width} px wide`);
    assert.match(await bob.innerText(), /"name": "Bob",\n/);
  });

  // Before: the id was cut off at the list's edge.
  test('Functions: a long function id is shown whole', async () => {
    await page.goto(`${console_.url}#/functions`);
    const id = page.locator(`[data-testid=function-item][data-id="${LONG_FN}"] .mono`);
    await id.waitFor();
    const [scroll, client] = await id.evaluate((e) => [e.scrollWidth, e.parentElement!.clientWidth]);
    assert.ok(scroll! <= client!, `the id (${scroll} px) fits its item (${client} px)`);
    assert.equal(await overflow(page), 0);
  });
  // Before: the long function id's chip widened the table ~300 px past the window; squeezed
  // columns split "1.2 s" and "59 MiB" from their units and names like "svc-state" over lines.
  test('Workers: the long names fit, and no number is split from its unit', async () => {
    await page.goto(`${console_.url}#/workers`);
    const row = page.locator(`[data-testid=worker-row][data-name="${WORKER}"]`);
    await row.locator('[data-testid=worker-rss]', { hasText: /\d MiB/ }).waitFor({ timeout: 15_000 });
    assert.equal(await overflow(page), 0);
    for (const cell of ['worker-cpu', 'worker-rss', 'worker-lag']) {
      // The lines the cell's first value (before its second line, if any) takes.
      const lines = await row.locator(`[data-testid=${cell}]`).evaluate((td) => {
        const range = document.createRange();
        range.setStart(td, 0);
        const sub = td.querySelector('div');
        if (sub) range.setEndBefore(sub);
        else range.setEnd(td, td.childNodes.length);
        return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
      });
      assert.equal(lines, 1, `${cell}: ${await row.locator(`[data-testid=${cell}]`).innerText()}`);
    }
  });
  // Before: the worker filter was as wide as its longest option, a long worker name, and pushed
  // the Pause button past the right edge of a 1024 px window.
  test('Logs at 1024 px: the filters and Pause stay in the window', async () => {
    await page.setViewportSize({ width: 1024, height: 800 });
    try {
      await page.goto(`${console_.url}#/logs`);
      await page.locator(`[data-testid=log-worker] option[value="${WORKER}"]`).waitFor({ state: 'attached' });
      assert.equal(await overflow(page), 0);
      const pause = await page.getByRole('button', { name: 'Pause' }).boundingBox();
      assert.ok(pause && pause.x + pause.width <= 1024, `Pause is inside the window: ${JSON.stringify(pause)}`);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });
});
