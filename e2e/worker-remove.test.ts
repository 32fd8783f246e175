/**
 * `svc worker remove` drains (issue 25, item 8): a call in flight to the worker (2 s) finishes and
 * its caller gets the result; a new call is no longer routed to it; --force stops at once. Before,
 * the worker was sent SIGTERM at once and every call in flight failed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, ROOT, runSvc, tempDir, until } from './helpers/cli.js';

const SDK = pathToFileURL(join(ROOT, 'sdk', 'typescript', 'dist', 'index.js')).href;

function writeSlowWorker(dir: string, name: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'svc.worker.yaml'), `name: ${name}\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: node w.mjs\n`);
  writeFileSync(
    join(dir, 'w.mjs'),
    `import { registerWorker } from ${JSON.stringify(SDK)};\nconst w = registerWorker(process.env.SVC_URL, { echoLogs: false });\nw.registerFunction('${name}::wait', async (d) => { await new Promise((r) => setTimeout(r, d.ms)); return { waited: d.ms }; });\n`,
  );
}

describe('svc worker remove', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let client: Worker;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 60_000 });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    writeSlowWorker(join(tmp.dir, 'slow'), 'slow');
    writeSlowWorker(join(tmp.dir, 'quick'), 'quick');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    for (const w of ['./slow', './quick']) {
      const r = await svc(['worker', 'add', w]);
      assert.equal(r.code, 0, r.stderr);
    }
    client = registerWorker(engine.url, { workerName: 'remove-test', echoLogs: false });
    await client.ready(5000);
  });
  after(async () => {
    await client?.shutdown();
    await engine?.stop();
    tmp.remove();
  });

  // Before: remove said "worker slw is not in config.yaml", restart "Worker slw is not listed in
  // /…/config.yaml", logs "no logs for worker slw (… does not exist; has it been started?)", and
  // remove without a config.yaml printed oclif's ENOENT block.
  test('a mistyped worker name: worker_not_found naming the one meant and those listed', async () => {
    for (const command of ['remove', 'restart', 'logs']) {
      const r = await svc(['worker', command, 'slw']);
      assert.equal(r.code, 1, `${command}: ${r.stderr}`);
      // One file name for all three (before: remove and logs said "config.yaml", restart the absolute path).
      assert.equal(r.stderr, `error: worker_not_found: Worker slw is not listed in ${join(tmp.dir, 'config.yaml')} (did you mean "slow"?); it lists: slow, quick\n`, command);
    }
    // A name with an escape sequence is shown escaped, as every other message shows what it was sent
    // (before: remove and logs wrote it raw, and `\x1b[2J` cleared the terminal).
    for (const command of ['remove', 'restart', 'logs']) {
      const r = await svc(['worker', command, 'sl\x1b[2Jw\nINFO']);
      assert.equal(r.code, 1, `${command}: ${r.stderr}`);
      assert.equal(r.stderr, `error: worker_not_found: Worker sl\\u001b[2Jw\\nINFO is not listed in ${join(tmp.dir, 'config.yaml')}; it lists: slow, quick\n`, command);
    }
    const elsewhere = tempDir();
    try {
      for (const command of ['remove', 'logs']) {
        const r = await runSvc(['worker', command, 'slow'], { cwd: elsewhere.dir });
        assert.equal(r.stderr, `error: invalid_config: ${join(elsewhere.dir, 'config.yaml')}: file not found\n`, command);
        assert.equal(r.code, 2, command);
      }
    } finally {
      elsewhere.remove();
    }
  });

  // Before: "✓ quick auto-started (pid N) and connected", though nothing was started (same pid).
  test('adding a worker that runs already says so and leaves it alone', async () => {
    const first = await svc(['worker', 'add', './quick', '--json']);
    assert.equal(first.code, 0, first.stderr);
    const pid = (JSON.parse(first.stdout) as { pid: number }).pid;
    const again = await svc(['worker', 'add', './quick']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`✓ quick was already running \\(pid ${pid}, connected\\), supervised by the engine at \\S+; left as it is \\(svc worker restart quick restarts it\\)\\n$`));
    assert.doesNotMatch(again.stdout, /auto-started/);
    const json = JSON.parse((await svc(['worker', 'add', './quick', '--json'])).stdout) as { started: boolean; pid: number };
    assert.deepEqual([json.started, json.pid], [false, pid]);
  });

  test('a 3 s call in flight (the issue asks 2 s; 3 s leaves room for the CLI to start on a busy machine) finishes; new calls are not routed to the draining worker', async () => {
    const inFlight = client.trigger<{ waited: number }>({ function_id: 'slow::wait', payload: { ms: 3000 }, timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    let answered = false;
    void inFlight.then(() => (answered = true));
    const removing = svc(['worker', 'remove', 'slow']);
    // Routed nowhere once the drain began: the worker left the registry while it finishes its call.
    await until('slow::wait to leave the registry', async () => {
      const r = await client.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'slow::wait' } }).catch((e: unknown) => e);
      return r instanceof InvocationError && r.code === 'function_not_found';
    }, 10_000);
    assert.equal(answered, false, 'the drain began while the call was in flight');
    await assert.rejects(client.trigger({ function_id: 'slow::wait', payload: { ms: 1 }, timeoutMs: 5000 }), (e: unknown) => e instanceof InvocationError && e.code === 'function_not_found');
    assert.deepEqual(await inFlight, { waited: 3000 });
    const r = await removing;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /✓ removed slow from config\.yaml and stopped it \(after its 1 call\(s\) in flight finished\)/);
    assert.ok(Date.now() - t0 >= 1200, 'remove waited for the call');
  });

  test('--force stops at once: the call in flight fails', async () => {
    const inFlight = client.trigger({ function_id: 'quick::wait', payload: { ms: 5000 }, timeoutMs: 20_000 }).then(
      () => 'answered',
      (e: unknown) => (e instanceof InvocationError ? e.code : String(e)),
    );
    await new Promise((r) => setTimeout(r, 300));
    const r = await svc(['worker', 'remove', 'quick', '--force']);
    assert.equal(r.code, 0, r.stderr);
    assert.notEqual(await inFlight, 'answered');
  });
});

// Under `svc dev` the engine applies config.yaml's edits itself: remove took the entry out first,
// svc dev's watch stopped the worker at once (its calls in flight failed: a queue job burnt an
// attempt), and the engine's drain then found nothing to drain.
describe('svc worker remove under svc dev', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let client: Worker;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 60_000 });

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    writeSlowWorker(join(tmp.dir, 'slow'), 'slow');
    engine = await EngineProcess.start(['dev', '--config', 'config.yaml'], { cwd: tmp.dir });
    const r = await svc(['worker', 'add', './slow']);
    assert.equal(r.code, 0, r.stderr);
    client = registerWorker(engine.url, { workerName: 'remove-dev-test', echoLogs: false });
    await client.ready(5000);
  });
  after(async () => {
    await client?.shutdown();
    await engine?.stop();
    tmp.remove();
  });

  test('the call in flight finishes before the worker stops, as without svc dev', async () => {
    const inFlight = client.trigger<{ waited: number }>({ function_id: 'slow::wait', payload: { ms: 3000 }, timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 300));
    const r = await svc(['worker', 'remove', 'slow']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await inFlight, { waited: 3000 });
    assert.match(r.stdout, /✓ removed slow from config\.yaml and stopped it \(after its 1 call\(s\) in flight finished\)/);
  });
});
