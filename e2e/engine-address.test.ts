/**
 * The CLI finds the right engine (issue 25, item 6). With no engine running for ./config.yaml, a
 * command uses the address config.yaml gives the engine. Before, it fell back to the default port
 * 49134, where another project's engine may be listening, and talked to that one.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort, EngineProcess, runSvc, tempDir } from './helpers/cli.js';

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
