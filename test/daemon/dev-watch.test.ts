/**
 * `svc dev`'s watch of a worker's directory (src/daemon/dev-watch.ts) with a real supervisor and
 * process: the lock file the worker's own install writes while it starts (npm install rewrites
 * package-lock.json) does not restart it; an edit of its source, once it runs or while it starts,
 * does. Before, the install's write restarted the worker in the middle of its first start; then,
 * for a while, an edit made while it started was lost.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevWatch, type DevWatch } from '../../src/daemon/dev-watch.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { parseWorkerEntries, type WorkerEntry } from '../../src/supervisor/worker-entries.js';
import { eventually, sleep } from '../helpers/util.js';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-devwatch-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

/** A TypeScript worker `name` whose install script is `install`, supervised and watched as `svc dev` does. */
function watchedWorker(name: string, install: string): { dir: string; supervisor: Supervisor; entry: WorkerEntry; dev: DevWatch; logs: string[] } {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'svc.worker.yaml'), `name: ${name}\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: "${install}"\n  start: node w.mjs\n`);
  writeFileSync(join(dir, 'package.json'), `{"name":"${name}","version":"1.0.0"}`);
  writeFileSync(join(dir, 'w.mjs'), 'setInterval(() => {}, 1000);');
  const cfg = join(root, `${name}.yaml`);
  writeFileSync(cfg, 'workers: []\n');
  const logs: string[] = [];
  const supervisor = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', stopGraceMs: 2000, log: (_l, m) => logs.push(m) });
  const [entry] = parseWorkerEntries(cfg, [{ name, path: dir }]);
  const dev = startDevWatch({ configFile: cfg, supervisor, initial: [entry!], log: (_l, m) => logs.push(m) });
  return { dir, supervisor, entry: entry!, dev, logs };
}

test("a worker's own install writing into its directory does not restart it; a source edit does", async () => {
  // The install writes a lock file into the directory, as npm install does package-lock.json.
  const { dir, supervisor, entry, dev, logs } = watchedWorker('locky', 'sleep 0.5; echo locked > deps.lock');
  try {
    await supervisor.start(entry);
    await sleep(800); // past the debounce of any event the install caused
    assert.deepEqual(logs.filter((l) => /restarting/.test(l)), [], logs.join('\n'));
    assert.equal(logs.filter((l) => /^started locky/.test(l)).length, 1, logs.join('\n'));

    writeFileSync(join(dir, 'w.mjs'), 'setInterval(() => {}, 2000);');
    await eventually(() => assert.ok(logs.some((l) => l === 'dev: w.mjs changed; restarting locky'), logs.join('\n')), 5000);
    // The engine shuts down while that restart is on its way: the restart's start must launch
    // nothing after the stop (its instance would outlive the engine's stop of every worker).
    await supervisor.stopAll();
    await sleep(1500);
    assert.deepEqual(supervisor.instances(), [], logs.join('\n'));
  } finally {
    dev.close();
    await supervisor.stopAll();
  }
});

test('a source edited while the worker starts restarts it once the edit is seen, leaving one instance', async () => {
  const { dir, supervisor, entry, dev, logs } = watchedWorker('slowstart', 'sleep 1');
  try {
    const first = supervisor.start(entry);
    await sleep(300); // installing
    writeFileSync(join(dir, 'w.mjs'), 'setInterval(() => {}, 2000);');
    await first;
    await eventually(() => assert.ok(logs.includes('dev: w.mjs changed; restarting slowstart'), logs.join('\n')), 5000);
    await eventually(() => assert.equal(supervisor.get('slowstart')?.status, 'running', logs.join('\n')), 10_000);
    assert.equal((supervisor.get('slowstart')!.pids as number[]).length, 1);
  } finally {
    dev.close();
    await supervisor.stopAll();
  }
});

test('a source replaced by a rename (sed -i, an editor\'s safe write) is still watched: later edits restart the worker too', async () => {
  // Node 20's recursive fs.watch on Linux lost such a file: after one sed -i, svc dev never saw it again.
  const { dir, supervisor, entry, dev, logs } = watchedWorker('renamed', 'true');
  const restarts = (): number => logs.filter((l) => l === 'dev: w.mjs changed; restarting renamed').length;
  try {
    await supervisor.start(entry);
    await sleep(400);
    writeFileSync(join(dir, 'w.tmp'), 'setInterval(() => {}, 3000);');
    renameSync(join(dir, 'w.tmp'), join(dir, 'w.mjs'));
    await eventually(() => assert.equal(restarts(), 1, logs.join('\n')), 5000);
    await sleep(400);
    writeFileSync(join(dir, 'w.mjs'), 'setInterval(() => {}, 4000);');
    await eventually(() => assert.equal(restarts(), 2, logs.join('\n')), 5000);
    // A directory made after the watch began is watched too; node_modules is not.
    mkdirSync(join(dir, 'lib'));
    await sleep(400);
    const before = logs.length;
    writeFileSync(join(dir, 'lib', 'util.mjs'), 'export const x = 1;');
    await eventually(() => assert.ok(logs.slice(before).includes('dev: lib/util.mjs changed; restarting renamed'), logs.join('\n')), 5000);
    mkdirSync(join(dir, 'node_modules', 'dep'), { recursive: true });
    await sleep(400);
    const quiet = logs.length;
    writeFileSync(join(dir, 'node_modules', 'dep', 'index.js'), '');
    await sleep(500);
    assert.deepEqual(logs.slice(quiet).filter((l) => /restarting/.test(l)), []);
  } finally {
    dev.close();
    await supervisor.stopAll();
  }
});
