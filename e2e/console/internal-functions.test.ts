/**
 * svc-cron's own `cron::run_now::<process id>` (how a run is passed on to the replica holding a
 * schedule) is plumbing: svc-cron registers it with `metadata: {internal: true}`, and the console,
 * in headless Chromium, lists it as it does the engine's `engine::*` builtins: only with "show
 * internal functions", marked internal, and on the Workers page as "+1 internal" beside svc-cron's
 * own functions. Needs console/dist (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startCronWorker, type RunningCronWorker } from '../../src/workers/cron/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { until } from '../helpers/cli.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

describe("console: svc-cron's internal cron::run_now::<process id>", { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-console-internal-'));
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let cron: RunningCronWorker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;
  let runHere = '';

  before(async () => {
    eng = await startEngine();
    cron = await startCronWorker({ url: eng.url, config: { data_dir: dir }, echoLogs: false });
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
  });

  after(async () => {
    await ui?.close();
    await cron?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('svc-cron registers it with metadata {internal: true}', async () => {
    const { functions } = await cron.worker.trigger<{ functions: Array<{ function_id: string; metadata: unknown }> }>({ function_id: 'engine::functions::list', payload: { include_builtins: false } });
    const own = functions.filter((f) => f.function_id.startsWith('cron::run_now::'));
    assert.equal(own.length, 1, JSON.stringify(functions.map((f) => f.function_id)));
    runHere = own[0]!.function_id;
    assert.deepEqual(own[0]!.metadata, { internal: true });
    // Its public operations are not.
    assert.equal(functions.find((f) => f.function_id === 'cron::run_now')?.metadata, null);
  });

  // Before: cron::run_now::<uuid> was listed among the user's functions and svc-cron's chips.
  test('Functions lists it only with "show internal functions", marked internal', async () => {
    await page.goto(`${console_.url}#/functions`);
    const items = page.locator('[data-testid=function-item]');
    await page.locator('[data-testid=function-item][data-id="cron::run_now"]').waitFor();
    const ids = async (): Promise<string[]> => items.evaluateAll((els) => els.map((e) => e.getAttribute('data-id') ?? ''));
    assert.deepEqual((await ids()).filter((id) => id.startsWith('cron::run_now::') || id.startsWith('engine::')), []);
    await page.click('[data-testid=show-internal]');
    const item = page.locator(`[data-testid=function-item][data-id="${runHere}"]`);
    await item.waitFor();
    assert.equal(await item.locator('[data-testid=function-internal]').innerText(), 'internal');
    await until('the engine builtins too', async () => (await ids()).includes('engine::functions::list'));
    await page.click('[data-testid=show-internal]');
    await until('hidden again', async () => (await item.count()) === 0);
  });

  test('Workers shows "+1 internal" instead of its chip, and links to it', async () => {
    await page.goto(`${console_.url}#/workers`);
    const row = page.locator('[data-testid=worker-row]', { has: page.locator('a.chip', { hasText: /^cron::list$/ }) });
    const internal = row.locator('[data-testid=worker-internal]');
    await internal.waitFor();
    assert.equal(await internal.innerText(), '+1 internal');
    assert.deepEqual(await row.locator('a.chip').allInnerTexts(), ['cron::list', 'cron::pause', 'cron::resume', 'cron::run_now']);
    await internal.click();
    assert.equal(await page.locator('[data-testid=function-detail] h2').innerText(), runHere);
  });
});
