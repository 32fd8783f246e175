/**
 * One install of a worker directory at a time (install.ts withInstallLock). `svc worker add` under
 * `svc dev` installed a new worker while the engine, which saw it appear in config.yaml, installed
 * and started it too: two pip installs into one .venv at once, and the worker launched before its
 * SDK was there. Here two installs of one directory start together: the install script runs once
 * and the second finds it done; a lock left by a process that is gone is taken over.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ensureInstalled } from '../../src/supervisor/install.js';
import { loadManifest } from '../../src/supervisor/manifest.js';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-install-lock-'));
});
after(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A TypeScript worker whose install takes 300 ms and counts its runs in installs.txt. */
function slowInstallWorker(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'svc.worker.yaml'), `name: ${name}\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: "sleep 0.3; echo run >> installs.txt"\n  start: node w.mjs\n`);
  writeFileSync(join(dir, 'package.json'), `{"name":"${name}","private":true}\n`);
  writeFileSync(join(dir, 'w.mjs'), '');
  return dir;
}

const runs = (dir: string): number => readFileSync(join(dir, 'installs.txt'), 'utf8').trim().split('\n').length;

describe('worker installs', () => {
  test('two installs of one directory at once: the script runs once, the second waits and finds it done', async () => {
    const dir = slowInstallWorker('twice');
    const lines: string[] = [];
    const [a, b] = await Promise.all([ensureInstalled(loadManifest(dir)), ensureInstalled(loadManifest(dir), { onLine: (l) => lines.push(l) })]);
    assert.deepEqual([a.status, b.status], ['installed', 'cached']);
    assert.equal(runs(dir), 1);
    assert.ok(lines.some((l) => /^waiting for another install of .*twice to finish \(pid \d+\)$/.test(l)), lines.join('\n'));
    assert.equal(existsSync(join(dir, 'node_modules', '.svc-install.lock')), false, 'the lock is released');
  });

  test('a venv whose creation was interrupted (python, no pip yet) is completed before the install script runs', { timeout: 120_000 }, async () => {
    // As Ctrl-C during `svc worker add` leaves it: the CLI's lock, and a .venv without pip. The
    // install then ran the next pip on PATH (another Python's), and the worker lacked its SDK.
    const dir = join(root, 'halfvenv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: halfvenv\nruntime:\n  kind: python\n  entry: w.py\nscripts:\n  install: "command -v pip > pip-used.txt"\n  start: python w.py\n');
    writeFileSync(join(dir, 'w.py'), '');
    assert.equal(spawnSync('python3', ['-m', 'venv', '--without-pip', '.venv'], { cwd: dir }).status, 0);
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(join(dir, '.venv', '.svc-install.lock'), `${gone.stdout}\n`);
    const lines: string[] = [];
    assert.equal((await ensureInstalled(loadManifest(dir), { onLine: (l) => lines.push(l) })).status, 'installed');
    assert.ok(lines.some((l) => l.startsWith('completing virtual environment')), lines.join('\n'));
    assert.equal(readFileSync(join(dir, 'pip-used.txt'), 'utf8').trim(), join(dir, '.venv', 'bin', 'pip'));
  });

  test('a lock left by a process that is gone is taken over', async () => {
    const dir = slowInstallWorker('stale');
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    writeFileSync(join(dir, 'node_modules', '.svc-install.lock'), `${gone.stdout}\n`);
    assert.equal((await ensureInstalled(loadManifest(dir))).status, 'installed');
    assert.equal(runs(dir), 1);
  });
});
