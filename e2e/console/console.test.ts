/**
 * The console in headless Chromium (Debian's `chromium`, driven by playwright-core) against a real
 * engine running the real quickstart, set up as a new user does: `svc create`, `svc --config`,
 * `svc worker add` ×4 (and svc-cron), then `svc console`. Needs console/dist (`npm run build:console`).
 * Screenshots of every page go to test-results/console/.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, ROOT, closedPort, runSvc, tempDir, until } from '../helpers/cli.js';
import { startConsole } from '../helpers/console.js';
import { CHROMIUM, launchChromium } from '../../test/helpers/chromium.js';

const SHOTS = join(ROOT, 'test-results', 'console');

async function shot(page: Page, name: string, fullPage = true): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
}

describe('console on the quickstart', { timeout: 240_000 }, () => {
  const tmp = tempDir();
  const project = join(tmp.dir, 'quickstart');
  let engine: EngineProcess;
  let httpPort: number;
  let consoleProc: Awaited<ReturnType<typeof startConsole>>;
  let browser: Browser;
  let page: Page;

  before(async () => {
    assert.ok(existsSync(join(ROOT, 'console', 'dist', 'index.html')), 'console/dist is missing: run `npm run build:console` first');
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
    const created = await runSvc(['create', '--template', 'quickstart', '--directory', project], { cwd: tmp.dir });
    assert.equal(created.code, 0, created.stderr);
    // Free ports instead of 49134 and 3111, so this test runs beside anything else on the machine.
    const enginePort = await closedPort();
    httpPort = await closedPort();
    const cfg = join(project, 'config.yaml');
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace('port: 49134', `port: ${enginePort}`).replace(/workers: \[\]\s*$/, `workers:\n  - name: svc-http\n    builtin: svc-http\n    config:\n      port: ${httpPort}\n`));
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project });
    // svc-queue retries quickly here, so that a failing job reaches the DLQ within the test.
    const queueSettings = ['--set', 'queues.default.backoff_ms=100', '--set', 'queues.default.max_attempts=2'];
    for (const w of ['svc-state', 'svc-http', 'svc-queue', './workers/math-worker', './workers/caller-worker', 'svc-cron']) {
      const r = await runSvc(['worker', 'add', w, ...(w === 'svc-queue' ? queueSettings : [])], { cwd: project, timeoutMs: 180_000 });
      assert.equal(r.code, 0, `svc worker add ${w}\n${r.stdout}\n${r.stderr}`);
    }
    const env = { SVC_URL: engine.url };
    await until(
      'the quickstart to answer over HTTP',
      async () => {
        const r = await fetch(`http://127.0.0.1:${httpPort}/math/add-two-numbers`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"a":0,"b":0}' }).catch(() => null);
        if (r?.status === 200) return true;
        await new Promise((res) => setTimeout(res, 250));
        return false;
      },
      60_000,
    );
    const list = await runSvc(['trigger', 'engine::workers::list'], { env });
    assert.match(list.stdout, /math-worker/);
    consoleProc = await startConsole(engine.url);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });

  after(async () => {
    await browser?.close();
    consoleProc?.child.kill('SIGTERM');
    await engine?.stop('SIGTERM', 20_000);
    tmp.remove();
  });

  test('opens on the Workers page, listing math-worker and caller-worker with their details', async () => {
    await page.goto(consoleProc.url);
    await page.locator('[data-testid=page-workers]').waitFor();
    const math = page.locator('[data-testid=worker-row][data-name=math-worker]');
    const caller = page.locator('[data-testid=worker-row][data-name=caller-worker]');
    await math.waitFor();
    await caller.waitFor();
    assert.match(await math.innerText(), /python/);
    assert.match(await math.innerText(), /math::add/);
    assert.match(await caller.innerText(), /node/);
    assert.match(await caller.innerText(), /math::add_two_numbers/);
    assert.match(await math.innerText(), /connected/);
    // Both SDKs report their process (engine::workers::report) as soon as they connect.
    for (const row of [math, caller]) {
      await row.locator('[data-testid=worker-rss]', { hasText: /\d MiB/ }).waitFor({ timeout: 15_000 });
      assert.match(await row.locator('[data-testid=worker-cpu]').innerText(), /^\d+\.\d s$/);
      // The lag covers a report's interval (5 s): the report sent on connecting may have none yet.
      await row.locator('[data-testid=worker-lag]', { hasText: /ms|µs/ }).waitFor({ timeout: 15_000 });
    }
    assert.match(await caller.locator('[data-testid=worker-rss]').innerText(), /heap \d/);
    await page.locator('[data-testid=worker-row][data-name=svc-state]').waitFor();
    await shot(page, '1-workers');
  });

  // Before: at 1024 px its eleven columns and the Restart and Stop buttons made the table 226 px
  // wider than the window.
  test('the Workers page of supervised workers fits a 1280 and a 1024 px window', async () => {
    const overflow = (): Promise<number> => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    try {
      for (const width of [1280, 1024]) {
        await page.setViewportSize({ width, height: 800 });
        await page.locator('[data-testid=worker-row][data-name=svc-state] [data-testid=supervised-stop]').waitFor();
        assert.equal(await overflow(), 0, `at ${width} px`);
        const stop = await page.locator('[data-testid=worker-row][data-name=svc-state] [data-testid=supervised-stop]').boundingBox();
        assert.ok(stop && stop.x + stop.width <= width, `Stop is inside the window at ${width} px: ${JSON.stringify(stop)}`);
        await shot(page, `1b-workers-${width}`);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  test('svc worker list shows the CPU time and memory its workers report', async () => {
    const r = await runSvc(['worker', 'list'], { cwd: project });
    assert.equal(r.code, 0, r.stderr);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    assert.match(header!, /RESTARTS\s+CPU\s+MEMORY\s+FUNCTIONS/);
    for (const name of ['math-worker', 'caller-worker', 'svc-state']) {
      assert.match(rows.find((l) => l.startsWith(`${name} `)) ?? '', /\s\d+\.\ds\s+\d+(\.\d)? MiB\s/, `${name} in\n${r.stdout}`);
    }
  });

  test('the Functions page invokes math::add and shows c with the duration', async () => {
    await page.click('[data-testid=nav-functions]');
    await page.locator('[data-testid=function-item][data-id="math::add"]').click();
    await page.fill('[data-testid=payload]', '{"a": 2, "b": 3}');
    await page.click('[data-testid=invoke]');
    const result = page.locator('[data-testid=result]');
    await result.waitFor();
    const value = JSON.parse(await result.innerText()) as { c: number; running_total: number };
    assert.equal(value.c, 5);
    assert.equal(typeof value.running_total, 'number');
    assert.match(await page.locator('[data-testid=duration]').innerText(), /^in [\d.]+ (µs|ms|s)$/);
    // Bad JSON is refused in the page, before any call.
    await page.fill('[data-testid=payload]', '{a: 2');
    await page.click('[data-testid=invoke]');
    await page.getByText(/Not valid JSON/).waitFor();
    await page.fill('[data-testid=payload]', '{"a": 2, "b": 3}');
    await page.click('[data-testid=invoke]');
    await result.waitFor();
    await shot(page, '2-functions');
  });

  test('a function of a namespace (iii 0.23+) is listed with its namespace and invoked there', async () => {
    const shop: Worker = registerWorker(engine.url, { workerName: 'shop-worker', namespace: 'shop', echoLogs: false });
    shop.registerFunction('math::add', (d: { a: number; b: number }) => ({ c: d.a + d.b, namespace: 'shop' }));
    await shop.ready();
    try {
      await page.click('[data-testid=nav-workers]');
      await page.locator('[data-testid=worker-row][data-name=shop-worker] [data-testid=worker-namespace]').waitFor();
      await page.click('[data-testid=nav-functions]');
      const item = page.locator('[data-testid=function-item][data-id="math::add"]', { has: page.locator('[data-testid=function-namespace]') });
      assert.equal(await item.locator('[data-testid=function-namespace]').innerText(), 'shop');
      await item.click();
      assert.equal(await page.locator('[data-testid=detail-namespace]').innerText(), 'shop');
      await page.fill('[data-testid=payload]', '{"a": 2, "b": 3}');
      await page.click('[data-testid=invoke]');
      const result = page.locator('[data-testid=result]');
      await result.waitFor();
      assert.deepEqual(JSON.parse(await result.innerText()), { c: 5, namespace: 'shop' });
    } finally {
      await shop.shutdown();
    }
  });

  test('the Triggers page lists the http binding and sends a test request through svc-http', async () => {
    await page.click('[data-testid=nav-triggers]');
    const http = page.locator('[data-testid=trigger-type][data-type=http]');
    await http.waitFor();
    assert.match(await http.innerText(), /POST \/math\/add-two-numbers/);
    assert.match(await http.innerText(), /http::add_two_numbers/);
    assert.match(await http.innerText(), /active/);
    await page.click('[data-testid=http-test-toggle]');
    await page.click('[data-testid=http-send]');
    const out = page.locator('[data-testid=http-outcome]');
    await out.waitFor();
    assert.match(await out.innerText(), /^200/);
    assert.match(await out.innerText(), /"c": 5/);
    await shot(page, '3-triggers');
  });

  test('the Triggers page shows a cron trigger\'s next and last fire with its outcome; Run now and Pause work', async () => {
    // A worker binding a cron trigger, as in docs/cron.md.
    const reports: Worker = registerWorker(engine.url, { workerName: 'reports-worker', echoLogs: false });
    try {
      let runs = 0;
      reports.registerFunction('reports::tick', (e: { manual: boolean }) => ({ run: ++runs, manual: e.manual }));
      await reports.registerTrigger({ type: 'cron', function_id: 'reports::tick', config: { expression: '*/2 * * * * *', timezone: 'Europe/Paris' } });
      await page.click('[data-testid=nav-triggers]');
      const row = page.locator('[data-testid=trigger-type][data-type=cron] [data-testid=binding-row]');
      await row.waitFor();
      assert.match(await row.innerText(), /reports::tick/);
      assert.match(await row.innerText(), /\*\/2 \* \* \* \* \* Europe\/Paris/);
      await row.locator('[data-testid=cron-last][data-outcome=ok]').waitFor({ timeout: 10_000 });
      // Next and last fire in the schedule's zone, named, whatever the browser's zone is.
      assert.match(await row.locator('[data-testid=cron-next]').innerText(), /^\d\d:\d\d:\d\d[+-]\d\d:\d\d Europe\/Paris$/);
      const last = /^(\d\d):(\d\d):(\d\d)([+-])(\d\d):(\d\d) Europe\/Paris/.exec(await row.locator('[data-testid=cron-last]').innerText());
      assert.ok(last, 'the last fire names Europe/Paris');
      // It fired within the last seconds: that wall-clock time less its offset is about now in UTC.
      const [h, m, sec, sign, oh, om] = last.slice(1).map((v, i) => (i === 3 ? (v === '-' ? -1 : 1) : Number(v))) as number[];
      const shownUtc = h! * 3600 + m! * 60 + sec! - sign! * (oh! * 3600 + om! * 60);
      const now = new Date();
      const drift = Math.abs((((shownUtc - (now.getUTCHours() * 3600 + now.getUTCMinutes() * 60 + now.getUTCSeconds())) % 86400) + 86400 + 43200) % 86400 - 43200);
      assert.ok(drift < 30, `last fire ${last[0]} is ${drift} s from now`);
      await shot(page, '3b-cron');
      // Run now: the outcome with the function's result.
      await row.locator('[data-testid=cron-run]').click();
      const outcome = page.locator('[data-testid=cron-outcome]');
      await outcome.waitFor();
      assert.match(await outcome.innerText(), /^ok in/);
      assert.match(await outcome.innerText(), /"manual": true/);
      // Pause: the next fire shows paused, svc-cron says so too; Resume.
      await row.locator('[data-testid=cron-pause]').click();
      await until('paused in the page', async () => /paused/.test(await row.locator('[data-testid=cron-next]').innerText()));
      const listed = await runSvc(['cron', 'list', '--json'], { env: { SVC_URL: engine.url } });
      assert.equal((JSON.parse(listed.stdout) as Array<{ function_id: string; paused: boolean }>).find((s) => s.function_id === 'reports::tick')?.paused, true);
      assert.equal(await row.locator('[data-testid=cron-pause]').innerText(), 'Resume');
      await row.locator('[data-testid=cron-pause]').click();
      await until('active again', async () => (await row.locator('[data-testid=cron-pause]').innerText()) === 'Pause');
    } finally {
      await reports.shutdown();
    }
  });

  test('the Queues page: live counts, a dead-lettered job with its payload and error, redrive and delete', async () => {
    const env = { SVC_URL: engine.url };
    const enqueue = async (...args: string[]): Promise<string> => {
      const r = await runSvc(['trigger', '--enqueue', 'default', ...args], { env, cwd: project });
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as { messageReceiptId: string }).messageReceiptId;
    };
    await enqueue('math::add', 'a=2', 'b=3'); // runs
    const bad = await enqueue('math::add', 'a=x', 'b=2'); // math-worker refuses "x": dead-lettered after 2 attempts
    await enqueue('math::nobody', 'n=1'); // no worker serves it: waits
    await page.click('[data-testid=nav-queues]');
    const row = page.locator('[data-testid=queue-row][data-queue=default]');
    await row.waitFor();
    await until('the DLQ badge to show the failed job', async () => (await row.locator('[data-testid=queue-dlq]').innerText()).trim() === '1', 20_000);
    assert.ok(Number(await row.locator('[data-testid=queue-completed]').innerText()) >= 1);
    assert.equal((await row.locator('[data-testid=queue-waiting]').innerText()).trim(), '1');
    assert.match(await page.locator('[data-testid=queues-absent]').innerText(), /math::nobody/);
    await row.click();
    const job = page.locator(`[data-testid=job-row][data-id="${bad}"]`);
    await job.waitFor();
    assert.match(await job.locator('[data-testid=job-payload]').innerText(), /"a":"x"/);
    assert.match(await job.locator('[data-testid=job-error]').innerText(), /invalid_payload.*a must be a number/);
    assert.equal(await job.locator('[data-testid=job-attempts]').innerText(), '2');
    assert.match(await page.locator('[data-testid=jobs-total]').innerText(), /^1 dead-lettered/);
    await shot(page, '4-queues');

    // Redrive: it runs twice more, fails, and is back in the DLQ with 4 attempts.
    await job.locator('[data-testid=job-redrive]').click();
    await until('the redriven job back in the DLQ after two more runs', async () => (await job.locator('[data-testid=job-attempts]').innerText().catch(() => '')) === '4', 20_000);
    assert.equal((await row.locator('[data-testid=queue-dlq]').innerText()).trim(), '1', 'the badge agrees with the list');
    await job.locator('[data-testid=job-delete]').click();
    await page.locator('[data-testid=queue-detail] [data-testid=jobs-empty]').waitFor();
    await until('the DLQ badge to clear', async () => (await row.locator('[data-testid=queue-dlq]').innerText()).trim() === '0');
    await page.click('[data-testid=jobs-waiting]');
    await page.locator('[data-testid=job-row]').first().waitFor();
    assert.match(await page.locator('[data-testid=jobs-table]').innerText(), /math::nobody/);
    const purged = await runSvc(['queue', 'purge', 'default'], { env, cwd: project });
    assert.match(purged.stdout, /purged 1 job/);
  });

  test('after an HTTP call the Traces page shows one trace with the spans of all four functions in order', async () => {
    const r = await fetch(`http://127.0.0.1:${httpPort}/math/add-two-numbers`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"a":20,"b":22}' });
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { c: number }).c, 42);
    await page.click('[data-testid=nav-traces]');
    const row = page.locator('[data-testid=trace-row][data-root="http::add_two_numbers"]').first();
    await row.waitFor();
    await shot(page, '5-traces');
    await row.click();
    await page.locator('[data-testid=waterfall]').waitFor();
    // Fail with what is there rather than a bare timeout.
    await page.locator('[data-testid=span-row]').nth(3).waitFor({ timeout: 5000 }).catch(() => undefined);
    await shot(page, '6-trace-waterfall');
    const spans = await page.locator('[data-testid=span-row]').evaluateAll((rows) => rows.map((r) => [r.getAttribute('data-function'), r.getAttribute('data-status')]));
    assert.deepEqual(spans, [
      ['http::add_two_numbers', 'ok'],
      ['math::add_two_numbers', 'ok'],
      ['math::add', 'ok'],
      ['state::update', 'ok'],
    ]);
    const text = await page.locator('[data-testid=waterfall]').innerText();
    for (const w of ['caller-worker', 'math-worker', 'svc-state']) assert.match(text, new RegExp(w));
    // Before: "4 spans across 3 workers, 12 ms from first start to last end ." (and "1 spans across 1 workers").
    assert.match(await page.locator('[data-testid=trace-summary]').innerText(), /^4 spans across 3 workers, [\d.]+ (µs|ms|s) from first start to last end\.$/);
  });

  test("the Logs page shows math::add's info line, live, and filters by level and text", async () => {
    await page.click('[data-testid=nav-logs]');
    const line = page.locator('[data-testid=log-row]', { hasText: 'adding a=20 and b=22' }).first();
    await line.waitFor();
    const text = await line.innerText();
    assert.match(text, /INFO/);
    assert.match(text, /math-worker/);
    assert.match(text, /math::add/);
    // Live: a new call's line appears without a reload.
    await runSvc(['trigger', 'math::add', 'a=7', 'b=8'], { env: { SVC_URL: engine.url } });
    await page.locator('[data-testid=log-row]', { hasText: 'adding a=7 and b=8' }).waitFor();
    await shot(page, '7-logs', false);
    await page.selectOption('[data-testid=log-level]', 'warn');
    await until('info lines to be filtered out', async () => (await page.locator('[data-testid=log-row]', { hasText: 'adding a=7' }).count()) === 0);
    await page.selectOption('[data-testid=log-level]', 'debug');
    await page.fill('[data-testid=log-text]', 'a=7 and');
    await until('the text filter', async () => (await page.locator('[data-testid=log-row]').count()) === 1);
    await page.fill('[data-testid=log-text]', '');
  });

  test('the State page shows math/running_total, and edits and deletes keys', async () => {
    await page.click('[data-testid=nav-state]');
    await page.locator('[data-testid=scope-item][data-scope=math]').click();
    const row = page.locator('[data-testid=state-row][data-key=running_total]');
    await row.waitFor();
    const total = Number(await row.locator('[data-testid=state-value]').innerText());
    assert.ok(total >= 5 + 5 + 42 + 15, `running_total is ${total}`);
    await shot(page, '8-state');
    // Add a key, then delete it.
    await page.fill('input[aria-label="new key"]', 'note');
    await page.fill('input[aria-label="new value"]', '{"set": "from the console"}');
    await page.click('button:has-text("Set")');
    await page.locator('[data-testid=state-row][data-key=note]').waitFor();
    const stored = await runSvc(['trigger', 'state::get', 'scope=math', 'key=note'], { env: { SVC_URL: engine.url } });
    assert.deepEqual(JSON.parse(stored.stdout), { set: 'from the console' });
    page.once('dialog', (d) => void d.accept());
    await page.locator('[data-testid=state-row][data-key=note] button:has-text("Delete")').click();
    await until('the key to go', async () => (await page.locator('[data-testid=state-row][data-key=note]').count()) === 0);
  });

  test('the State page pages through a scope of 250 keys, 100 at a time', async () => {
    const writer = registerWorker(engine.url, { workerName: 'state-writer', echoLogs: false });
    try {
      await writer.ready();
      const key = (i: number): string => `k${String(i).padStart(3, '0')}`;
      await Promise.all(Array.from({ length: 250 }, (_, i) => writer.trigger({ function_id: 'state::set', payload: { scope: 'paged', key: key(i), value: i } })));
      await page.click('[data-testid=nav-state]');
      await page.locator('[data-testid=scope-item][data-scope=paged]').click();
      const rows = page.locator('[data-testid=state-row]');
      const keysShown = async (): Promise<string[]> => rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-key') ?? ''));
      await until('the first page', async () => (await rows.count()) === 100);
      assert.equal((await keysShown())[0], key(0));
      assert.match(await page.locator('[data-testid=state-page]').innerText(), /keys 1–100/);
      await page.click('[data-testid=state-next]');
      await until('the second page', async () => (await keysShown())[0] === key(100));
      await page.click('[data-testid=state-next]');
      await until('the last page', async () => (await rows.count()) === 50 && (await keysShown())[0] === key(200));
      assert.match(await page.locator('[data-testid=state-page]').innerText(), /keys 201–250/);
      assert.equal(await page.locator('[data-testid=state-next]').isDisabled(), true);
      await shot(page, '8b-state-pages');
      await page.click('[data-testid=state-prev]');
      await until('back to the second page', async () => (await keysShown())[0] === key(100) && (await rows.count()) === 100);
    } finally {
      await writer.shutdown(0);
    }
  });

  // Before: the State page's reads (state::list_groups, state::list, every second) filled the
  // Traces page, pushing the system's own traces off it.
  test("the Traces page leaves out the console's own reads unless asked", async () => {
    await page.click('[data-testid=nav-state]');
    await page.locator('[data-testid=scope-item][data-scope=paged]').click();
    await page.waitForTimeout(2500);
    await page.click('[data-testid=nav-traces]');
    await page.locator('[data-testid=trace-row]').first().waitFor();
    const roots = async (): Promise<string[]> => page.locator('[data-testid=trace-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-root') ?? ''));
    const reads = (rs: string[]): string[] => rs.filter((r) => r === 'state::list' || r === 'state::list_groups');
    assert.deepEqual(reads(await roots()), []);
    assert.ok((await roots()).includes('state::set'), 'the state-writer\'s calls are listed');
    await page.click('[data-testid=show-console-reads]');
    await until("the console's reads to be listed", async () => reads(await roots()).length > 0);
    await shot(page, '8c-traces-with-console-reads');
    await page.click('[data-testid=show-console-reads]');
    await until("the console's reads to be left out again", async () => reads(await roots()).length === 0);
  });

  test('a lost engine is shown plainly', async () => {
    await page.click('[data-testid=nav-workers]');
    await page.locator('[data-testid=worker-row]').first().waitFor();
    await engine.stop('SIGTERM', 20_000);
    const banner = page.locator('[data-testid=banner]');
    await banner.waitFor({ timeout: 10_000 });
    assert.match(await banner.innerText(), /Connection to the engine lost/);
    await shot(page, '9-engine-lost');
  });
});

