/**
 * Editing State in the console, in headless Chromium, with a real svc-state: Escape cancels an edit;
 * a value is JSON when it is JSON and otherwise the text itself, as a string (`hello` needs no
 * quotes), and the page says which before it is saved; text that starts like JSON but is not is
 * refused. Needs console/dist (`npm run build:console`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { ConsoleServer } from '../../src/console-server/server.js';
import { startStateWorker, type RunningStateWorker } from '../../src/workers/state/worker.js';
import { startEngine } from '../../test/helpers/engine.js';
import { until } from '../helpers/cli.js';
import { openConsolePage, type ConsolePage } from '../helpers/console-page.js';

describe('console: editing State', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-console-state-'));
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let state: RunningStateWorker;
  let ui: ConsolePage;
  let console_: ConsoleServer;
  let page: Page;
  const stored = (key: string): Promise<unknown> => state.worker.trigger({ function_id: 'state::get', payload: { scope: 'profile', key } });

  before(async () => {
    eng = await startEngine();
    state = await startStateWorker({ url: eng.url, config: { data_dir: dir } });
    await state.worker.trigger({ function_id: 'state::set', payload: { scope: 'profile', key: 'name', value: 'Alice' } });
    await state.worker.trigger({ function_id: 'state::set', payload: { scope: 'profile', key: 'age', value: 30 } });
    ui = await openConsolePage(eng.url);
    ({ server: console_, page } = ui);
    await page.goto(`${console_.url}#/state/profile`);
    await page.locator('[data-testid=state-row][data-key=age]').waitFor();
  });

  after(async () => {
    await ui?.close();
    await state?.shutdown();
    await eng?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // Before: Escape did nothing; only Cancel left the edit.
  test('Escape cancels an edit and leaves the value as it was', async () => {
    const row = page.locator('[data-testid=state-row][data-key=age]');
    await row.getByRole('button', { name: 'Edit' }).click();
    const box = row.getByRole('textbox', { name: 'value' });
    assert.equal(await box.inputValue(), '30');
    await box.fill('31');
    await page.keyboard.press('Escape');
    await row.getByRole('button', { name: 'Edit' }).waitFor({ timeout: 2000 });
    assert.equal(await box.count(), 0);
    assert.equal(await row.locator('[data-testid=state-value]').innerText(), '30');
    assert.equal(await stored('age'), 30);
  });

  // Before: `hello` was refused ("Not valid JSON: Unexpected token 'h'"); it had to be typed "hello".
  test('a value that is not JSON is saved as a string, and the page says so first', async () => {
    await page.fill('input[aria-label="new key"]', 'greeting');
    await page.fill('input[aria-label="new value"]', 'hello world');
    assert.equal(await page.locator('[data-testid=new-value-hint]').innerText(), 'saved as the string "hello world" (not JSON)');
    await page.click('button:has-text("Set")');
    await page.locator('[data-testid=state-row][data-key=greeting]').waitFor();
    assert.equal(await stored('greeting'), 'hello world');
    assert.equal(await page.locator('[data-testid=state-row][data-key=greeting] [data-testid=state-value]').innerText(), '"hello world"');
  });

  test('JSON stays JSON: a number, an object, and a string in quotes', async () => {
    for (const [key, text, value, hint] of [
      ['n', '42', 42, 'saved as JSON: number'],
      ['o', '{"a": 1}', { a: 1 }, 'saved as JSON: object'],
      ['s', '"42"', '42', 'saved as JSON: string'],
    ] as const) {
      await page.fill('input[aria-label="new key"]', key);
      await page.fill('input[aria-label="new value"]', text);
      assert.equal(await page.locator('[data-testid=new-value-hint]').innerText(), hint);
      await page.click('button:has-text("Set")');
      await page.locator(`[data-testid=state-row][data-key=${key}]`).waitFor();
      assert.deepEqual(await stored(key), value, key);
    }
  });

  test('an edit of a string starts from the text; Ctrl+Enter saves it', async () => {
    const row = page.locator('[data-testid=state-row][data-key=name]');
    await row.getByRole('button', { name: 'Edit' }).click();
    const box = row.getByRole('textbox', { name: 'value' });
    assert.equal(await box.inputValue(), 'Alice');
    await box.fill('Alice Smith');
    assert.match(await row.locator('[data-testid=state-value-hint]').innerText(), /^saved as the string "Alice Smith" \(not JSON\)/);
    await box.press('Control+Enter');
    await until('the new value', async () => (await stored('name')) === 'Alice Smith');
    await until('the row to show it', async () => (await row.locator('[data-testid=state-value]').innerText().catch(() => '')) === '"Alice Smith"');
  });

  test('text that starts like JSON but is not is refused, not saved as a string', async () => {
    await page.fill('input[aria-label="new key"]', 'broken');
    await page.fill('input[aria-label="new value"]', '{"a": 1');
    assert.match(await page.locator('[data-testid=new-value-hint]').innerText(), /^Not valid JSON/);
    await page.click('button:has-text("Set")');
    await page.getByRole('alert').filter({ hasText: /Not valid JSON/ }).waitFor();
    assert.equal(await stored('broken'), null);
  });
});
