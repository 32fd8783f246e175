import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadManifest, ManifestError } from '../../src/supervisor/manifest.js';
import { DEFAULT_CONFIG_YAML, loadConfig } from '../../src/daemon/config-file.js';
import { ConfigFileError } from '../../src/engine/config/config-error.js';
import { parseWorkerEntries, removeWorkerEntry, upsertWorkerEntry, type WorkerEntry } from '../../src/supervisor/worker-entries.js';
import { dependencyHash, ensureInstalled, isInstalled } from '../../src/supervisor/install.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { launchSpecOf, logFileOf } from '../../src/supervisor/launch.js';
import { ProcessRuntime } from '../../src/supervisor/process-runtime.js';
import { groupRuns, processStartToken } from '../../src/supervisor/process-identity.js';
import type { Instance, LaunchSpec, Runtime } from '../../src/supervisor/runtime.js';
import { eventually, sleep } from '../helpers/util.js';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-sup-'));
});
after(() => {
  rmSync(root, { recursive: true, force: true });
});

function workerDir(name: string, manifest: string, files: Record<string, string> = {}): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'svc.worker.yaml'), manifest);
  for (const [f, body] of Object.entries(files)) writeFileSync(join(dir, f), body);
  return dir;
}

const nodeManifest = (name: string, start: string): string =>
  `name: ${name}\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: "true"\n  start: ${start}\n`;

describe('svc.worker.yaml', () => {
  test('a valid manifest loads with defaults for missing scripts', () => {
    const dir = workerDir('ok', 'name: ok\nruntime:\n  kind: python\n  package_manager: pip\n  entry: main.py\n', { 'main.py': '' });
    const m = loadManifest(dir);
    assert.equal(m.scripts.install, 'pip install -r requirements.txt');
    assert.equal(m.scripts.start, 'python main.py');
  });

  const cases: Array<[string, string, RegExp]> = [
    ['bad-kind', 'name: x\nruntime:\n  kind: ruby\n  entry: a.rb\n', /runtime\.kind: must be one of python, typescript, got "ruby"/],
    ['bad-pm', 'name: x\nruntime:\n  kind: python\n  package_manager: npm\n  entry: a.py\n', /runtime\.package_manager: for kind python must be pip, got "npm"/],
    ['bad-name', 'name: Bad Name\nruntime:\n  kind: python\n  entry: a.py\n', /name: must be lowercase/],
    ['no-entry', 'name: x\nruntime:\n  kind: python\n  entry: missing.py\n', /runtime\.entry: file missing\.py does not exist/],
    ['bad-yaml', 'name: [x\n', /invalid YAML/],
    ['bad-script', 'name: x\nruntime:\n  kind: python\n  entry: a.py\nscripts:\n  start: 5\n', /scripts\.start: must be a shell command/],
  ];
  for (const [dirName, text, re] of cases) {
    test(`errors name the file, field and problem: ${dirName}`, () => {
      const dir = workerDir(dirName, text, { 'a.py': '', 'a.rb': '' });
      assert.throws(() => loadManifest(dir), (e: unknown) => {
        assert.ok(e instanceof ManifestError);
        assert.ok(e.message.startsWith(join(dir, 'svc.worker.yaml') + ':'), e.message);
        assert.match(e.message, re);
        return true;
      });
    });
  }
});

