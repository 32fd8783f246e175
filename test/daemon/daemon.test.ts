/**
 * The daemon as a module (src/daemon/daemon.ts), in this process: what `svc --config` runs, without
 * the CLI. It creates config.yaml, listens, records itself in .svc/engine.json, starts the workers
 * of config.yaml, refuses a second engine of the project, and stops cleanly once however often it
 * is asked. (The same through the CLI, with signals: e2e/cli.test.ts, e2e/orphans.test.ts.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'svc-sdk';
import { DaemonStartError, startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { readEngineState } from '../../src/daemon/engine-state.js';
import { ConfigFileError } from '../../src/engine/config/config-error.js';
import { eventually, freePort } from '../helpers/util.js';

const QUIET = 'engine:\n  port: 0\n  print_events: false\n  shutdown_grace_ms: 500\n';

describe('startDaemon', { timeout: 60_000 }, () => {
  let root: string;
  const running: Daemon[] = [];
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-daemon-'));
  });
  after(async () => {
    await Promise.all(running.map((d) => d.stop('test over')));
    rmSync(root, { recursive: true, force: true });
  });
  const project = (name: string, config?: string): string => {
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    if (config !== undefined) writeFileSync(join(dir, 'config.yaml'), config);
    return join(dir, 'config.yaml');
  };

  test('host 0.0.0.0: the ready line gives the loopback URL and says it listens on every interface', async () => {
    const file = project('wildcard', 'engine:\n  host: 0.0.0.0\n  port: 0\n  print_events: false\n  shutdown_grace_ms: 500\n  auth:\n    tokens:\n      - name: admin\n        token: a-token-of-24-characters\n        admin: true\n');
    const lines: string[] = [];
    const daemon = await startDaemon({ configFile: file, configName: 'config.yaml', log: (l) => lines.push(l) });
    running.push(daemon);
    const port = daemon.address.port;
    assert.ok(lines.includes(`svc engine ready on ws://127.0.0.1:${port} (listening on every interface: 0.0.0.0:${port})`), lines.join('\n'));
    await daemon.stop('test over');
  });

  test('creates config.yaml with the defaults, listens, records itself, and stops once', async () => {
    const file = project('fresh');
    const lines: string[] = [];
    const daemon = await startDaemon({ configFile: file, configName: 'config.yaml', port: 0, log: (l) => lines.push(l) });
    running.push(daemon);
    assert.ok(existsSync(file));
    assert.match(daemon.address.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(lines[0], 'Created config.yaml with default settings.');
    assert.ok(lines.includes(`svc engine ready on ${daemon.address.url}`), lines.join('\n'));
    assert.equal(readEngineState(file)?.url, daemon.address.url);
    const client = new Worker(daemon.address.url, { role: 'client', echoLogs: false, workerName: 'probe' });
    client.start();
    try {
      assert.deepEqual(await client.trigger({ function_id: 'engine::supervisor::list' }), { workers: [] });
    } finally {
      await client.shutdown();
    }
    const first = daemon.stop('SIGTERM');
    assert.equal(daemon.stop('SIGINT'), first, 'a second stop is the first one');
    await first;
    assert.ok(lines.includes('SIGTERM: shutting down'), lines.join('\n'));
    assert.equal(lines.at(-1), 'engine stopped');
    assert.equal(existsSync(join(root, 'fresh', '.svc', 'engine.json')), false, '.svc/engine.json is removed');
  });

  test('says at start where OTLP export goes, with secrets in the address hidden; nothing when it is off', async () => {
    // Before, an engine exporting to a mistyped collector said nothing until the first failure.
    const on = project('otlp-on', 'engine:\n  port: 0\n  telemetry:\n    endpoint: http://ops:s3cret@127.0.0.1:1\n    protocol: grpc\n    metrics: false\n    sampling_ratio: 0.5\n');
    const lines: string[] = [];
    const daemon = await startDaemon({ configFile: on, configName: 'config.yaml', log: (l) => lines.push(l) });
    running.push(daemon);
    assert.ok(lines.includes('telemetry: OTLP export of spans and log lines to http://ops:***@127.0.0.1:1 (grpc, sampling 0.5 of traces)'), lines.join('\n'));
    assert.ok(!lines.join('\n').includes('s3cret'));
    await daemon.stop('test');
    const off = project('otlp-off', 'engine:\n  port: 0\n  telemetry: false\n');
    const quiet: string[] = [];
    const other = await startDaemon({ configFile: off, configName: 'config.yaml', log: (l) => quiet.push(l) });
    running.push(other);
    assert.ok(!quiet.some((l) => l.startsWith('telemetry:')), quiet.join('\n'));
    await other.stop('test');
  });

  test('starts the workers of config.yaml and records their instances', async () => {
    const dir = join(root, 'with-worker');
    mkdirSync(join(dir, 'w'), { recursive: true });
    writeFileSync(join(dir, 'w', 'svc.worker.yaml'), 'name: idle\nruntime:\n  kind: typescript\n  entry: w.mjs\nscripts:\n  install: mkdir -p node_modules\n  start: node w.mjs\n');
    writeFileSync(join(dir, 'w', 'w.mjs'), 'setInterval(() => {}, 1000);\n');
    const file = project('with-worker', `${QUIET}workers:\n  - name: idle\n    path: ./w\n`);
    const lines: string[] = [];
    const daemon = await startDaemon({ configFile: file, log: (l) => lines.push(l) });
    running.push(daemon);
    assert.ok(lines.includes(`starting 1 worker(s) from ${file}: idle`), lines.join('\n'));
    await eventually(() => assert.equal(readEngineState(file)?.instances?.[0]?.worker, 'idle'), 10_000);
    const pid = readEngineState(file)!.instances![0]!.pid!;
    await daemon.stop('test');
    assert.throws(() => process.kill(pid, 0), 'the worker stopped with the daemon');
  });

  test('svc-http replicas on one port: one starts, with a warning, instead of the rest crash-looping; with port 0 all start', async () => {
    const httpPort = await freePort();
    const file = project('http-replicas', `${QUIET}workers:\n  - name: web\n    builtin: svc-http\n    replicas: 2\n    config:\n      port: ${httpPort}\n  - name: web0\n    builtin: svc-http\n    replicas: 2\n    config:\n      port: 0\n`);
    const daemon = await startDaemon({ configFile: file });
    running.push(daemon);
    const client = new Worker(daemon.address.url, { role: 'client', echoLogs: false, workerName: 'probe' });
    client.start();
    try {
      await eventually(async () => {
        const { workers } = (await client.trigger({ function_id: 'engine::supervisor::list' })) as { workers: Array<{ name: string; status: string; replicas: number; restarts: number }> };
        const web = workers.find((w) => w.name === 'web');
        const web0 = workers.find((w) => w.name === 'web0');
        assert.deepEqual([web?.status, web?.replicas, web0?.status, web0?.replicas], ['running', 1, 'running', 2]);
      }, 15_000);
      await new Promise((r) => setTimeout(r, 1500)); // a second replica on the port would have exited by now
      const { workers } = (await client.trigger({ function_id: 'engine::supervisor::list' })) as { workers: Array<{ name: string; restarts: number }> };
      assert.equal(workers.find((w) => w.name === 'web')?.restarts, 0);
      const { logs } = (await client.trigger({ function_id: 'engine::logs::list', payload: { source: 'engine' } })) as { logs: Array<{ level: string; message: string }> };
      const warning = logs.find((l) => l.message.includes('replicas of svc-http'));
      assert.equal(warning?.level, 'warn');
      assert.match(warning?.message ?? '', new RegExp(`^web: 2 replicas of svc-http on this machine would all bind port ${httpPort}; starting 1`));
    } finally {
      await client.shutdown();
    }
  });

  test('a second engine of a running project is refused; a taken port is said plainly', async () => {
    const file = project('twice', QUIET);
    const daemon = await startDaemon({ configFile: file });
    running.push(daemon);
    await assert.rejects(startDaemon({ configFile: file, configName: 'config.yaml' }), (e: unknown) => {
      assert.ok(e instanceof DaemonStartError);
      assert.equal(e.code, 'engine_already_running');
      assert.match(e.message, new RegExp(`^an engine of config\\.yaml is already running \\(pid ${process.pid}, ${daemon.address.url}\\); stop it first \\(svc stop, or kill ${process.pid}\\)`));
      return true;
    });
    const port = daemon.address.port;
    await assert.rejects(startDaemon({ configFile: project('other', QUIET), configName: 'config.yaml', port }), (e: unknown) => {
      assert.ok(e instanceof DaemonStartError);
      assert.equal(e.code, 'listen_failed');
      // With the way out: a new user's second project finds the default port taken.
      assert.equal(
        e.message,
        `cannot start the engine on 127.0.0.1:${port}: port ${port} is already in use (is another engine running?); choose another port: engine.port in config.yaml, or svc --config config.yaml --port 0 for any free one`,
      );
      return true;
    });
    // `svc dev` (watch) is told to start itself again, not the plain engine.
    await assert.rejects(startDaemon({ configFile: project('other', QUIET), configName: 'config.yaml', port, watch: true }), (e: unknown) => {
      assert.ok(e instanceof DaemonStartError);
      assert.match(e.message, /; choose another port: engine\.port in config\.yaml, or svc dev --config config\.yaml --port 0 for any free one$/);
      return true;
    });
    assert.equal(readEngineState(join(root, 'other', 'config.yaml')), null, 'nothing recorded for the engine that did not start');
  });

  test('config.yaml errors are ConfigFileError (invalid_config), naming the file and the key', async () => {
    const file = project('bad', 'engine:\n  port: eighty\n');
    await assert.rejects(startDaemon({ configFile: file }), (e: unknown) => {
      assert.ok(e instanceof ConfigFileError);
      assert.equal(e.code, 'invalid_config');
      assert.equal(e.message, `${file}: engine.port: must be an integer port from 0 to 65535, got "eighty"`);
      return true;
    });
    assert.match(readFileSync(file, 'utf8'), /eighty/, 'the file is left as it was');
  });
});
