/**
 * The published npm iii-sdk (pinned 0.22.1), unmodified and with telemetry on, serves again after
 * the engine daemon (`svc --config`) stops gracefully (SIGTERM: close 1012) and after kill -9.
 * The PyPI releases: sdk/python/tests/test_iii_matrix.py.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerWorker as registerIiiWorker, type IIIClient } from 'iii-sdk';
import { registerWorker, type Worker } from 'svc-sdk';
import { freePort, sleep } from '../helpers/util.js';

const SVC_BIN = fileURLToPath(new URL('../../../bin/svc.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'svc-iii-restart-'));
let daemon: ChildProcess | undefined;
const clients: Array<IIIClient | Worker> = [];

after(async () => {
  await Promise.allSettled(clients.map((c) => c.shutdown()));
  daemon?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** `svc --config` on `port`; resolves once it prints that it is ready. */
async function startDaemon(port: number): Promise<ChildProcess> {
  writeFileSync(join(dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${port}\n`);
  const child = spawn(process.execPath, [SVC_BIN, '--config', join(dir, 'config.yaml')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the engine did not start:\n${out}`)), 20_000);
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('svc engine ready on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  });
  return child;
}

async function exited(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill(signal);
  await done;
}

async function answers(svc: Worker, ms: number): Promise<unknown> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await svc.trigger({ function_id: 'iii::restart-echo', payload: { v: 1 }, timeoutMs: 2000 });
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

test('an iii worker serves again after the engine stops with SIGTERM and after kill -9', { timeout: 90_000 }, async () => {
  const port = await freePort();
  const url = `ws://127.0.0.1:${port}`;
  daemon = await startDaemon(port);
  const iii = registerIiiWorker(url, { workerName: 'iii-restart' });
  clients.push(iii);
  iii.registerFunction('iii::restart-echo', async (input: unknown) => ({ echo: input }));
  const svc = registerWorker(url, { workerName: 'svc-restart', echoLogs: false, reconnect: { initialDelayMs: 100, maxDelayMs: 500 } });
  clients.push(svc);
  assert.deepEqual(await answers(svc, 10_000), { echo: { v: 1 } });

  await exited(daemon, 'SIGTERM');
  daemon = await startDaemon(port);
  assert.deepEqual(await answers(svc, 20_000), { echo: { v: 1 } }, 'served after SIGTERM');

  await exited(daemon, 'SIGKILL');
  daemon = await startDaemon(port);
  assert.deepEqual(await answers(svc, 20_000), { echo: { v: 1 } }, 'served after kill -9');
});