describe('config.yaml', () => {
  test('a missing file is created with defaults; engine keys are validated by name', () => {
    const f = join(root, 'c1.yaml');
    const c = loadConfig(f);
    assert.equal(c.created, true);
    assert.equal(c.engine.port, 49134);
    writeFileSync(f, 'engine:\n  port: "abc"\n');
    assert.throws(() => loadConfig(f), /engine\.port: must be an integer port/);
    writeFileSync(f, 'engine:\n  prot: 1\n');
    assert.throws(() => loadConfig(f), /engine\.prot: unknown key/);
    writeFileSync(f, 'engine:\n  toString: 1\n');
    assert.throws(() => loadConfig(f), /engine\.toString: unknown key/);
    writeFileSync(f, 'engine:\n  limits:\n    constructor: 5\n');
    assert.throws(() => loadConfig(f), /engine\.limits\.constructor: unknown key/);
    writeFileSync(f, 'enigne:\n  port: 1\n');
    assert.throws(() => loadConfig(f), (e: unknown) => e instanceof ConfigFileError && /enigne: unknown top-level key/.test(e.message));
  });

  test("the engine's own SVC_READY_FILE is not passed to its workers; a worker's config.yaml env may set one", () => {
    const before = process.env.SVC_READY_FILE;
    process.env.SVC_READY_FILE = '/tmp/the-engines-own';
    try {
      const f = join(root, 'c-ready.yaml');
      const entry = { name: 'svc-state', builtin: 'svc-state' as const, runtime: 'process' as const, replicas: 1, env: {}, config: {} };
      assert.equal(launchSpecOf(entry, f, 'ws://127.0.0.1:1').env.SVC_READY_FILE, undefined);
      assert.equal(launchSpecOf({ ...entry, env: { SVC_READY_FILE: '/tmp/state-ready' } }, f, 'ws://127.0.0.1:1').env.SVC_READY_FILE, '/tmp/state-ready');
    } finally {
      if (before === undefined) delete process.env.SVC_READY_FILE;
      else process.env.SVC_READY_FILE = before;
    }
  });

  test('engine.limits: the byte budgets reach the engine; their defaults are what docs/configuration.md says', () => {
    const f = join(root, 'c-limits.yaml');
    writeFileSync(f, 'engine:\n  limits:\n    max_log_bytes: 1000000\n    max_in_flight_bytes: 2000000\n    slow_consumer_ms: 700\n');
    const e = loadConfig(f).engine;
    assert.deepEqual([e.maxLogBytes, e.maxInFlightBytes, e.slowConsumerMs], [1000000, 2000000, 700]);
    assert.deepEqual(
      [e.maxStoredValueBytes, e.maxStoredBytesPerWorker, e.maxTraceBytes, e.maxSendBufferBytes],
      [65536, 4194304, 16777216, 33554432],
    );
    writeFileSync(f, 'engine:\n  limits:\n    max_log_bytes: -1\n');
    assert.throws(() => loadConfig(f), /engine\.limits\.max_log_bytes: must be a positive integer, got -1/);
  });

  test('worker add appends once, keeps comments, and remove takes it out again', () => {
    const f = join(root, 'c2.yaml');
    writeFileSync(f, DEFAULT_CONFIG_YAML.replace('workers: []', '# my note about workers\nworkers: []'));
    assert.equal(upsertWorkerEntry(f, { name: 'svc-state', builtin: 'svc-state' }), 'added');
    assert.equal(upsertWorkerEntry(f, { name: 'svc-state', builtin: 'svc-state' }), 'unchanged');
    assert.equal(upsertWorkerEntry(f, { name: 'math-worker', path: join(root, 'proj', 'workers', 'math') }), 'added');
    const text = readFileSync(f, 'utf8');
    assert.match(text, /# my note about workers/);
    assert.match(text, /# Largest frame a worker may send/);
    assert.equal(text.match(/name: svc-state/g)?.length, 1);
    assert.match(text, /path: \.\/proj\/workers\/math/);
    const entries = parseWorkerEntries(f, loadConfig(f).workers);
    assert.deepEqual(entries.map((e) => e.name), ['svc-state', 'math-worker']);
    assert.equal(entries[1]!.path, join(root, 'proj', 'workers', 'math'));
    assert.equal(removeWorkerEntry(f, 'svc-state'), true);
    assert.equal(removeWorkerEntry(f, 'svc-state'), false);
    assert.deepEqual(parseWorkerEntries(f, loadConfig(f).workers).map((e) => e.name), ['math-worker']);
  });

  test('worker add --set: given keys change (dots name nested keys), the others stay', () => {
    const f = join(root, 'c4.yaml');
    writeFileSync(f, DEFAULT_CONFIG_YAML);
    assert.equal(upsertWorkerEntry(f, { name: 'svc-http', builtin: 'svc-http', config: { port: 3112 } }), 'added');
    // Updating an entry's config once failed with "Expected YAML collection at config".
    assert.equal(upsertWorkerEntry(f, { name: 'svc-http', builtin: 'svc-http', config: { host: '0.0.0.0' } }), 'updated');
    assert.deepEqual(parseWorkerEntries(f, loadConfig(f).workers)[0]!.config, { port: 3112, host: '0.0.0.0' });
    assert.equal(upsertWorkerEntry(f, { name: 'svc-queue', builtin: 'svc-queue', config: { 'queues.emails.max_attempts': 5, 'queues.emails.concurrency': 2 } }), 'added');
    assert.equal(upsertWorkerEntry(f, { name: 'svc-queue', builtin: 'svc-queue', config: { 'queues.emails.backoff_ms': 200, 'queues.fifo': { message_group_field: 'user' } } }), 'updated');
    assert.equal(upsertWorkerEntry(f, { name: 'svc-queue', builtin: 'svc-queue', config: { 'queues.emails.backoff_ms': 200 } }), 'unchanged');
    assert.deepEqual(parseWorkerEntries(f, loadConfig(f).workers)[1]!.config, {
      queues: { emails: { max_attempts: 5, concurrency: 2, backoff_ms: 200 }, fifo: { message_group_field: 'user' } },
    });
  });

  test('worker entries are validated with their index', () => {
    const f = join(root, 'c3.yaml');
    writeFileSync(f, 'workers:\n  - name: a\n    builtin: svc-nope\n');
    assert.throws(() => parseWorkerEntries(f, loadConfig(f).workers), /workers\[0\]\.builtin: must be one of svc-state, svc-http, svc-queue/);
    writeFileSync(f, 'workers:\n  - name: a\n    builtin: svc-http\n  - name: a\n    builtin: svc-state\n');
    assert.throws(() => parseWorkerEntries(f, loadConfig(f).workers), /workers\[1\]\.name: a is listed twice/);
    writeFileSync(f, 'workers:\n  - name: a\n    path: ./x\n    replicas: 0\n');
    assert.throws(() => parseWorkerEntries(f, loadConfig(f).workers), /workers\[0\]\.replicas: must be an integer from 1 to 64/);
    writeFileSync(f, 'workers:\n  - name: svc-queue\n    builtin: svc-queue\n    replicas: 2\n');
    assert.throws(() => parseWorkerEntries(f, loadConfig(f).workers), /workers\[0\]\.replicas: svc-queue with the embedded store runs one replica per data_dir; set config.store: redis/);
    writeFileSync(f, 'workers:\n  - name: svc-queue\n    builtin: svc-queue\n    replicas: 2\n    config:\n      store: redis\n');
    assert.equal(parseWorkerEntries(f, loadConfig(f).workers)[0]!.replicas, 2);
  });
});

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
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

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
    const cfg = join(root, 'steady.yaml');
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
    const cfg = join(root, 'vanishing.yaml');
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
    const cfg = join(root, 'crashy.yaml');
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
    const cfg = join(root, 'crashy-dev.yaml');
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
    const cfg = join(root, 'multi.yaml');
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

  /** A Node worker (in `dir`) whose install script is `install`, on a supervisor of its own that logs into `logs`. */
  function installingWorker(name: string, install: string): { s: Supervisor; entry: WorkerEntry; logs: string[]; dir: string } {
    const dir = workerDir(name, nodeManifest(name, 'node w.mjs').replace('install: "true"', () => `install: "${install}"`), {
      'w.mjs': 'setInterval(() => {}, 1000);',
      'package.json': `{"name":"${name}","version":"1.0.0"}`,
    });
    const cfg = join(root, `${name}.yaml`);
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
    const cfg = join(root, 'deaf.yaml');
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
