/**
 * `svc worker add <dir> --force` with the engine running installs the worker's dependencies once.
 * Before: the CLI reinstalled them (showing the output), then asked the engine for a forced
 * restart, which installed them all over again before starting the worker.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EngineProcess, ROOT, runSvc, tempDir, type WorkerListRow } from './helpers/cli.js';

const SDK = pathToFileURL(join(ROOT, 'sdk', 'typescript', 'dist', 'index.js')).href;

describe('svc worker add --force with the engine running', { timeout: 180_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 120_000 });
  const dir = join(tmp.dir, 'counted');
  const installs = (): number => readFileSync(join(dir, 'installs.log'), 'utf8').split('\n').filter(Boolean).length;
  const pidOf = async (): Promise<number | null | undefined> => {
    const r = await svc(['worker', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as WorkerListRow[]).find((w) => w.name === 'counted')?.pid;
  };

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    mkdirSync(dir);
    // The install script counts its runs; the worker only has to connect.
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: counted\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "echo installed >> installs.log"\n  start: node w.mjs\n');
    writeFileSync(join(dir, 'w.mjs'), `import { registerWorker } from ${JSON.stringify(SDK)};\nregisterWorker(process.env.SVC_URL, { echoLogs: false }).registerFunction('counted::ping', () => 'pong');\n`);
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
  });
  after(async () => {
    await engine?.stop();
    tmp.remove();
  });

  test('add installs once; add --force reinstalls once and restarts it', async () => {
    const added = await svc(['worker', 'add', './counted']);
    assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}`);
    assert.equal(installs(), 1);
    const firstPid = await pidOf();
    assert.ok(firstPid, 'running');

    const forced = await svc(['worker', 'add', './counted', '--force']);
    assert.equal(forced.code, 0, `${forced.stdout}\n${forced.stderr}`);
    assert.match(forced.stdout, /✓ dependencies installed in /);
    assert.match(forced.stdout, /✓ counted restarted \(pid \d+\) and connected/);
    assert.equal(installs(), 2, 'installed once by --force, not again by the restart');
    const secondPid = await pidOf();
    assert.ok(secondPid && secondPid !== firstPid, `restarted: pid ${firstPid} → ${secondPid}`);
    assert.equal((await svc(['trigger', 'counted::ping'])).stdout, '"pong"\n');
  });

  test('add --force of a worker config.yaml did not list starts it: auto-started, not restarted', async () => {
    const fresh = join(tmp.dir, 'fresh');
    mkdirSync(fresh);
    writeFileSync(join(fresh, 'svc.worker.yaml'), 'name: fresh\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: node w.mjs\n');
    writeFileSync(join(fresh, 'w.mjs'), `import { registerWorker } from ${JSON.stringify(SDK)};\nregisterWorker(process.env.SVC_URL, { echoLogs: false }).registerFunction('fresh::ping', () => 'pong');\n`);
    const added = await svc(['worker', 'add', './fresh', '--force']);
    assert.equal(added.code, 0, `${added.stdout}\n${added.stderr}`);
    assert.match(added.stdout, /✓ fresh auto-started \(pid \d+\)/);
  });
});
