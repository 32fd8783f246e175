/**
 * Failures are visible (issue 25, items 1 and 2), through the CLI and the console as a user meets
 * them. Before: `svc worker add` printed `✓ … auto-started (pid N)` and exited 0 for a TypeScript
 * worker whose package.json lacks tsx, a Python worker with a syntax error and svc-http on a port
 * already taken; the worker then crash-looped with the reason only in `svc worker logs`, and a
 * crash-looping worker disappeared from the console's Workers page. Now each `worker add` exits 1
 * with how the worker exited and its last lines of output, `svc worker list --json` shows the
 * crash loop with its last error, and so does the console (headless Chromium), with Restart/Stop.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { EngineProcess, closedPort, runSvc, tempDir, until, type WorkerListRow } from './helpers/cli.js';
import { startConsole } from './helpers/console.js';
import { launchChromium } from '../test/helpers/chromium.js';

function writeWorker(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

describe('a worker that fails to start is reported, not celebrated', { timeout: 240_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let taken: Server;
  let takenPort: number;
  let browser: Browser | undefined;
  let consoleProc: Awaited<ReturnType<typeof startConsole>> | undefined;
  const svc = (args: string[], timeoutMs = 120_000) => runSvc(args, { cwd: tmp.dir, timeoutMs });
  const list = async (): Promise<WorkerListRow[]> => {
    const r = await svc(['worker', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as WorkerListRow[];
  };

  before(async () => {
    const port = await closedPort();
    writeFileSync(join(tmp.dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${port}\nworkers: []\n`);
    writeWorker(join(tmp.dir, 'no-tsx'), {
      'svc.worker.yaml': 'name: no-tsx\nruntime:\n  kind: typescript\n  entry: src/worker.ts\n',
      'package.json': '{"name":"no-tsx","version":"0.0.0","private":true,"type":"module"}\n',
      'src/worker.ts': 'console.log("never runs");\n',
    });
    writeWorker(join(tmp.dir, 'bad-python'), {
      'svc.worker.yaml': 'name: bad-python\nruntime:\n  kind: python\n  entry: worker.py\n',
      'requirements.txt': '# nothing: it fails before it imports anything\n',
      'worker.py': 'def broken(:\n    pass\n',
    });
    taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    takenPort = (taken.address() as { port: number }).port;
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await browser?.close();
    consoleProc?.child.kill('SIGTERM');
    await engine?.stop();
    taken?.close();
    tmp.remove();
  });

  // Before: each of these was "<target> is neither a worker directory nor a built-in worker (…)".
  test('a target that names no worker: what it is instead, and the closest one', async () => {
    const before = readFileSync(join(tmp.dir, 'config.yaml'), 'utf8');
    for (const [target, line] of [
      ['svc-queu', 'svc-queu is not a built-in worker (did you mean "svc-queue"?); built-in workers: svc-state, svc-http, svc-queue, svc-cron'],
      ['./bad-pythn', './bad-pythn: no such directory (did you mean "./bad-python"?)'],
      ['./bad-python/worker.py', "./bad-python/worker.py is a file: give the worker's directory (the one holding svc.worker.yaml), e.g. ./bad-python"],
      ['./workers/greeter', './workers/greeter: no such directory (a worker directory holds svc.worker.yaml; svc worker new ./workers/greeter --language python creates one); built-in workers: svc-state, svc-http, svc-queue, svc-cron'],
    ] as const) {
      const r = await svc(['worker', 'add', target]);
      assert.equal(r.code, 2, target);
      // With a code, as every other CLI error (docs/errors.md).
      assert.equal(r.stderr, `error: worker_not_found: ${line}\n`, target);
    }
    assert.equal(readFileSync(join(tmp.dir, 'config.yaml'), 'utf8'), before);
  });

  test('a TypeScript worker without tsx: exit 1, with the exit status and the missing package named', async () => {
    const r = await svc(['worker', 'add', './no-tsx']);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stdout, /auto-started/);
    assert.match(r.stderr, /worker_start_failed: Worker no-tsx exited while starting \(exit code 1\)/);
    assert.match(r.stderr, /last output of no-tsx \(exit code 1\):[\s\S]*tsx/);
  });

  test('a Python worker with a syntax error: exit 1 with the SyntaxError', async () => {
    const r = await svc(['worker', 'add', './bad-python']);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /Worker bad-python exited while starting \(exit code 1\): SyntaxError/);
    assert.match(r.stderr, /│ .*def broken\(:/);
    // What to do next: it stays in config.yaml, so the next step is a restart (or a remove).
    assert.match(r.stderr, /\nfull log: svc worker logs bad-python\nfix it, then: svc worker restart bad-python {3}\(or svc worker remove bad-python\)\n$/);
  });

  // Before: "exited while starting (exit code 1): Node.js v20.20.2", and the tail under it held
  // only esbuild's stack frames: the syntax error itself was in neither.
  test('a TypeScript worker with a syntax error: exit 1 naming the file, line and the error', async () => {
    const made = await svc(['worker', 'new', './ts-typo', '--language', 'typescript']);
    assert.equal(made.code, 0, made.stderr);
    const file = join(tmp.dir, 'ts-typo', 'src', 'worker.ts');
    writeFileSync(file, readFileSync(file, 'utf8').replace('registerFunction(', 'registerFunction(((('));
    const r = await svc(['worker', 'add', './ts-typo']);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /Worker ts-typo exited while starting \(exit code 1\): \S*worker\.ts:\d+:\d+: ERROR: /);
    assert.match(r.stderr, /last output of ts-typo \(exit code 1\):\n[\s\S]*│ \S*worker\.ts:\d+:\d+: ERROR: [\s\S]*│ {5}… \d+ more frames\n/);
    assert.equal((await svc(['worker', 'remove', 'ts-typo', '--force'])).code, 0);
  });

  // Before: "✓ … auto-started (pid N) and connected", exit 0: the worker connected, then its
  // registerTrigger was refused and it exited, and the CLI had returned at the connection. Since a
  // worker counts as started only once it has stayed connected, its registrations settled.
  test('a worker whose trigger is refused right after it connects: exit 1 naming the refusal', async () => {
    const made = await svc(['worker', 'new', './refused-trigger', '--language', 'typescript']);
    assert.equal(made.code, 0, made.stderr);
    const file = join(tmp.dir, 'refused-trigger', 'src', 'worker.ts');
    // A config over engine.limits.max_stored_value_bytes: the engine itself refuses the binding.
    writeFileSync(
      file,
      readFileSync(file, 'utf8') +
        "\nawait worker.registerTrigger({ type: 'http', function_id: 'refused-trigger::hello', config: { api_path: '/x', http_method: 'GET', blob: 'x'.repeat(70_000) } });\n",
    );
    const r = await svc(['worker', 'add', './refused-trigger']);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stdout, /auto-started/);
    // The error's own line, not the closing brace of the properties Node prints after its stack.
    assert.match(r.stderr, /Worker refused-trigger exited while starting \(exit code 1\): InvocationError: Trigger \S+: its config of \d+ characters is over engine\.limits\.max_stored_value_bytes/);
    assert.equal((await svc(['worker', 'remove', 'refused-trigger', '--force'])).code, 0);
  });

  // Before: the install's output twice (streamed, then again in the error) and no next step,
  // though the worker stays in config.yaml.
  test('an install that fails: its output once, then what to do next', async () => {
    writeWorker(join(tmp.dir, 'bad-install'), {
      'svc.worker.yaml': 'name: bad-install\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "echo ERROR: no such package zzz; exit 1"\n  start: node w.mjs\n',
      'w.mjs': '',
    });
    const r = await svc(['worker', 'add', './bad-install']);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    // The output line once, as it came; not again under the error.
    assert.match(r.stdout, /\n {2}│ ERROR: no such package zzz\n/);
    assert.doesNotMatch(r.stderr, /^ERROR: no such package zzz$/m);
    assert.match(r.stderr, /^error: install_failed: \S+bad-install: "echo ERROR: no such package zzz; exit 1" failed with exit code 1 \(its output is above\)\nfix it, then: svc worker add \.\/bad-install {3}\(bad-install stays listed in config\.yaml; svc worker remove bad-install takes it out\)\n$/);
    assert.equal((await svc(['worker', 'remove', 'bad-install'])).code, 0);
  });

  test('svc-http on a port already taken: exit 1 naming the port', async () => {
    const r = await svc(['worker', 'add', 'svc-http', '--set', `port=${takenPort}`]);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /Worker svc-http exited while starting \(exit code \d+\)/);
    assert.match(r.stderr, new RegExp(`${takenPort}`));
  });

  test('the engine log line of each exit carries the last line of output', async () => {
    await until('the exit line', () => /bad-python exited \(exit code 1: SyntaxError/.test(engine.stdout + engine.stderr), 10_000);
  });

  test('worker list --json: the crash loop with its last error, numbers as numbers', async () => {
    const row = await until(
      'bad-python to be reported crash-looping',
      async () => {
        const r = (await list()).find((w) => w.name === 'bad-python');
        if (r?.status === 'crash-loop') return r;
        await new Promise((res) => setTimeout(res, 500));
        return null;
      },
      60_000,
    );
    assert.match(String(row.last_error), /exited 5 times within 60s \(last: exit code 1: SyntaxError/);
    assert.ok(row.last_exit!.output.some((l) => l.includes('SyntaxError')));
    assert.equal(typeof row.restarts, 'number');
    assert.equal(row.connections, 0);
    assert.deepEqual(row.pids, []);
    const table = await svc(['worker', 'list']);
    assert.match(table.stdout, /bad-python .*crash-loop .*SyntaxError/);
  });

  test('the console shows the crash-looping worker with its last error, and restarts it', async () => {
    consoleProc = await startConsole(engine.url);
    browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(consoleProc.url);
    const row = page.locator('[data-testid="supervised-row"][data-name="bad-python"]');
    await row.waitFor({ timeout: 15_000 });
    assert.match(await row.innerText(), /crash-loop/);
    assert.match(await row.locator('[data-testid="supervised-error"]').innerText(), /SyntaxError/);
    assert.match(await row.locator('[data-testid="supervised-output"]').innerText(), /def broken\(:/);
    // Restart from the console: it fails again (the file is unchanged), and says so.
    await row.locator('[data-testid="supervised-restart"]').click();
    await page.getByText(/worker_start_failed|exited while starting/).first().waitFor({ timeout: 15_000 });
    // Stop: the row stays, stopped.
    await row.locator('[data-testid="supervised-stop"]').click();
    await until('the row to show stopped', async () => /stopped/.test(await row.innerText()), 15_000);

    // A connected supervised worker has Restart and Stop on its row too.
    const add = await svc(['worker', 'add', 'svc-state']);
    assert.equal(add.code, 0, add.stderr);
    const state = page.locator('[data-testid="worker-row"][data-name="svc-state"]');
    await state.waitFor({ timeout: 15_000 });
    const pidBefore = (await list()).find((w) => w.name === 'svc-state')!.pid;
    await state.locator('[data-testid="supervised-restart"]').click();
    await until('svc-state restarted', async () => {
      const r = (await list()).find((w) => w.name === 'svc-state');
      return r && r.pid !== pidBefore && r.connections === 1 ? r : null;
    }, 20_000);
  });
});
