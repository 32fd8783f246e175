/**
 * `svc logs` end to end: the real binary against a real engine process, with log lines sent by a
 * real svc-sdk worker's Logger (inside and outside a call) and the engine's own events.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger, registerWorker, type Worker } from 'svc-sdk';
import { EngineProcess, SVC_BIN, closedPort, runSvc, tempDir, until } from './helpers/cli.js';

describe('svc logs', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess;
  let worker: Worker;
  let logger: Logger;

  before(async () => {
    writeFileSync(join(tmp.dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\n');
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    worker = registerWorker(engine.url, { workerName: 'log-worker', echoLogs: false });
    logger = new Logger(worker);
    worker.registerFunction('logs::work', (d: { n: number }) => {
      logger.info(`working on ${d.n}`, { n: d.n });
      logger.debug('a detail');
      return d.n;
    });
    await worker.ready();
    logger.warn('outside any call');
    logger.error('something failed', { code: 'E1' });
    await until('the call to go through', async () => (await worker.trigger({ function_id: 'logs::work', payload: { n: 7 } }).catch(() => null)) === 7);
    await until('the lines to be stored', async () => {
      const r = await runSvc(['logs', '--address', engine.url, '--text', 'something failed']);
      return r.stdout.includes('something failed');
    });
  });
  after(async () => {
    await worker.shutdown();
    await engine.stop('SIGKILL');
    tmp.remove();
  });

  test('prints worker and engine lines with time, level, worker, function id, message and data', async () => {
    const r = await runSvc(['logs', '--address', engine.url]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    const work = lines.find((l) => l.includes('working on 7'));
    assert.ok(work, r.stdout);
    assert.match(work, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  log-worker logs::work working on 7 \{"n":7\} trace=[0-9a-f]{32}$/);
    assert.ok(lines.some((l) => / WARN  log-worker outside any call$/.test(l)), r.stdout);
    assert.ok(lines.some((l) => / ERROR log-worker something failed \{"code":"E1"\}$/.test(l)), r.stdout);
    // The engine's own events are there too: the worker joining.
    assert.ok(lines.some((l) => / INFO  engine worker log-worker registered/.test(l)), r.stdout);
    // Oldest first.
    assert.ok(r.stdout.indexOf('outside any call') < r.stdout.indexOf('working on 7'));
  });

  test('--level is a minimum, --worker and --text filter, -n keeps the newest lines', async () => {
    const warn = await runSvc(['logs', '--address', engine.url, '--level', 'warn']);
    assert.equal(warn.code, 0, warn.stderr);
    assert.match(warn.stdout, /outside any call/);
    assert.match(warn.stdout, /something failed/);
    assert.doesNotMatch(warn.stdout, /working on 7|a detail/);

    const byWorker = await runSvc(['logs', '--address', engine.url, '--worker', 'log-worker']);
    assert.ok(byWorker.stdout.trimEnd().split('\n').every((l) => l.includes(' log-worker ')), byWorker.stdout);
    assert.match(byWorker.stdout, /a detail/);

    // Issue 25 item 7: an unknown worker is named as such, not answered with nothing.
    const nobody = await runSvc(['logs', '--address', engine.url, '--worker', 'no-such-worker']);
    assert.equal(nobody.code, 1);
    assert.equal(nobody.stdout, '');
    assert.match(nobody.stderr, /^error: worker_not_found: no worker "no-such-worker" is connected and no line names it \(connected: .*log-worker/);

    const text = await runSvc(['logs', '--address', engine.url, '--text', 'working']);
    assert.equal(text.stdout.trimEnd().split('\n').length, 1, text.stdout);

    const last = await runSvc(['logs', '--address', engine.url, '--worker', 'log-worker', '-n', '1']);
    assert.equal(last.stdout.trimEnd().split('\n').length, 1, last.stdout);
    assert.match(last.stdout, /a detail/);
  });

  test('--json prints one engine::logs::list entry per line', async () => {
    const r = await runSvc(['logs', '--address', engine.url, '--json', '--text', 'working on 7']);
    assert.equal(r.code, 0, r.stderr);
    const entry = JSON.parse(r.stdout.trim()) as Record<string, unknown>;
    assert.equal(entry.worker_name, 'log-worker');
    assert.equal(entry.function_id, 'logs::work');
    assert.equal(entry.level, 'info');
    assert.equal(typeof entry.invocation_id, 'string');
    assert.deepEqual(entry.data, { n: 7 });
  });

  test('-f prints new lines as they arrive and exits 0 on Ctrl-C', async () => {
    const child = spawn(process.execPath, [SVC_BIN, 'logs', '-f', '--address', engine.url, '--worker', 'log-worker', '--interval-ms', '100'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      await until('the backlog', () => out.includes('something failed'), 10_000);
      assert.doesNotMatch(out, /followed line/);
      logger.info('followed line 1');
      await until('the first new line', () => out.includes('followed line 1'), 5000);
      await worker.trigger({ function_id: 'logs::work', payload: { n: 99 } });
      await until('the line logged inside a call', () => out.includes('logs::work working on 99'), 5000);
      assert.equal(out.split('followed line 1').length, 2, 'each line is printed once');
      child.kill('SIGINT');
      assert.equal(await exited, 0, err);
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('bad arguments and a missing engine are reported plainly', async () => {
    const bad = await runSvc(['logs', '--address', engine.url, '--level', 'loud']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /loud/);
    const port = await closedPort();
    const none = await runSvc(['logs', '--address', `ws://127.0.0.1:${port}`], { timeoutMs: 20_000 });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /error: connection_failed: Cannot reach the engine at ws:\/\/127\.0\.0\.1:\d+/);
  });
});
