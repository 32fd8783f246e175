/**
 * The files the supervisor reads: a worker's svc.worker.yaml and the project's config.yaml (engine
 * keys, worker entries, what `svc worker add` and `remove` write). The supervision itself:
 * supervisor.test.ts and supervisor-races.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifest, ManifestError } from '../../src/supervisor/manifest.js';
import { DEFAULT_CONFIG_YAML, loadConfig } from '../../src/daemon/config-file.js';
import { ConfigFileError } from '../../src/engine/config/config-error.js';
import { parseWorkerEntries, removeWorkerEntry, upsertWorkerEntry } from '../../src/supervisor/worker-entries.js';
import { launchSpecOf } from '../../src/supervisor/launch.js';
import { tempRoot, workerDirIn } from './worker-dirs.js';

const rootOf = tempRoot();
const workerDir = (name: string, manifest: string, files: Record<string, string> = {}): string => workerDirIn(rootOf(), name, manifest, files);

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
    const f = join(rootOf(), 'c1.yaml');
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
      const f = join(rootOf(), 'c-ready.yaml');
      const entry = { name: 'svc-state', builtin: 'svc-state' as const, runtime: 'process' as const, replicas: 1, env: {}, config: {} };
      assert.equal(launchSpecOf(entry, f, 'ws://127.0.0.1:1').env.SVC_READY_FILE, undefined);
      assert.equal(launchSpecOf({ ...entry, env: { SVC_READY_FILE: '/tmp/state-ready' } }, f, 'ws://127.0.0.1:1').env.SVC_READY_FILE, '/tmp/state-ready');
    } finally {
      if (before === undefined) delete process.env.SVC_READY_FILE;
      else process.env.SVC_READY_FILE = before;
    }
  });

  test('engine.limits: the byte budgets reach the engine; their defaults are what docs/configuration.md says', () => {
    const f = join(rootOf(), 'c-limits.yaml');
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
    const f = join(rootOf(), 'c2.yaml');
    writeFileSync(f, DEFAULT_CONFIG_YAML.replace('workers: []', '# my note about workers\nworkers: []'));
    assert.equal(upsertWorkerEntry(f, { name: 'svc-state', builtin: 'svc-state' }), 'added');
    assert.equal(upsertWorkerEntry(f, { name: 'svc-state', builtin: 'svc-state' }), 'unchanged');
    assert.equal(upsertWorkerEntry(f, { name: 'math-worker', path: join(rootOf(), 'proj', 'workers', 'math') }), 'added');
    const text = readFileSync(f, 'utf8');
    assert.match(text, /# my note about workers/);
    assert.match(text, /# Largest frame a worker may send/);
    assert.equal(text.match(/name: svc-state/g)?.length, 1);
    assert.match(text, /path: \.\/proj\/workers\/math/);
    const entries = parseWorkerEntries(f, loadConfig(f).workers);
    assert.deepEqual(entries.map((e) => e.name), ['svc-state', 'math-worker']);
    assert.equal(entries[1]!.path, join(rootOf(), 'proj', 'workers', 'math'));
    assert.equal(removeWorkerEntry(f, 'svc-state'), true);
    assert.equal(removeWorkerEntry(f, 'svc-state'), false);
    assert.deepEqual(parseWorkerEntries(f, loadConfig(f).workers).map((e) => e.name), ['math-worker']);
  });

  test('worker add --set: given keys change (dots name nested keys), the others stay', () => {
    const f = join(rootOf(), 'c4.yaml');
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
    const f = join(rootOf(), 'c3.yaml');
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
