/**
 * Stops and restarts that come while the supervisor is still starting a worker (installing its
 * dependencies, or launching it): each leaves the worker as the latest command made it, and nothing
 * it started runs on. The rest of the supervision: supervisor.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifest } from '../../src/supervisor/manifest.js';
import { parseWorkerEntries, type WorkerEntry } from '../../src/supervisor/worker-entries.js';
import { isInstalled } from '../../src/supervisor/install.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { logFileOf } from '../../src/supervisor/launch.js';
import { ProcessRuntime } from '../../src/supervisor/process-runtime.js';
import { groupRuns, processStartToken } from '../../src/supervisor/process-identity.js';
import type { Instance, LaunchSpec, Runtime } from '../../src/supervisor/runtime.js';
import { eventually, sleep } from '../helpers/util.js';
import { alive, nodeManifest, tempRoot, workerDirIn } from './worker-dirs.js';

const rootOf = tempRoot();
const workerDir = (name: string, manifest: string, files: Record<string, string> = {}): string => workerDirIn(rootOf(), name, manifest, files);

describe('supervision: stops and restarts during a start (process runtime)', () => {
  /** A Node worker (in `dir`) whose install script is `install`, on a supervisor of its own that logs into `logs`. */
  function installingWorker(name: string, install: string): { s: Supervisor; entry: WorkerEntry; logs: string[]; dir: string } {
    const dir = workerDir(name, nodeManifest(name, 'node w.mjs').replace('install: "true"', () => `install: "${install}"`), {
      'w.mjs': 'setInterval(() => {}, 1000);',
      'package.json': `{"name":"${name}","version":"1.0.0"}`,
    });
    const cfg = join(rootOf(), `${name}.yaml`);
    writeFileSync(cfg, 'workers: []\n');
    const logs: string[] = [];
    const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 50, stopGraceMs: 2000, log: (_l, msg) => logs.push(msg) });
    const [entry] = parseWorkerEntries(cfg, [{ name, path: dir }]);
    return { s, entry: entry!, logs, dir };
  }

  test('a restart while the worker is still installing leaves one instance, not a second one nobody stops', async () => {
    // svc dev restarts a worker whose files change while its first start is still installing
    // (npm install rewriting package-lock.json does that). Before, both starts launched it: the
    // first instance was no replica's any more, served calls with the old code, outlived stops.
    const { s, entry, logs } = installingWorker('slowinstall', 'sleep 1');
    const first = s.start(entry);
    await sleep(300); // installing
    await s.restart(entry);
    await first;
    await sleep(300);
    const started = logs.flatMap((l) => /^started slowinstall \(process, pid (\d+)\)/.exec(l)?.[1] ?? []).map(Number);
    try {
      const listed = s.get('slowinstall')!.pids as number[];
      assert.equal(listed.length, 1);
      assert.deepEqual(started.filter(alive), listed, `started: ${started.join(', ')}; supervised: ${listed.join(', ')}`);
      await s.stopAll();
      for (const p of started) assert.equal(alive(p), false, `pid ${p} outlived the stop`);
    } finally {
      await s.stopAll();
      for (const p of started.filter(alive)) process.kill(-p, 'SIGKILL'); // the leaked one's whole group
    }
  });

  test('a start that fails after a stop or restart leaves the worker as that stop or restart made it', async () => {
    // The launch fails once (slowly, with nothing a stop could cancel); a stop, then a restart,
    // come in while it runs. Before, the stale start's failure marked the stopped worker failed,
    // and the restarted one's last_error. (An install under way is cancelled by the stop instead:
    // the test after this one.)
    let failNext = false;
    class FailsOnceSlowly implements Runtime {
      readonly name = 'process' as const;
      private readonly runtime = new ProcessRuntime();
      async launch(spec: LaunchSpec): Promise<Instance> {
        await sleep(600);
        if (failNext) {
          failNext = false;
          throw new Error('launch failed on purpose');
        }
        return this.runtime.launch(spec);
      }
    }
    const { entry, logs, dir } = installingWorker('failonce', 'true');
    const s = new Supervisor({ configFile: join(dir, '..', 'failonce.yaml'), engineUrl: 'ws://127.0.0.1:1', restartDelayMs: 50, stopGraceMs: 2000, log: (_l, msg) => logs.push(msg), runtimes: { process: new FailsOnceSlowly() } });
    try {
      failNext = true;
      const first = s.start(entry);
      await sleep(200); // launching
      await s.stop('failonce');
      await first;
      assert.equal(s.get('failonce')!.status, 'stopped', logs.join('\n'));
      assert.match(logs.join('\n'), /a start of failonce that was since stopped or restarted failed: launch failed on purpose/);

      failNext = true;
      const second = s.start(entry);
      await sleep(200);
      const third = s.restart(entry);
      await second;
      await third;
      const d = s.get('failonce')!;
      assert.equal(d.status, 'running', logs.join('\n'));
      assert.equal(d.last_error, null, logs.join('\n'));
    } finally {
      await s.stopAll();
    }
  });

  test('a stop while the worker installs ends the install, its whole process tree, within the stop grace', async () => {
    // `svc worker remove`, `restart` or the engine's Ctrl-C during an npm/pip install that takes
    // minutes. Before, the stop returned and the install ran on to its end (after the engine's
    // exit too); the stop now kills it: SIGTERM, SIGKILL after the grace for what ignores it.
    const { s, entry, logs, dir } = installingWorker('stopinstall', 'sh install.sh');
    writeFileSync(
      join(dir, 'install.sh'),
      [
        'sleep 60 & a=$!',
        "(trap '' TERM; sleep 60) & b=$!",
        'echo "$(ps -o pgid= -p $$ | tr -d " ") $$ $a $b" > install.pids',
        'wait',
      ].join('\n') + '\n',
    );
    const pidFile = join(dir, 'install.pids');
    let pids: number[] = [];
    try {
      const first = s.start(entry);
      await eventually(() => assert.equal((pids = existsSync(pidFile) ? readFileSync(pidFile, 'utf8').trim().split(/\s+/).map(Number) : []).length, 4), 10_000);
      const [group, ...members] = pids as [number, ...number[]];
      assert.ok(members.every(alive), 'installing');
      const t0 = Date.now();
      await s.stop('stopinstall');
      const took = Date.now() - t0;
      assert.ok(took < 2000 + 1500, `the stop took ${took} ms (grace 2000 ms)`);
      // Zombies left for init to reap are gone (processStartToken and groupRuns do not count them).
      for (const p of members) assert.equal(processStartToken(p), null, `install process ${p} outlived the stop`);
      assert.equal(groupRuns(group), false, `process group ${group} of the install outlived the stop`);
      await first;
      assert.equal(s.get('stopinstall')!.status, 'stopped');
      assert.equal(isInstalled(loadManifest(dir)), false, 'a cancelled install is not recorded as done');
      assert.match(logs.join('\n'), /a start of stopinstall was cancelled: stopinstall was stopped while it was starting/);
      assert.equal(existsSync(join(dir, 'node_modules', '.svc-install.lock')), false, 'the install lock is released');
    } finally {
      await s.stopAll();
      if (pids[0] && groupRuns(pids[0])) process.kill(-pids[0], 'SIGKILL');
    }
  });

  test('an install that ignores SIGTERM is killed when the stop grace ends', async () => {
    // `{ …; }` runs in the shell itself: the whole install, its shell included, ignores SIGTERM.
    const { s, entry, dir } = installingWorker('deafinstall', "trap '' TERM; echo $$ > install.pid; sleep 60");
    const pidFile = join(dir, 'install.pid');
    let group = 0;
    try {
      const first = s.start(entry);
      await eventually(() => assert.ok((group = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0) > 0), 10_000);
      const t0 = Date.now();
      await s.stop('deafinstall');
      const took = Date.now() - t0;
      assert.ok(took >= 1900 && took < 2000 + 1500, `the stop took ${took} ms (grace 2000 ms)`);
      assert.equal(groupRuns(group), false, `process group ${group} of the install outlived the stop`);
      await first;
      assert.equal(s.get('deafinstall')!.status, 'stopped');
    } finally {
      await s.stopAll();
      if (group && groupRuns(group)) process.kill(-group, 'SIGKILL');
    }
  });

  test('a stop while a launch is under way returns only once what it launched is gone, forced if it ignores SIGTERM', async () => {
    // The process runtime, answering late as a container's launch does (its process runs already).
    // Before, the superseded launch stopped its instance without anyone waiting: stopAll returned,
    // the engine could exit, and a worker ignoring SIGTERM got no SIGKILL from the supervisor.
    class SlowToAnswer implements Runtime {
      readonly name = 'process' as const;
      private readonly runtime = new ProcessRuntime();
      async launch(spec: LaunchSpec): Promise<Instance> {
        const inst = await this.runtime.launch(spec);
        await sleep(1000);
        return inst;
      }
    }
    const dir = workerDir('deaf', nodeManifest('deaf', 'node w.mjs'), {
      'w.mjs': "process.on('SIGTERM', () => {}); console.log('pid=' + process.pid); setInterval(() => {}, 1000);",
    });
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    const cfg = join(rootOf(), 'deaf.yaml');
    writeFileSync(cfg, 'workers: []\n');
    const s = new Supervisor({ configFile: cfg, engineUrl: 'ws://127.0.0.1:1', stopGraceMs: 300, runtimes: { process: new SlowToAnswer() } });
    const [entry] = parseWorkerEntries(cfg, [{ name: 'deaf', path: dir }]);
    const log = logFileOf(cfg, 'deaf');
    let pid = 0;
    try {
      const first = s.start(entry!);
      await eventually(() => assert.match(readFileSync(log, 'utf8'), /pid=\d+/)); // running, its launch not answered yet
      pid = Number(/pid=(\d+)/.exec(readFileSync(log, 'utf8'))![1]);
      await s.stopAll();
      assert.equal(alive(pid), false, `pid ${pid} outlived stopAll`);
      await first;
      assert.equal(s.get('deaf')!.status, 'stopped');
    } finally {
      if (pid && alive(pid)) process.kill(-pid, 'SIGKILL');
    }
  });
});
