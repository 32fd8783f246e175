/**
 * Supervised processes never outlive their engine (issue 17, item 4), one mechanism at a time:
 * the liveness pipe on stdin that svc-sdk watches (through /bin/sh, and in the built-ins), the
 * next engine of the project stopping what a killed one recorded in .svc/engine.json (for
 * programs that watch nothing), a second engine of a running project refused, and engine.json
 * readable by its owner only whatever mode an older file had (item 10).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineProcess, runSvc } from '../../e2e/helpers/cli.js';
import { readEngineState, readRecordedEngineState, writeEngineState, type EngineState } from '../../src/daemon/engine-state.js';
import { GUARD_SELF_EXIT_S } from '../../src/supervisor/liveness-guard.js';
import { processStartToken } from '../../src/supervisor/process-identity.js';
import { stopStaleProcesses } from '../../src/daemon/stale-instances.js';
import { standInEngine } from '../helpers/stand-in-engine.js';
import { freePort, sleep } from '../helpers/util.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const alive = (pid: number): boolean => processStartToken(pid) !== null;

async function gone(pid: number, ms: number): Promise<number | null> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (!alive(pid)) return Date.now() - t0;
    await sleep(25);
  }
  return null;
}

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-orphans-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

/** `command` launched by the real ProcessRuntime in a stand-in engine process. */
async function launchUnderFakeEngine(command: string, env: Record<string, string>): Promise<{ engine: ChildProcess; pid: number }> {
  const runtime = join(ROOT, 'dist/src/supervisor/process-runtime.js');
  const { engine, match } = await standInEngine(
    `import { ProcessRuntime } from ${JSON.stringify(runtime)};
    const inst = await new ProcessRuntime().launch({ name: 'w', replica: 0, cwd: ${JSON.stringify(root)}, command: ${JSON.stringify(command)},
      env: { ...process.env, ...${JSON.stringify(env)} }, logFile: ${JSON.stringify(join(root, 'logs', 'w.log'))} });
    console.log('pid', inst.pid);`,
    /pid (\d+)/,
  );
  return { engine, pid: Number(match[1]) };
}

describe('the liveness pipe: svc-sdk workers exit when their engine process is killed', () => {
  test('a TypeScript worker started through /bin/sh (not exec\'d) exits within seconds of SIGKILL of the engine', async () => {
    const sdk = join(ROOT, 'sdk/typescript/dist/index.js');
    const file = join(root, 'ts-worker.mjs');
    // Reconnects for ever to an engine address nobody serves: nothing but the pipe can end it.
    writeFileSync(file, `import { registerWorker } from ${JSON.stringify(sdk)};
      registerWorker(process.env.SVC_URL, { workerName: 'ts', echoLogs: false });
      setInterval(() => {}, 1000);\n`);
    const port = await freePort();
    const { engine, pid } = await launchUnderFakeEngine(`node ${file}; echo worker ended`, { SVC_URL: `ws://127.0.0.1:${port}` });
    await sleep(1500);
    assert.ok(alive(pid), 'runs while its engine runs');
    engine.kill('SIGKILL');
    const ms = await gone(pid, 10_000);
    assert.notEqual(ms, null, 'the worker outlived its engine by more than 10 s');
    // Its output while its engine ran is in the log file, stamped; what it wrote after (the SDK's
    // "liveness pipe on stdin closed") cannot be: the engine is what appends it (log-stamp.ts).
    assert.match(readFileSync(join(root, 'logs', 'w.log'), 'utf8'), /^=== \S+ starting w: /m);
  });

  test('a program that watches nothing (as one written against the iii SDK) is stopped by the guard', async () => {
    // `sleep` neither watches stdin nor connects anywhere: only the guard in its group can end it.
    const { engine, pid } = await launchUnderFakeEngine('sleep 600', {});
    await sleep(500);
    assert.ok(alive(pid));
    engine.kill('SIGKILL');
    const ms = await gone(pid, (GUARD_SELF_EXIT_S + 5) * 1000);
    assert.notEqual(ms, null, 'the program outlived its engine');
    assert.ok(ms! >= GUARD_SELF_EXIT_S * 1000 - 500, `stopped after ${ms} ms: the guard first leaves a worker time to exit by itself`);
  });

  test('an install the engine runs (npm, pip) is stopped by the guard too', async () => {
    // The engine installs a worker's dependencies before starting it, for minutes at times; killed
    // meanwhile, its install ran on to the end before (npm and pip watch nothing).
    const dir = join(root, 'installing');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: installing\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: sh install.sh\n  start: node w.mjs\n');
    writeFileSync(join(dir, 'install.sh'), 'sleep 600 & echo "install $$ $!"\nwait\n');
    writeFileSync(join(dir, 'w.mjs'), '');
    const lib = join(ROOT, 'dist/src/supervisor');
    const { engine, match } = await standInEngine(
      `import { ensureInstalled } from ${JSON.stringify(join(lib, 'install.js'))};
      import { loadManifest } from ${JSON.stringify(join(lib, 'manifest.js'))};
      void ensureInstalled(loadManifest(${JSON.stringify(dir)}), { signal: new AbortController().signal, onLine: (l) => console.log(l) });`,
      /install (\d+) (\d+)/,
    );
    const pids = [Number(match[1]), Number(match[2])];
    await sleep(300);
    assert.ok(pids.every(alive));
    engine.kill('SIGKILL');
    for (const pid of pids) assert.notEqual(await gone(pid, (GUARD_SELF_EXIT_S + 5) * 1000), null, `install process ${pid} outlived its engine`);
  });

  test('the built-in svc-state exits within seconds of SIGKILL of the engine', async () => {
    const port = await freePort();
    const main = join(ROOT, 'dist/src/workers/state/main.js');
    const { engine, pid } = await launchUnderFakeEngine(`node ${main}`, {
      SVC_URL: `ws://127.0.0.1:${port}`,
      SVC_WORKER_CONFIG: JSON.stringify({ store: 'embedded', data_dir: join(root, 'state') }),
    });
    await sleep(1500);
    assert.ok(alive(pid));
    engine.kill('SIGKILL');
    assert.notEqual(await gone(pid, 10_000), null, 'svc-state outlived its engine by more than 10 s');
  });
});

