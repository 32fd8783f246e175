/**
 * The supervisor with the process runtime: the dependency install cache, a worker started with its
 * environment and restarted after a crash, crash loops, replicas. Stops and restarts that race a
 * start or an install: supervisor-races.test.ts; the files it reads: config-files.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifest } from '../../src/supervisor/manifest.js';
import { parseWorkerEntries } from '../../src/supervisor/worker-entries.js';
import { dependencyHash, ensureInstalled, isInstalled } from '../../src/supervisor/install.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { eventually, sleep } from '../helpers/util.js';
import { alive, nodeManifest, tempRoot, workerDirIn } from './worker-dirs.js';

const rootOf = tempRoot();
const workerDir = (name: string, manifest: string, files: Record<string, string> = {}): string => workerDirIn(rootOf(), name, manifest, files);

describe('dependency install cache', () => {
  test('installs once, skips while the dependency files are unchanged, reinstalls on change or force', async () => {
    const dir = workerDir('inst', nodeManifest('inst', 'node w.mjs').replace('install: "true"', 'install: "echo run >> installs.txt"'), {
      'w.mjs': '',
      'package.json': '{"name":"inst","version":"1.0.0"}',
    });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const m = loadManifest(dir);
    const lines: string[] = [];
    assert.equal((await ensureInstalled(m, { onLine: (l) => lines.push(l) })).status, 'installed');
    assert.ok(lines.some((l) => l.includes('echo run')));
    assert.equal(isInstalled(m), true);
    assert.equal((await ensureInstalled(m)).status, 'cached');
    const before = dependencyHash(m);
    writeFileSync(join(dir, 'package.json'), '{"name":"inst","version":"1.0.1"}');
    assert.notEqual(dependencyHash(m), before);
    assert.equal((await ensureInstalled(m)).status, 'installed');
    assert.equal((await ensureInstalled(m, { force: true })).status, 'installed');
    assert.equal(readFileSync(join(dir, 'installs.txt'), 'utf8').trim().split('\n').length, 3);
  });

  test('a failing install reports the command and its output', async () => {
    const dir = workerDir('instfail', nodeManifest('instfail', 'node w.mjs').replace('install: "true"', 'install: "echo broken-dep >&2; exit 3"'), { 'w.mjs': '' });
    await assert.rejects(ensureInstalled(loadManifest(dir)), /failed with exit code 3:\nbroken-dep/);
  });
});

describe('supervision (process runtime)', () => {
  function sup(configFile: string): Supervisor {
    return new Supervisor({ configFile, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 50, crashLoopExits: 3, crashWindowMs: 10_000, stopGraceMs: 2000 });
  }

  test('starts a worker with SVC_URL and its name, keeps its output, restarts it after kill -9, and stops its whole process group', async () => {
    const dir = workerDir(
      'steady',
      nodeManifest('steady', 'node w.mjs'),
      {
        // Prints its env, spawns a grandchild (as npx/tsx would), then idles.
        'w.mjs': `import { spawn } from 'node:child_process';
console.log('url=' + process.env.SVC_URL + ' name=' + process.env.SVC_WORKER_NAME);
const g = spawn('sleep', ['300'], { stdio: 'ignore' });
console.log('grandchild=' + g.pid);
setInterval(() => {}, 1000);`,
      },
    );
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const cfg = join(rootOf(), 'steady.yaml');
    writeFileSync(cfg, 'workers: []\n');
    const s = sup(cfg);
    const [entry] = parseWorkerEntries(cfg, [{ name: 'steady', path: dir }]);
    const m = s.describe(await s.start(entry!));
    assert.equal(m.status, 'running');
    const pid = m.pid as number;
    assert.ok(alive(pid));
    const log = m.log_file as string;
    await eventually(() => assert.match(readFileSync(log, 'utf8'), /url=ws:\/\/127\.0\.0\.1:1 name=steady/));
    // The grandchild line is printed just after the first one: wait for it too.
    await eventually(() => assert.match(readFileSync(log, 'utf8'), /grandchild=\d+/));
    const grandchild = Number(/grandchild=(\d+)/.exec(readFileSync(log, 'utf8'))![1]);
    process.kill(pid, 'SIGKILL');
    await eventually(() => {
      const d = s.get('steady')!;
      assert.equal(d.status, 'running');
      assert.notEqual(d.pid, pid);
      assert.equal(d.restarts, 1);
    });
    // The killed leader's grandchild went with its group.
    await eventually(() => assert.equal(alive(grandchild), false));
    const pid2 = s.get('steady')!.pid as number;
    await s.stopAll();
    assert.equal(alive(pid2), false);
    assert.equal(s.get('steady')!.status, 'stopped');
  });

  test('a restart that cannot start the process is retried after the backoff, not given up on', async () => {
    const dir = workerDir('vanishing', nodeManifest('vanishing', 'node w.mjs'), { 'w.mjs': 'setInterval(() => {}, 1000);' });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const cfg = join(rootOf(), 'vanishing.yaml');
    writeFileSync(cfg, 'workers: []\n');
    const logs: string[] = [];
    const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 100, crashLoopExits: 5, crashWindowMs: 10_000, log: (_l, msg) => logs.push(msg) });
    const [entry] = parseWorkerEntries(cfg, [{ name: 'vanishing', path: dir }]);
    const pid = s.describe(await s.start(entry!)).pid as number;
    // Its directory gone when it is restarted: the start fails (as a spawn does with EMFILE while a
    // flood holds every descriptor). Before, that restart was the last: the worker stayed down for good.
    renameSync(dir, `${dir}.away`);
    process.kill(pid, 'SIGKILL');
    await eventually(() => assert.ok(logs.some((l) => /^restart of vanishing failed: /.test(l)), logs.join('\n')), 5000);
    renameSync(`${dir}.away`, dir);
    await eventually(() => {
      const d = s.get('vanishing')!;
      assert.equal(d.status, 'running');
      assert.notEqual(d.pid, pid);
    }, 5000);
    await s.stopAll();
  });

  test('a worker that keeps crashing is reported as a crash loop and not restarted forever', async () => {
    const dir = workerDir('crashy', nodeManifest('crashy', 'node w.mjs'), { 'w.mjs': 'console.error("dying"); process.exit(3);' });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const cfg = join(rootOf(), 'crashy.yaml');
    writeFileSync(cfg, 'workers: []\n');
    const logs: string[] = [];
    const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 20, crashLoopExits: 3, crashWindowMs: 10_000, log: (_l, msg) => logs.push(msg) });
    const [entry] = parseWorkerEntries(cfg, [{ name: 'crashy', path: dir }]);
    await s.start(entry!);
    await eventually(() => assert.equal(s.get('crashy')!.status, 'crash-loop'), 5000);
    const restarts = s.get('crashy')!.restarts;
    await sleep(300);
    assert.equal(s.get('crashy')!.restarts, restarts, 'no restarts after the crash loop was detected');
    assert.match(String(s.get('crashy')!.last_error), /exited 3 times within 10s \(last: exit code 3: dying\)/);
    // Each exit is reported with what the worker printed last, in the row and in the engine's log.
    const exit = s.get('crashy')!.last_exit as { how: string; output: string[] };
    assert.equal(exit.how, 'exit code 3');
    assert.deepEqual(exit.output, ['dying']);
    assert.ok(logs.some((l) => /crashy exited \(exit code 3: dying\); restarting/.test(l)), logs.join('\n'));
    assert.ok(logs.some((l) => l.includes('crash-looping') && l.includes('svc worker restart crashy')));
    assert.match(readFileSync(s.get('crashy')!.log_file as string, 'utf8'), /dying/);
    await s.stopAll();
  });

  test('under svc dev the crash-loop message says that saving the fix restarts it', async () => {
    // Before, it said `svc worker restart`, though svc dev restarts a local worker on a save.
    const dir = workerDir('crashy-dev', nodeManifest('crashy-dev', 'node w.mjs'), { 'w.mjs': 'process.exit(3);' });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const cfg = join(rootOf(), 'crashy-dev.yaml');
    writeFileSync(cfg, 'workers: []\n');
    const logs: string[] = [];
    const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 20, crashLoopExits: 3, crashWindowMs: 10_000, sourcesWatched: true, log: (_l, msg) => logs.push(msg) });
    const [entry] = parseWorkerEntries(cfg, [{ name: 'crashy-dev', path: dir }]);
    await s.start(entry!);
    await eventually(() => assert.equal(s.get('crashy-dev')!.status, 'crash-loop'), 5000);
    const told = logs.find((l) => l.includes('crash-looping'));
    assert.match(String(told), /; not restarting\. See `svc worker logs crashy-dev`, fix it and save: svc dev restarts it$/);
    await s.stopAll();
  });

  test('replicas start that many instances', async () => {
    const dir = workerDir('multi', nodeManifest('multi', 'node w.mjs'), { 'w.mjs': 'setInterval(() => {}, 1000);' });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const cfg = join(rootOf(), 'multi.yaml');
    writeFileSync(cfg, 'workers: []\n');
    const s = sup(cfg);
    const [entry] = parseWorkerEntries(cfg, [{ name: 'multi', path: dir, replicas: 3 }]);
    const d = s.describe(await s.start(entry!));
    assert.equal((d.pids as number[]).length, 3);
    assert.equal(new Set(d.pids as number[]).size, 3);
    await s.stopAll();
    for (const p of d.pids as number[]) assert.equal(alive(p), false);
    assert.ok(existsSync(d.log_file as string));
  });
});
