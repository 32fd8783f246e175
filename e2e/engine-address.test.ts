/**
 * The CLI finds the right engine (issue 25, item 6). With no engine running for ./config.yaml, a
 * command uses the address config.yaml gives the engine. Before, it fell back to the default port
 * 49134, where another project's engine may be listening, and talked to that one.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort, EngineProcess, runSvc, tempDir } from './helpers/cli.js';
import { registerWorker } from 'svc-sdk';
import { startEngine } from '../test/helpers/engine.js';

describe('with no engine running, commands use config.yaml\'s engine address', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  after(() => tmp.remove());

  test('svc trigger tries config.yaml\'s port and says so, not the default 49134', async () => {
    const port = await closedPort();
    writeFileSync(join(tmp.dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${port}\nworkers: []\n`);
    const t0 = Date.now();
    const r = await runSvc(['trigger', 'engine::functions::list'], { cwd: tmp.dir });
    // Fails fast: a refused connection is final at once (before: the SDK's 5 s connect timeout).
    assert.ok(Date.now() - t0 < 4000, `took ${Date.now() - t0} ms`);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /nothing listens there/);
    assert.match(r.stderr, new RegExp(`Cannot reach the engine at ws://127\\.0\\.0\\.1:${port}`));
    assert.doesNotMatch(r.stderr, /49134/);
  });

  test('a read-only command outside a project creates no config.yaml', async () => {
    const empty = tempDir();
    try {
      const r = await runSvc(['worker', 'list'], { cwd: empty.dir });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /config\.yaml: file not found/);
      assert.equal(existsSync(join(empty.dir, 'config.yaml')), false);
    } finally {
      empty.remove();
    }
  });
});

describe('config.yaml with engine.port: 0', { timeout: 60_000 }, () => {
  // The port is picked at start, so only .svc/engine.json knows it. Before, a command that could
  // not confirm the recorded engine's process fell back to ws://localhost:49134 and talked to
  // whatever engine listened there: with the engine in a container (docs/docker.md, "The engine
  // image") the recorded pid is the container's, so `svc trigger` on the host reached another
  // project's engine and changed its state.
  test('a recorded engine whose process cannot be checked from here (a container) is the one used', async () => {
    const tmp = tempDir();
    const eng = await startEngine();
    // A function only this engine has: another engine on the default port cannot answer for it.
    const here = registerWorker(eng.url, { workerName: 'here' });
    here.registerFunction('probe::here', () => ({ engine: eng.port }));
    await here.ready();
    try {
      writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
      mkdirSync(join(tmp.dir, '.svc'));
      // pid 1 started at another time: not this host's view of the engine (in a container it is the engine).
      writeFileSync(join(tmp.dir, '.svc', 'engine.json'), JSON.stringify({ pid: 1, pid_started: 'another-boot:1', run: 'r', url: eng.url, config: join(tmp.dir, 'config.yaml') }));
      const r = await runSvc(['trigger', 'probe::here'], { cwd: tmp.dir });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { engine: eng.port });
    } finally {
      await here.shutdown();
      await eng.stop();
      tmp.remove();
    }
  });

  // The recorded URL is where the engine listens, its host included: config.yaml's engine.host may
  // have changed since it started, or been overridden at start. A wildcard listening address is
  // recorded as loopback (src/engine/listener.ts), never used as a destination.
  test('engine.host 0.0.0.0: the engine records loopback, and the CLI reaches it there', async () => {
    const tmp = tempDir();
    let engine: EngineProcess | undefined;
    try {
      writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 0.0.0.0\n  port: 0\n  auth:\n    tokens:\n      - name: admin\n        token: e2e-admin-token-0123456789\n        admin: true\nworkers: []\n');
      engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
      const recorded = (JSON.parse(readFileSync(join(tmp.dir, '.svc', 'engine.json'), 'utf8')) as { url: string }).url;
      assert.match(recorded, /^ws:\/\/127\.0\.0\.1:\d+$/);
      assert.notEqual(recorded, 'ws://127.0.0.1:0');
      const r = await runSvc(['trigger', 'engine::health::check'], { cwd: tmp.dir });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout + r.stderr, /0\.0\.0\.0/);
    } finally {
      await engine?.stop();
      tmp.remove();
    }
  });

  test('no engine recorded: the command says there is no address to try, not the default port', async () => {
    const tmp = tempDir();
    try {
      writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
      for (const args of [['trigger', 'engine::health::check'], ['logs']]) {
        const r = await runSvc(args, { cwd: tmp.dir });
        assert.equal(r.code, 1, `svc ${args.join(' ')}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /^error: connection_failed: No engine of .*config\.yaml is running, and its port is picked at start \(engine\.port: 0\)/m);
        assert.doesNotMatch(r.stdout + r.stderr, /49134/);
      }
    } finally {
      tmp.remove();
    }
  });
});

describe('from another directory (no client secret at hand), the CLI takes no reserved name', { timeout: 60_000 }, () => {
  const project = tempDir();
  const away = tempDir();
  let engine: EngineProcess | undefined;
  after(async () => {
    await engine?.stop('SIGTERM', 20_000);
    project.remove();
    away.remove();
  });

  test('svc trigger with SVC_URL leaves no reserved_name warning in the engine\'s log', async () => {
    writeFileSync(join(project.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project.dir, timeoutMs: 30_000 });
    const r = await runSvc(['trigger', 'engine::functions::list'], { cwd: away.dir, env: { SVC_URL: engine.url } });
    assert.equal(r.code, 0, r.stderr);
    // From the project itself the CLI proves its svc-cli name; the log is read from there.
    const logs = await runSvc(['logs', '-n', '1000', '--level', 'warn'], { cwd: project.dir });
    assert.equal(logs.code, 0, logs.stderr);
    assert.doesNotMatch(logs.stdout, /reserved/, 'a command run from elsewhere asked for a name it may not take');
  });
});
