/**
 * The console in a 1024 px window (a small laptop, half a wide screen) and a 1280 px one, in
 * headless Chromium: every page fits the window, and every table fits the card or page it is in,
 * with workers, an http and a cron binding. Below 1440 px the Workers and Triggers tables fold
 * their secondary columns under the name; at 1440 px they are columns again. Needs console/dist
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
import { startCronWorker, type RunningCronWorker } from '../../src/workers/cron/worker.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../src/workers/http/worker.js';
import { startQueueWorker, type RunningQueueWorker } from '../../src/workers/queue/worker.js';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

const WORKER = 'orders-worker';
const PAGES = ['workers', 'functions', 'triggers', 'queues', 'logs', 'traces', 'state/customers'];

/**
 * What sticks out: the page past the window's right edge, and each table past the element that
 * holds it (a card, the page), in px; empty when everything fits.
 */
const sticksOut = (page: Page): Promise<string[]> =>
  page.evaluate(() => {
    const out: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) out.push(`the page by ${root.scrollWidth - root.clientWidth} px`);
    for (const t of document.querySelectorAll('table')) {
      const box = t.getBoundingClientRect();
      const holder = t.parentElement!.getBoundingClientRect();
      if (box.right > holder.right + 0.5) out.push(`table ${t.getAttribute('data-testid') ?? t.querySelector('th')?.textContent ?? ''} by ${Math.round(box.right - holder.right)} px`);
    }
    return out;
  });

/** The Workers table's column headings shown (the last one, above the buttons, has none). */
const columns = (page: Page): Promise<string[]> =>
  page.locator('[data-testid=workers-table] thead th').evaluateAll((ths) => ths.filter((t) => t.checkVisibility()).map((t) => (t as HTMLElement).innerText.replace(/\s+/g, ' ')).filter(Boolean));

describe('console: a 1024 px window', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-console-narrow-'));
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let state: RunningStateWorker;
  let cron: RunningCronWorker;
  let queue: RunningQueueWorker;
  let http: HttpWorkerHandle;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    state = await startStateWorker({ url: eng.url, config: { data_dir: join(dir, 'state') } });
    cron = await startCronWorker({ url: eng.url, config: { data_dir: join(dir, 'cron') }, echoLogs: false });
    queue = await startQueueWorker({ url: eng.url, config: { data_dir: join(dir, 'queue'), queues: { orders: {} } } });
    http = await startHttpWorker({ url: eng.url, port: 0, requestLog: false });
    worker = registerWorker(eng.url, { workerName: WORKER, echoLogs: false });
    for (const f of ['orders::create', 'orders::process', 'orders::cancel', 'orders::refund', 'http::orders_by_customer']) worker.registerFunction(f, () => ({ ok: true }));
    await worker.ready();
    await worker.registerTrigger({ type: 'cron', function_id: 'orders::process', config: { expression: '*/2 * * * * *', timezone: 'Europe/Paris' } });
    await worker.registerTrigger({ type: 'http', function_id: 'http::orders_by_customer', config: { api_path: '/customers/:customer_id/orders', http_method: 'GET' } });
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'customers', key: 'bob', value: { name: 'Bob', age: 30 } } });
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await http?.shutdown();
    await queue?.shutdown();
    await cron?.shutdown();
    await state?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens `path` and waits for what the page shows once loaded. */
  async function open(path: string): Promise<void> {
    await page.goto(`${console_.url}#/${path}`);
    const loaded: Record<string, string> = {
      workers: `[data-testid=worker-row][data-name="${WORKER}"] [data-testid=worker-rss]`,
      functions: '[data-testid=function-item][data-id="orders::create"]',
      triggers: '[data-testid=cron-table] [data-testid=cron-last][data-outcome=ok]',
      queues: '[data-testid=queue-row][data-queue=orders]',
      logs: '[data-testid=log-row]',
      traces: '[data-testid=trace-row]',
      'state/customers': '[data-testid=state-row][data-key=bob]',
    };
    await page.locator(loaded[path]!).first().waitFor({ timeout: 15_000 });
  }

  // Before: the Workers table was 140 px wider than the window (eleven columns), and the cron
  // table stuck out of its card on the Triggers page.
  test('at 1024 and 1280 px no page is wider than the window, and no table than its card', async () => {
    for (const width of [1280, 1024]) {
      await page.setViewportSize({ width, height: 800 });
      for (const p of PAGES) {
        await open(p);
        assert.deepEqual(await sticksOut(page), [], `#/${p} at ${width} px`);
      }
    }
    // Folded, not lost: runtime, pid and uptime under the worker's name; a binding's worker under its function.
    const row = page.locator(`[data-testid=worker-row][data-name="${WORKER}"]`);
    await open('workers');
    assert.match(await row.locator('[data-testid=worker-folded]').innerText(), /^node \S+ · pid \d+ · up \d+s$/);
    assert.deepEqual(await columns(page), ['Name', 'Status', 'Functions', 'In flight', 'CPU', 'Memory', 'Loop lag']);
    await open('triggers');
    assert.match(await page.locator('[data-testid=cron-table] [data-testid=binding-row]').innerText(), /orders::process\nby orders-worker/);
  });

  test('at 1440 px the folded columns are columns again', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    try {
      for (const p of PAGES) {
        await open(p);
        assert.deepEqual(await sticksOut(page), [], `#/${p} at 1440 px`);
      }
      await open('workers');
      assert.deepEqual(await columns(page), ['Name', 'Runtime', 'PID', 'Status', 'Functions', 'In flight', 'CPU', 'Memory', 'Loop lag', 'Uptime']);
      assert.equal(await page.locator(`[data-testid=worker-row][data-name="${WORKER}"] [data-testid=worker-folded]`).isVisible(), false);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });
});
