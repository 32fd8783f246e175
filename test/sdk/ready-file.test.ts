/**
 * A worker's ready file (sdk/typescript/src/ready-file.ts; the Python twin is
 * sdk/python/tests/test_ready_file.py) and the readiness probes `svc deploy kubernetes` writes for
 * it (src/cli/deploy/kubernetes-manifests.ts), run as the kubelet would: the probe's own command
 * against a real worker's file and a real engine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'svc-sdk';
import { workerReadinessCommand } from '../../src/cli/deploy/kubernetes-manifests.js';
import { startEngine } from '../helpers/engine.js';
import { eventually } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

/** The probe's exit code: 0 ready, anything else not. */
function probe(kind: 'node' | 'python', readyz: string | null, file: string): Promise<number> {
  const [bin, ...args] = workerReadinessCommand(kind, readyz, file);
  const command = bin === 'node' ? process.execPath : 'python3';
  return new Promise((resolve) => execFile(command, args, { timeout: 10_000 }, (err) => resolve(err ? (typeof err.code === 'number' ? err.code : 99) : 0)));
}

const read = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '<none>');

describe('the ready file and the readiness probe that reads it', () => {
  let eng: Eng;
  const dir = mkdtempSync(join(tmpdir(), 'svc-ready-'));
  const readyz = (): string => eng.url.replace(/^ws:/, 'http:') + '/readyz';
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await eng.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('ready while connected; a stale or not-ready file fails both probes; gone after shutdown', async () => {
    const file = join(dir, 'ready');
    const w = new Worker(eng.url, { workerName: 'ready-ts', echoLogs: false, readyFile: file, reconnect: { initialDelayMs: 20, maxDelayMs: 50 } });
    assert.equal(read(file), 'not ready: disconnected\n', 'written from the start');
    w.registerFunction('ready::echo', (d: unknown) => d);
    w.start();
    await w.ready(5000);
    assert.equal(read(file), 'ready ready-ts\n');
    assert.equal(await probe('node', readyz(), file), 0);
    assert.equal(await probe('python', readyz(), file), 0);
    // A file nobody touched for a minute: the worker's loop is taken to be stuck.
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    assert.notEqual(await probe('node', readyz(), file), 0);
    assert.notEqual(await probe('python', readyz(), file), 0);
    // The worker touches it again within 5 s.
    await eventually(async () => assert.equal(await probe('node', readyz(), file), 0), 8000);
    w.simulateDisconnect();
    await new Promise<void>((r) => w.once('connected', () => r()));
    assert.equal(read(file), 'ready ready-ts\n', 'ready again after a reconnect');
    await w.shutdown();
    assert.equal(read(file), '<none>');
    assert.deepEqual(readdirSync(dir), [], 'nothing written aside is left');
  });

  test('a worker made but never started (its program stuck before start()) is not ready', async () => {
    const file = join(dir, 'never-started');
    const w = new Worker(eng.url, { workerName: 'never-started', echoLogs: false, readyFile: file });
    assert.equal(read(file), 'not ready: disconnected\n');
    assert.notEqual(await probe('node', readyz(), file), 0);
    assert.notEqual(await probe('python', readyz(), file), 0);
    await w.shutdown();
    assert.equal(read(file), '<none>');
  });

  test('a worker whose engine is gone is not ready; without a file the probes ask the engine', async () => {
    const own = await startEngine();
    const file = join(dir, 'engine-gone');
    const w = new Worker(own.url, { workerName: 'engine-gone', echoLogs: false, readyFile: file, reconnect: { initialDelayMs: 20, maxDelayMs: 50 } });
    w.start();
    await w.ready(5000);
    const ownReadyz = own.url.replace(/^ws:/, 'http:') + '/readyz';
    await own.stop();
    await eventually(() => assert.match(read(file), /^not ready: (disconnected|connecting)\n$/));
    assert.notEqual(await probe('node', ownReadyz, file), 0);
    assert.notEqual(await probe('python', ownReadyz, file), 0);
    await w.shutdown();
    // No file (a program on iii-sdk writes none): ready when the engine is.
    const none = join(dir, 'never-written');
    assert.equal(await probe('node', readyz(), none), 0);
    assert.equal(await probe('python', readyz(), none), 0);
    // The built-ins' probes (no engine to ask): no file, not ready.
    assert.notEqual(await probe('node', null, none), 0);
    assert.notEqual(await probe('python', null, none), 0);
    assert.notEqual(await probe('node', ownReadyz, none), 0, 'engine gone');
    assert.notEqual(await probe('python', ownReadyz, none), 0, 'engine gone');
  });

  test('a worker the engine refused for good stays not ready (its process lives on without it)', async () => {
    const file = join(dir, 'refused');
    // A run secret no engine run issued: the engine refuses it with stale_worker, which is final.
    const w = new Worker(eng.url, { workerName: 'refused', echoLogs: false, readyFile: file, runSecret: 'bogus-run-secret' });
    w.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => w.on('state', (s) => s === 'closed' && resolve()));
    w.start();
    await closed;
    assert.equal(read(file), 'not ready: closed\n');
    assert.notEqual(await probe('node', readyz(), file), 0, 'not ready although the engine is');
    assert.notEqual(await probe('python', readyz(), file), 0, 'not ready although the engine is');
    rmSync(file, { force: true });
  });

  test('a link left where the worker writes aside (a shared /tmp) does not make it write through the link', async () => {
    const shared = join(dir, 'shared');
    mkdirSync(shared);
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious\n');
    const file = join(shared, 'ready');
    // The name the worker wrote aside under before: guessable from its pid.
    symlinkSync(victim, `${file}.${process.pid}.tmp`);
    const w = new Worker(eng.url, { workerName: 'ready-link', echoLogs: false, readyFile: file });
    w.start();
    await w.ready(5000);
    await w.shutdown();
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the file the link points at is untouched');
    assert.deepEqual(readdirSync(shared), [`ready.${process.pid}.tmp`], 'only the link is left');
  });

  test('a path that cannot be written is reported once and the worker works on', async () => {
    const file = join(dir, 'no-such-dir', 'ready');
    const w = new Worker(eng.url, { workerName: 'ready-bad-path', echoLogs: false, readyFile: file });
    const errors: string[] = [];
    w.on('error', (e) => errors.push(e.message));
    w.registerFunction('ready::bad', (d: unknown) => d);
    w.start();
    await w.ready(5000);
    assert.deepEqual(await w.trigger({ function_id: 'ready::bad', payload: { x: 1 } }), { x: 1 });
    await w.shutdown();
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0]!, /cannot write the ready file .*no-such-dir/);
  });
});
