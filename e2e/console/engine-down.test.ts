/**
 * The console while its engine is down, in headless Chromium: one banner says so, the browser's
 * console stays quiet (no failed load per read, as a 503 gives), the pages ask nothing but the
 * console server's status meanwhile, and they come back by themselves when the engine does. API
 * clients still get the documented 503 `engine_unreachable`. Needs console/dist
 * (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startEngine } from '../../test/helpers/engine.js';
import { until } from '../helpers/cli.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

describe('console: the engine goes away and comes back', { timeout: 90_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;
  /** What the browser's console said (errors and warnings), and the API requests the page made. */
  const said: string[] = [];
  const asked: string[] = [];

  before(async () => {
    eng = await startEngine();
    worker = registerWorker(eng.url, { workerName: 'orders-worker', echoLogs: false, reconnect: { initialDelayMs: 100, maxDelayMs: 300 } });
    worker.registerFunction('orders::process', () => ({ ok: true }));
    await worker.ready();
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') said.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => said.push(`pageerror: ${e.message}`));
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (path.startsWith('/api/')) asked.push(path);
    });
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await eng?.stop();
  });

  // Before: every page's read, every second, got a 503 that Chromium logged as "Failed to load
  // resource: the server responded with a status of 503 (Service Unavailable)".
  test('down: one banner, a quiet browser console, only status reads; back: the pages by themselves', async () => {
    await page.goto(`${console_.url}#/workers`);
    await page.locator('[data-testid=worker-row][data-name=orders-worker]').waitFor();
    await eng.stop();
    const banner = page.locator('[data-testid=banner]');
    await banner.waitFor({ timeout: 10_000 });
    assert.match(await banner.innerText(), /^Connection to the engine lost \(ws:\/\/127\.0\.0\.1:\d+\/?\)\. Retrying every second/);
    // Every page while it is down, a few seconds each: each would read at least once a second.
    for (const nav of ['workers', 'functions', 'triggers', 'queues', 'logs', 'traces', 'state']) {
      await page.click(`[data-testid=nav-${nav}]`);
      await page.waitForTimeout(1500);
    }
    assert.equal(await banner.count(), 1);
    assert.deepEqual(said, [], 'nothing in the browser console');
    // After the first second or so, only the status check asks anything.
    const sinceDown = asked.slice(asked.lastIndexOf('/api/call') + 1);
    assert.ok(sinceDown.length >= 8 && sinceDown.every((p) => p === '/api/status'), `only /api/status while down: ${asked.join(' ')}`);

    // An API client (not the page) still gets the documented 503.
    const session = (await (await fetch(`${console_.url}api/session`)).json()) as { csrf_token: string };
    const r = await fetch(`${console_.url}api/call`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token }, body: JSON.stringify({ function_id: 'engine::workers::list' }) });
    assert.equal(r.status, 503);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'engine_unreachable');

    // Back on the same port: the banner goes and the page reads again, without a reload.
    eng = await startEngine({ port: eng.port });
    await page.click('[data-testid=nav-workers]');
    await until('the banner to go', async () => (await banner.count()) === 0, 15_000);
    await page.locator('[data-testid=worker-row][data-name=orders-worker]').waitFor({ timeout: 15_000 });
    assert.deepEqual(said, [], 'nothing in the browser console');
  });
});