describe('console without workers', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let consoleProc: Awaited<ReturnType<typeof startConsole>>;
  let browser: Browser;
  let page: Page;

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    consoleProc = await startConsole(engine.url);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
  });
  after(async () => {
    await browser?.close();
    consoleProc?.child.kill('SIGTERM');
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test('empty pages say so and what to do', async () => {
    await page.goto(consoleProc.url);
    const empty = page.locator('[data-testid=page-workers] [data-testid=empty]');
    await empty.waitFor();
    assert.match(await empty.innerText(), /No workers are connected/);
    await shot(page, 'empty-workers');
    await page.click('[data-testid=nav-traces]');
    assert.match(await page.locator('[data-testid=page-traces] [data-testid=empty]').innerText(), /No traces yet/);
    await page.click('[data-testid=nav-state]');
    assert.match(await page.locator('[data-testid=page-state] [data-testid=empty]').innerText(), /svc-state is not running/);
    await page.click('[data-testid=nav-functions]');
    assert.match(await page.locator('[data-testid=page-functions] [data-testid=empty]').innerText(), /No functions are registered/);
    await page.click('[data-testid=nav-queues]');
    assert.match(await page.locator('[data-testid=queues-missing]').innerText(), /svc-queue is not running.*svc worker add svc-queue/);
  });

  test('a stopped console server is shown plainly', async () => {
    consoleProc.child.kill('SIGTERM');
    const banner = page.locator('[data-testid=banner]');
    await banner.waitFor({ timeout: 10_000 });
    assert.match(await banner.innerText(), /console server is not reachable/);
  });

  test('a restarted console server mints a new session token; the open page fetches it and works again', async () => {
    const port = Number(new URL(consoleProc.url).port);
    await until('the old console server to exit', () => consoleProc.child.exitCode !== null || consoleProc.child.signalCode !== null, 10_000);
    consoleProc = await startConsole(engine.url, port);
    await until('the banner to go', async () => (await page.locator('[data-testid=banner]').count()) === 0, 10_000);
    // Calls too, not only the status poll: the Functions page invokes nothing without functions, so
    // State asks svc-state (absent) through /api/call and says so.
    await page.click('[data-testid=nav-state]');
    assert.match(await page.locator('[data-testid=page-state] [data-testid=empty]').innerText(), /svc-state is not running/);
  });
});

