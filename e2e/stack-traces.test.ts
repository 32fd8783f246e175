/**
 * Stack traces of failed calls (issue 25, item 5): a Python handler's traceback and a JavaScript
 * handler's stack travel in the error's `stacktrace` (both SDKs, capped at 8192 characters);
 * `svc trigger` shows them under the one-line error for invocation_failed (all with --verbose, for
 * any error; in --json), and the engine
 * keeps them with the call's span, so the console's trace view shows them (headless Chromium), and
 * as a log line of the failing worker, so `svc logs` shows them.
 * Before, `svc trigger` printed the one line only, a stack had no size cap, and a span kept the
 * error's code and message only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { EngineProcess, ROOT, runSvc, tempDir } from './helpers/cli.js';
import { startConsole } from './helpers/console.js';
import { launchChromium } from '../test/helpers/chromium.js';

const SDK = pathToFileURL(join(ROOT, 'sdk', 'typescript', 'dist', 'index.js')).href;

describe('stack traces of failed calls in svc trigger and on the console', { timeout: 240_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let browser: Browser | undefined;
  let consoleProc: Awaited<ReturnType<typeof startConsole>> | undefined;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 180_000 });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    const js = join(tmp.dir, 'jsfail');
    mkdirSync(js);
    writeFileSync(join(js, 'svc.worker.yaml'), 'name: jsfail\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: node w.mjs\n');
    writeFileSync(
      join(js, 'w.mjs'),
      `import { registerWorker } from ${JSON.stringify(SDK)};
const w = registerWorker(process.env.SVC_URL, { echoLogs: false });
Error.stackTraceLimit = 50;
function deepHelper(n) { if (n === 0) throw new Error('boom in js'); return deepHelper(n - 1); }
w.registerFunction('jsfail::fail', () => deepHelper(30));
w.registerFunction('jsfail::huge', () => { throw new Error('x'.repeat(20000)); });
w.registerFunction('jsfail::coded', () => { throw Object.assign(new Error('no order 7'), { code: 'not_found' }); });
`,
    );
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    const made = await svc(['worker', 'new', './pyfail', '--language', 'python']);
    assert.equal(made.code, 0, made.stderr);
    appendFileSync(
      join(tmp.dir, 'pyfail', 'worker.py'),
      `\n\ndef inner_divide(d: Any) -> float:\n    return 1 / d["by"]\n\n\nworker.register_function("pyfail::divide", lambda d: {"q": inner_divide(d)})\n`,
    );
    for (const w of ['./jsfail', './pyfail', 'svc-state']) {
      const r = await svc(['worker', 'add', w]);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    }
  });
  after(async () => {
    await browser?.close();
    consoleProc?.child.kill('SIGTERM');
    await engine?.stop();
    tmp.remove();
  });

  test('JavaScript: the stack under the error; --verbose shows all of it; --json carries it', async () => {
    const r = await svc(['trigger', 'jsfail::fail']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: invocation_failed: boom in js\nstack trace \(from the function's worker\):\n  │ Error: boom in js\n  │ +at deepHelper/);
    assert.match(r.stderr, /… \d+ more line\(s\): svc trigger --verbose/);
    const all = await svc(['trigger', 'jsfail::fail', '--verbose']);
    assert.ok(all.stderr.split('\n').filter((l) => l.includes('at deepHelper')).length > 9, all.stderr);
    const json = JSON.parse((await svc(['trigger', 'jsfail::fail', '--json'])).stdout) as { error: { code: string; stacktrace: string } };
    assert.equal(json.error.code, 'invocation_failed');
    assert.match(json.error.stacktrace, /at deepHelper/);
  });

  test('an error with a code of its own says a trace is there; --verbose and --json show it', async () => {
    // Raised on purpose (bad input, not found): the trace is noise for whoever typed the command.
    const r = await svc(['trigger', 'jsfail::coded']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "error: not_found: no order 7\n(the function's worker sent a stack trace: svc trigger --verbose)\n");
    const all = await svc(['trigger', 'jsfail::coded', '--verbose']);
    assert.match(all.stderr, /^error: not_found: no order 7\nstack trace \(from the function's worker\):\n  │ Error: no order 7\n/);
    const json = JSON.parse((await svc(['trigger', 'jsfail::coded', '--json'])).stdout) as { error: { code: string; stacktrace: string } };
    assert.equal(json.error.code, 'not_found');
    assert.match(json.error.stacktrace, /Error: no order 7/);
    // A built-in's bad-input error, as a new user meets it.
    const builtin = await svc(['trigger', 'state::get', 'scope=x']);
    assert.equal(builtin.code, 1);
    // An SvcError, raised on purpose: no stack travels (it held svc-state's file paths), so there is none to mention.
    assert.equal(builtin.stderr, 'error: invalid_payload: state::get: "key" must be a non-empty string, got nothing\n');
    assert.equal(JSON.parse((await svc(['trigger', 'state::get', 'scope=x', '--json'])).stdout).error.stacktrace, undefined);
  });

  test('a huge stack is capped at 8192 characters', async () => {
    const json = JSON.parse((await svc(['trigger', 'jsfail::huge', '--json'])).stdout) as { error: { stacktrace: string } };
    assert.ok(json.error.stacktrace.length <= 8192 + 40, String(json.error.stacktrace.length));
    assert.match(json.error.stacktrace, /… \(\d+ more characters\)$/);
  });

  test('Python: the traceback under the error', async () => {
    const r = await svc(['trigger', 'pyfail::divide', 'by=0', '--verbose']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: invocation_failed: division by zero\nstack trace \(from the function's worker\):\n  │ Traceback \(most recent call last\):/);
    assert.match(r.stderr, /in inner_divide\n/);
    assert.match(r.stderr, /  │ ZeroDivisionError: division by zero\n/);
  });

  test('svc logs for the failing worker shows the failure with its stack trace, JavaScript and Python', async () => {
    assert.equal((await svc(['trigger', 'jsfail::fail'])).code, 1);
    assert.equal((await svc(['trigger', 'pyfail::divide', 'by=0'])).code, 1);
    const js = await svc(['logs', '--worker', 'jsfail', '--level', 'error']);
    assert.equal(js.code, 0, js.stderr);
    assert.match(js.stdout, / ERROR jsfail jsfail::fail jsfail::fail failed: invocation_failed: boom in js( trace=\w+)?\n  │ Error: boom in js\n  │ +at deepHelper/);
    const py = await svc(['logs', '--worker', 'pyfail', '--level', 'error']);
    assert.equal(py.code, 0, py.stderr);
    assert.match(py.stdout, / ERROR pyfail pyfail::divide pyfail::divide failed: invocation_failed: division by zero( trace=\w+)?\n  │ Traceback \(most recent call last\):/);
    assert.match(py.stdout, /  │ ZeroDivisionError: division by zero/);
    const json = JSON.parse((await svc(['logs', '--worker', 'jsfail', '--level', 'error', '--json', '-n', '1'])).stdout.trim()) as { data: { stacktrace: string } };
    assert.match(json.data.stacktrace, /at deepHelper/);
  });

  /** The stack trace the console's trace view shows for the latest trace rooted at `fn`. */
  async function stackOnConsole(page: Page, fn: string): Promise<string> {
    await page.goto(`${consoleProc!.url}#/traces`);
    await page.locator(`[data-testid="trace-row"][data-root="${fn}"]`).first().click();
    const span = page.locator(`[data-testid="span-row"][data-function="${fn}"]`);
    await span.waitFor({ timeout: 15_000 });
    assert.equal(await span.getAttribute('data-status'), 'error');
    return span.locator('[data-testid="span-stack"]').innerText({ timeout: 15_000 });
  }

  test('the console\'s trace view shows the stack trace of a JavaScript and a Python failure', async () => {
    assert.equal((await svc(['trigger', 'jsfail::fail'])).code, 1);
    assert.equal((await svc(['trigger', 'pyfail::divide', 'by=0'])).code, 1);
    consoleProc = await startConsole(engine.url);
    browser = await launchChromium();
    const page = await browser.newPage();

    const js = await stackOnConsole(page, 'jsfail::fail');
    assert.match(js, /^Error: boom in js\n\s+at deepHelper/);
    assert.ok(js.split('\n').filter((l) => l.includes('at deepHelper')).length > 20, 'the whole stack, not its first lines');

    const py = await stackOnConsole(page, 'pyfail::divide');
    assert.match(py, /^Traceback \(most recent call last\):\n/);
    assert.match(py, /in inner_divide\n/);
    assert.match(py, /ZeroDivisionError: division by zero\s*$/);
  });
});
