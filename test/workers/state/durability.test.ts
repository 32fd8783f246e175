/**
 * Durability of the embedded store: acknowledged writes, then `kill -9` of the svc-state process,
 * then a restart on the same data directory: every acknowledged write is there.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';

const MAIN = fileURLToPath(new URL('../../../src/workers/state/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'svc-state-dur-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function spawnState(url: string): ChildProcess {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, SVC_URL: url, SVC_WORKER_CONFIG: JSON.stringify({ data_dir: dir }), SVC_LOG_ECHO: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  child.on('exit', (code, signal) => {
    if (code !== null && code !== 0) process.stderr.write(`svc-state exited ${code}:\n${out}\n`);
    void signal;
  });
  return child;
}

/** Wait until state::* answers through the engine (the worker connected and registered). */
async function waitCallable(client: Worker): Promise<void> {
  const end = Date.now() + 15_000;
  for (;;) {
    try {
      await client.trigger({ function_id: 'state::list_groups', payload: {}, timeoutMs: 2000 });
      return;
    } catch (e) {
      if (Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function exited(child: ChildProcess): Promise<NodeJS.Signals | number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.signalCode ?? child.exitCode);
    child.once('exit', (code, signal) => resolve(signal ?? code));
  });
}

test('acknowledged writes survive kill -9 of svc-state', async () => {
  const engine = await startEngine();
  const client = registerWorker(engine.url, { workerName: 'durability-client', echoLogs: false });
  let child = spawnState(engine.url);
  try {
    await client.ready();
    await waitCallable(client);
    const call = (function_id: string, payload: unknown) => client.trigger({ function_id, payload });

    // 300 sets, 300 increments and 100 appends, all concurrent; every one acknowledged.
    await Promise.all([
      ...Array.from({ length: 300 }, (_, i) => call('state::set', { scope: 'dur', key: `k${i}`, value: { i, s: 'é'.repeat(i % 50) } })),
      ...Array.from({ length: 300 }, () => call('state::update', { scope: 'dur', key: 'counter', ops: [{ type: 'increment', by: 2 }] })),
      ...Array.from({ length: 100 }, (_, i) => call('state::update', { scope: 'log', key: 'list', ops: [{ type: 'append', value: i }] })),
    ]);
    await call('state::delete', { scope: 'dur', key: 'k0' });
    // The last acknowledged write, immediately before the kill.
    await call('state::set', { scope: 'dur', key: 'last', value: 'acknowledged' });

    child.kill('SIGKILL');
    assert.equal(await exited(child), 'SIGKILL');

    child = spawnState(engine.url);
    await waitCallable(client);
    assert.equal(await call('state::get', { scope: 'dur', key: 'last' }), 'acknowledged');
    assert.equal(await call('state::get', { scope: 'dur', key: 'counter' }), 600);
    assert.equal(await call('state::get', { scope: 'dur', key: 'k0' }), null);
    for (let i = 1; i < 300; i++) {
      assert.deepEqual(await call('state::get', { scope: 'dur', key: `k${i}` }), { i, s: 'é'.repeat(i % 50) }, `k${i}`);
    }
    const list = (await call('state::get', { scope: 'log', key: 'list' })) as number[];
    assert.deepEqual([...list].sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i));
    assert.deepEqual(await call('state::list_groups', {}), { groups: ['dur', 'log'] });
  } finally {
    child.kill('SIGKILL');
    await exited(child);
    await client.shutdown();
    await engine.stop();
  }
});

test('svc-state refuses a bad SVC_WORKER_CONFIG with a clear message', async () => {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, SVC_URL: 'ws://127.0.0.1:1', SVC_WORKER_CONFIG: JSON.stringify({ store: 'postgres' }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  assert.equal(await exited(child), 1);
  assert.match(err, /"store" must be "embedded" or "redis", got "postgres"/);
});