// Before: opened while the engine was down, the Workers page showed an empty "Supervised, not
// connected" table and "Loading…" for as long as the engine stayed away, under the banner.
describe('console opened while the engine is down', { timeout: 60_000 }, () => {
  let consoleProc: Awaited<ReturnType<typeof startConsole>>;
  let browser: Browser;

  before(async () => {
    consoleProc = await startConsole(`ws://127.0.0.1:${await closedPort()}`);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    consoleProc?.child.kill('SIGTERM');
  });

  test('each page says it has nothing to show until the engine answers, and no empty tables', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
    await page.goto(consoleProc.url);
    await page.locator('[data-testid=banner]').waitFor({ timeout: 10_000 });
    // Never reached, so never "lost" (before: "Connection to the engine lost").
    await until('the banner to name the engine', async () => /^Cannot reach the engine at ws:\/\/127\.0\.0\.1:\d+: is svc --config config\.yaml running\?/.test(await page.locator('[data-testid=banner]').innerText()), 10_000);
    for (const nav of ['workers', 'functions', 'triggers', 'queues', 'traces', 'state']) {
      await page.click(`[data-testid=nav-${nav}]`);
      const note = page.locator(`[data-testid=page-${nav}] [data-testid=loading-unreachable]`);
      await note.waitFor({ timeout: 10_000 });
      assert.equal(await note.innerText(), 'Nothing to show until the engine answers (see above).', nav);
    }
    await page.click('[data-testid=nav-workers]');
    assert.equal(await page.locator('[data-testid=supervised-down]').count(), 0);
    await shot(page, 'engine-down-at-start');
  });
});
