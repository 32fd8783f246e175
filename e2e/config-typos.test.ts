/**
 * Every mistake is named (issue 25, item 3), through the CLI: a typo in a `workers:` entry, in a
 * worker directory's svc.worker.yaml, in a `--set` key of a built-in, in config.yaml's `engine:`
 * block, is refused before anything changes, naming the key, the closest known key and the known
 * keys; a missing field says "missing". Before: `replcas: 2` and `script:` were silently ignored
 * (one replica, the default start script), `--set max_trigers=3` for svc-cron was written to
 * config.yaml and svc-cron then refused to start, and a missing name said `got undefined`.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runSvc, tempDir } from './helpers/cli.js';

const CONFIG = 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers: []\n';

describe('typos are refused naming the key, with a "did you mean"', { timeout: 120_000 }, () => {
  const tmp = tempDir();
  const cfg = join(tmp.dir, 'config.yaml');
  const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 60_000 });
  after(() => tmp.remove());

  test('a workers: entry (replcas: 2): the engine refuses to start, worker list says why', async () => {
    writeFileSync(cfg, 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - name: svc-state\n    builtin: svc-state\n    replcas: 2\n');
    const start = await svc(['--config', 'config.yaml']);
    assert.notEqual(start.code, 0);
    // Each with its code, as docs/errors.md says the CLI prints them (before: `error: <message>` only).
    assert.match(start.stderr, /^error: invalid_config: .*workers\[0\]\.replcas: unknown key "replcas" \(did you mean "replicas"\?\); known keys: name, builtin, path, runtime, replicas, env, config, token/);
    const list = await svc(['worker', 'list']);
    assert.equal(list.code, 2);
    assert.match(list.stderr, /^error: invalid_config: .*did you mean "replicas"/);
  });

  test('a missing field says missing, not "got undefined"', async () => {
    writeFileSync(cfg, 'engine:\n  host: 127.0.0.1\n  port: 0\nworkers:\n  - builtin: svc-state\n');
    const list = await svc(['worker', 'list']);
    assert.match(list.stderr, /workers\[0\]\.name: missing/);
    assert.doesNotMatch(list.stderr, /undefined/);
  });

  test('svc.worker.yaml (script:): worker add refuses it and config.yaml is unchanged', async () => {
    writeFileSync(cfg, CONFIG);
    const dir = join(tmp.dir, 'w');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'w.py'), 'print("hi")\n');
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: w\nruntime:\n  kind: python\n  entry: w.py\nscript:\n  start: python w.py\n');
    const r = await svc(['worker', 'add', './w']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^error: invalid_manifest: .*svc\.worker\.yaml: script: unknown key "script" \(did you mean "scripts"\?\); known keys: name, runtime, scripts/);
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: w\nruntime:\n  kind: python\n  entyr: w.py\n');
    const nested = await svc(['worker', 'add', './w']);
    assert.match(nested.stderr, /runtime\.entyr: unknown key "entyr" \(did you mean "entry"\?\)/);
    writeFileSync(join(dir, 'svc.worker.yaml'), 'runtime:\n  kind: python\n  entry: w.py\n');
    const missing = await svc(['worker', 'add', './w']);
    assert.match(missing.stderr, /name: missing/);
    assert.equal(readFileSync(cfg, 'utf8'), CONFIG);
  });

  for (const [worker, set, near] of [
    ['svc-http', 'prot=3112', 'port'],
    ['svc-cron', 'max_trigers=3', 'max_triggers'],
    ['svc-state', 'max_value_byte=10', 'max_value_bytes'],
    ['svc-queue', 'queues.emails.max_attemps=5', 'max_attempts'],
  ] as const) {
    test(`${worker} --set ${set}: refused naming ${near}, config.yaml unchanged`, async () => {
      writeFileSync(cfg, CONFIG);
      const r = await svc(['worker', 'add', worker, '--set', set]);
      assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^error: invalid_config: .*unknown key "${set.split('=')[0]!.split('.').at(-1)}" \\(did you mean "${near}"\\?\\)`));
      assert.match(r.stderr, /config\.yaml is unchanged/);
      assert.equal(readFileSync(cfg, 'utf8'), CONFIG);
    });
  }

  test('config.yaml engine: and top level', async () => {
    writeFileSync(cfg, 'engine:\n  host: 127.0.0.1\n  prot: 0\n');
    const r = await svc(['--config', 'config.yaml']);
    assert.match(r.stderr.replace(/\s*\n\s*›?\s*/g, ' '), /engine\.prot: unknown key "prot" \(did you mean "port"\?\)/);
    writeFileSync(cfg, 'engine:\n  host: 127.0.0.1\n  port: 0\nworker: []\n');
    const top = await svc(['--config', 'config.yaml']);
    assert.match(top.stderr.replace(/\s*\n\s*›?\s*/g, ' '), /worker: unknown top-level key "worker" \(did you mean "workers"\?\)/);
  });
});

describe("the engine's ${VAR}s are the engine's: CLI commands that do not use them work without them", { timeout: 120_000 }, () => {
  // docs/cluster.md has `node_id: ${SVC_NODE_ID}` and docs/security.md tokens from ${SVC_ADMIN_TOKEN}:
  // set where the engine runs. Before, `svc worker add` in another shell failed with "environment
  // variable SVC_NODE_ID is not set", and commands fell back to the default port.
  test('worker add and worker list go on; the engine still refuses to start, naming the variable', async () => {
    const tmp = tempDir();
    try {
      const svc = (args: string[]) => runSvc(args, { cwd: tmp.dir, timeoutMs: 60_000, env: { SVC_DOCSB_UNSET_TOKEN: '', SVC_DOCSB_UNSET_NODE: '' } });
      writeFileSync(
        join(tmp.dir, 'config.yaml'),
        'engine:\n  host: 127.0.0.1\n  port: 0\n  auth:\n    tokens:\n      - name: admin\n        token: ${SVC_DOCSB_UNSET_TOKEN}\n        admin: true\n  cluster:\n    redis_url: redis://127.0.0.1:1\n    node_id: ${SVC_DOCSB_UNSET_NODE}\nworkers: []\n',
      );
      const add = await svc(['worker', 'add', 'svc-state']);
      assert.equal(add.code, 0, add.stdout + add.stderr);
      assert.match(readFileSync(join(tmp.dir, 'config.yaml'), 'utf8'), /- name: svc-state\n\s+builtin: svc-state/);
      const list = await svc(['worker', 'list']);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^svc-state\s+builtin/m);
      const start = await svc(['--config', 'config.yaml']);
      assert.equal(start.code, 2);
      assert.match(start.stderr, /^error: invalid_config: .*engine\.auth\.tokens\[0\]\.token: environment variable SVC_DOCSB_UNSET_TOKEN is not set/);
    } finally {
      tmp.remove();
    }
  });
});
