/**
 * The Triggers page's test request for an `http` binding, in headless Chromium, with svc-http on a
 * free port: a binding registered the iii way, `api_path: "orders"` (no leading `/`, which svc-http
 * adds), is shown as the route it is and its test request reaches it. Needs console/dist
 * (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startHttpWorker, type HttpWorkerHandle } from '../../src/workers/http/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

describe('console: the test request of an http binding whose api_path has no leading /', { timeout: 60_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let http: HttpWorkerHandle;
  let worker: Worker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;

  before(async () => {
    eng = await startEngine();
    http = await startHttpWorker({ url: eng.url, port: 0, requestLog: false });
    worker = registerWorker(eng.url, { workerName: 'orders-worker', echoLogs: false });
    worker.registerFunction('http::orders', (req: { body: unknown }) => ({ status_code: 201, body: { created: req.body } }));
    await worker.ready();
    await worker.registerTrigger({ type: 'http', function_id: 'http::orders', config: { api_path: 'orders', http_method: 'POST' } });
    const direct = await fetch(`http://127.0.0.1:${http.port}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"id":1}' });
    assert.equal(direct.status, 201, 'svc-http serves the route at /orders');
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await worker?.shutdown();
    await http?.shutdown();
    await eng?.stop();
  });

  // Before: the row said `POST orders` and its test request was refused by the console server
  // with invalid_request: "path" must start with /.
  test('shows POST /orders, and the test request gets svc-http\'s 201', async () => {
    await page.goto(`${console_.url}#/triggers`);
    const row = page.locator('[data-testid=binding-row]', { hasText: 'http::orders' });
    await row.waitFor();
    assert.match(await row.innerText(), /POST \/orders\b/);
    await row.locator('[data-testid=http-test-toggle]').click();
    await page.locator('[data-testid=http-tester] textarea').fill('{"id": 2}');
    await page.click('[data-testid=http-send]');
    const out = page.locator('[data-testid=http-outcome]');
    await out.waitFor();
    assert.match(await out.innerText(), /^201 http:\/\/[^ ]+\/orders in /);
    assert.match(await out.innerText(), /"id": 2/);
  });
});