describe('the next engine of the project stops what a killed one left running', () => {
  const project = (): string => join(root, 'proj');
  before(() => {
    const dir = join(project(), 'workers', 'sleeper');
    mkdirSync(dir, { recursive: true });
    // A program that watches no pipe and ignores SIGTERM: the guard's SIGTERM does not end it,
    // only its SIGKILL GUARD_TERM_GRACE_S later, so for that long it is left running.
    writeFileSync(join(dir, 'w.mjs'), '');
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: sleeper\nruntime:\n  kind: typescript\n  package_manager: npm\n  entry: w.mjs\nscripts:\n  install: mkdir -p node_modules\n  start: trap "" TERM; sleep 600\n');
    writeFileSync(join(project(), 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - name: sleeper\n    path: ./workers/sleeper\n');
  });

  const sleeperPid = async (): Promise<number> => {
    for (let i = 0; i < 200; i++) {
      const pid = readRecordedEngineState(join(project(), 'config.yaml'))?.instances?.find((x) => x.worker === 'sleeper')?.pid;
      if (pid) return pid;
      await sleep(50);
    }
    throw new Error('the engine did not record the sleeper');
  };

  test('kill -9 of the engine, then svc --config again: the recorded process is stopped, said in one line, and started anew', { timeout: 60_000 }, async () => {
    const first = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project() });
    const pid = await sleeperPid();
    const state = readRecordedEngineState(join(project(), 'config.yaml'))!;
    assert.equal(state.pid, first.child.pid);
    assert.ok(state.run && state.client_secret?.startsWith(`${state.run}.`));
    await first.stop('SIGKILL');
    await sleep(500);
    assert.ok(alive(pid), 'a program that ignores the pipe and SIGTERM survives its engine for a while');

    const second = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project() });
    try {
      assert.match(second.stdout, new RegExp(`stopped 1 worker process\\(es\\) left running by an earlier engine of config\\.yaml \\(pid ${first.child.pid}, which did not stop them\\): sleeper \\(pid ${pid}\\)`));
      assert.equal(alive(pid), false);
      const again = await sleeperPid();
      assert.notEqual(again, pid);
    } finally {
      await second.stop('SIGTERM');
    }
  });

  test('a recorded pid that now belongs to another process is left alone', async () => {
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore', detached: true });
    const pid = bystander.pid!;
    try {
      const recorded: EngineState = {
        pid: 999_999_999,
        url: 'ws://127.0.0.1:1',
        config: 'x',
        started_at: new Date().toISOString(),
        instances: [{ worker: 'w', replica: 0, runtime: 'process', pid, started: `${processStartToken(pid)}-not-the-same` }],
      };
      assert.deepEqual(await stopStaleProcesses(recorded, 200), []);
      assert.ok(alive(pid));
      recorded.instances![0]!.started = processStartToken(pid)!;
      assert.equal((await stopStaleProcesses(recorded, 200)).length, 1);
      assert.notEqual(await gone(pid, 3000), null);
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  test('a second engine of a project whose engine runs is refused, naming the running one', async () => {
    const first = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project() });
    try {
      const r = await runSvc(['--config', 'config.yaml'], { cwd: project() });
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`an engine of config\\.yaml is already running \\(pid ${first.child.pid}, ${first.url}\\)`));
      assert.equal(readEngineState(join(project(), 'config.yaml'))?.pid, first.child.pid, 'its record is untouched');
    } finally {
      await first.stop('SIGTERM');
    }
  });
});

describe('.svc/engine.json', () => {
  test('is readable by its owner only, even when an older file was world-readable', () => {
    const config = join(root, 'mode', 'config.yaml');
    mkdirSync(join(root, 'mode', '.svc'), { recursive: true });
    const file = join(root, 'mode', '.svc', 'engine.json');
    writeFileSync(file, '{}', { mode: 0o644 });
    chmodSync(file, 0o644);
    writeEngineState(config, { pid: process.pid, url: 'ws://x', config, started_at: 'now', token: 'secret-token-value' });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(readRecordedEngineState(config)?.token, 'secret-token-value');
  });

  test('an engine whose pid now belongs to another process is not running', () => {
    const config = join(root, 'recycled', 'config.yaml');
    writeEngineState(config, { pid: process.pid, pid_started: 'another-boot:1', url: 'ws://x', config, started_at: 'now' });
    assert.equal(readEngineState(config), null);
    writeEngineState(config, { pid: process.pid, pid_started: processStartToken(process.pid), url: 'ws://x', config, started_at: 'now' });
    assert.equal(readEngineState(config)?.pid, process.pid);
  });
});
