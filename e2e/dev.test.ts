/**
 * `svc dev` (issue 25, item 11): the edit-run loop without manual restarts. Through the real binary:
 * an edited handler answers within 2 s; a dependency manifest edit reinstalls, a source edit does
 * not; edits of config.yaml's workers: start and stop workers with the engine left running; a
 * config.yaml the engine would refuse is reported and changes nothing. Before, none of this
 * existed: a user restarted the worker by hand (`svc worker restart`) after every edit.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, ROOT, runSvc, tempDir, until } from './helpers/cli.js';

const SDK = pathToFileURL(join(ROOT, 'sdk', 'typescript', 'dist', 'index.js')).href;

/** A worker directory whose install script counts its runs in ../<name>-installs.txt (outside the watched directory). */
function writeWorker(dir: string, name: string, version: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'svc.worker.yaml'),
    `name: ${name}\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: echo installed >> ../${name}-installs.txt\n  start: node w.mjs\n`,
  );
  writeFileSync(join(dir, 'package.json'), `{"name":"${name}","private":true}\n`);
  writeHandler(dir, name, version);
}

function writeHandler(dir: string, name: string, version: string): void {
  writeFileSync(
    join(dir, 'w.mjs'),
    `import { registerWorker } from ${JSON.stringify(SDK)};\nconst w = registerWorker(process.env.SVC_URL, { echoLogs: false });\nw.registerFunction('${name}::version', () => ${JSON.stringify(version)});\n`,
  );
}

describe('svc dev', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const cfg = join(tmp.dir, 'config.yaml');
  const base = 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - name: app\n    path: ./app\n';
  let engine: EngineProcess;
  let client: Worker;
  const installs = (name: string): number => {
    const f = join(tmp.dir, `${name}-installs.txt`);
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').length : 0;
  };
  const version = (fn: string): Promise<unknown> => client.trigger({ function_id: fn, timeoutMs: 1000 }).catch((e: unknown) => (e instanceof InvocationError ? e.code : String(e)));
  /** Poll every 25 ms until `fn` answers `want`; the time it took. */
  const answersWithin = async (fn: string, want: unknown, ms: number): Promise<number> => {
    const t0 = Date.now();
    await until(`${fn} to answer ${JSON.stringify(want)}`, async () => {
      if ((await version(fn)) === want) return true;
      await new Promise((r) => setTimeout(r, 25));
      return false;
    }, ms);
    return Date.now() - t0;
  };

  before(async () => {
    writeWorker(join(tmp.dir, 'app'), 'app', 'v1');
    writeFileSync(cfg, base);
    engine = await EngineProcess.start(['dev', '--config', 'config.yaml'], { cwd: tmp.dir });
    client = registerWorker(engine.url, { workerName: 'dev-test', echoLogs: false });
    await answersWithin('app::version', 'v1', 30_000);
  });
  after(async () => {
    await client?.shutdown();
    await engine?.stop();
    tmp.remove();
  });

  test('an edited handler answers within 2 s, without reinstalling dependencies', async () => {
    assert.equal(installs('app'), 1);
    writeHandler(join(tmp.dir, 'app'), 'app', 'v2');
    const ms = await answersWithin('app::version', 'v2', 10_000);
    assert.ok(ms < 2000, `the edit took ${ms} ms to answer`);
    assert.equal(installs('app'), 1, 'a source edit does not reinstall');
    assert.match(engine.stdout, /dev: w\.mjs changed; restarting app/);
  });

  test('an edit of package.json reinstalls', async () => {
    writeFileSync(join(tmp.dir, 'app', 'package.json'), '{"name":"app","private":true,"version":"0.0.2"}\n');
    await until('the reinstall', () => installs('app') === 2, 10_000);
    await answersWithin('app::version', 'v2', 10_000);
  });

  test('config.yaml edits apply without restarting the engine; a refused one changes nothing', async () => {
    writeWorker(join(tmp.dir, 'other'), 'other', 'o1');
    writeFileSync(cfg, `${base}  - name: other\n    path: ./other\n`);
    await answersWithin('other::version', 'o1', 15_000);
    writeFileSync(cfg, `${base}  - name: other\n    path: ./other\n    replcas: 2\n`);
    await until('the refusal in the engine log', () => /dev: .*not applied: .*replcas: unknown key "replcas" \(did you mean "replicas"\?\)/.test(engine.stdout + engine.stderr), 5000);
    assert.equal(await version('other::version'), 'o1', 'a refused edit stops nothing');
    writeFileSync(cfg, base);
    await answersWithin('other::version', 'function_not_found', 15_000);
    assert.equal(await version('app::version'), 'v2');
    assert.equal(engine.child.exitCode, null, 'the engine kept running');
  });

  // The engine's watch of config.yaml starts a worker `svc worker add` lists before the command asks
  // for it (its install takes 1 s here): that is this command's start, not one from before.
  test('svc worker add of a new worker under svc dev says it started it', async () => {
    writeWorker(join(tmp.dir, 'added'), 'added', 'a1');
    writeFileSync(join(tmp.dir, 'added', 'svc.worker.yaml'), 'name: added\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: sleep 1\n  start: node w.mjs\n');
    const r = await runSvc(['worker', 'add', './added'], { cwd: tmp.dir, timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /✓ added auto-started \(pid \d+\) and connected/);
    assert.doesNotMatch(r.stdout, /already running/);
    assert.match(engine.stdout, /dev: added added to config\.yaml; starting it/);
  });
});
