/**
 * What `svc console` prints about its engine, through the real binary: one line when the engine
 * cannot be reached, one when it connects, one when it goes away. Before: every failed reconnect
 * attempt printed "lost the engine at …; retrying", about twice a second, also for an engine it had
 * never reached.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedPort, EngineProcess, SVC_BIN, tempDir, until } from '../helpers/cli.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const count = (text: string, part: string): number => text.split(part).length - 1;

describe('svc console: what it prints about the engine', { timeout: 60_000 }, () => {
  const tmp = tempDir();
  let engine: EngineProcess | undefined;
  let console_: ReturnType<typeof spawn> | undefined;
  after(async () => {
    console_?.kill('SIGKILL');
    await engine?.stop('SIGKILL');
    tmp.remove();
  });

  test('unreachable, then connected, then lost: one line each, however long it retries', async () => {
    const port = await closedPort();
    const address = `ws://127.0.0.1:${port}`;
    // From a directory without config.yaml or a running engine: --address alone names the engine.
    console_ = spawn(process.execPath, [SVC_BIN, 'console', '--address', address, '--port', '0'], { cwd: tmp.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    console_.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    console_.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
    await until('the console to serve', () => out.includes('svc console on http://127.0.0.1:'), 15_000);
    await sleep(3000);
    const unreachable = `cannot reach the engine at ${address}; retrying until it answers`;
    assert.equal(count(out, unreachable), 1, out);
    assert.equal(count(out, 'lost the engine'), 0, out);

    writeFileSync(join(tmp.dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${port}\nworkers: []\n`);
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: tmp.dir });
    await until('the console to connect', () => out.includes(`connected to the engine at ${address}`), 20_000);
    await engine.stop();
    await until('the console to see the engine go', () => out.includes(`lost the engine at ${address}; retrying until it is back`), 10_000);
    await sleep(3000);
    assert.equal(count(out, 'lost the engine'), 1, out);
    assert.equal(count(out, 'cannot reach the engine'), 1, out);
    assert.equal(count(out, 'connected to the engine'), 1, out);

    console_.kill('SIGTERM');
    await new Promise((r) => console_!.once('close', r));
  });

  test('stopped (Ctrl-C, SIGTERM) while connected: it says nothing about losing the engine', async () => {
    // Its own shutdown closes its connection; that printed "lost the engine at …; retrying until
    // it is back" as its last line, as if the engine had gone and the console would wait for it.
    const dir = tempDir();
    const port = await closedPort();
    const address = `ws://127.0.0.1:${port}`;
    writeFileSync(join(dir.dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${port}\nworkers: []\n`);
    const eng = await EngineProcess.start(['--config', 'config.yaml'], { cwd: dir.dir });
    try {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) {
        const c = spawn(process.execPath, [SVC_BIN, 'console', '--address', address, '--port', '0'], { cwd: dir.dir, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        c.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
        c.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
        await until('the console to connect', () => out.includes(`connected to the engine at ${address}`), 20_000);
        const code = await new Promise<number | null>((r) => {
          c.once('close', r);
          c.kill(signal);
        });
        assert.equal(code, 0, out);
        assert.equal(count(out, 'lost the engine'), 0, `${signal}: ${out}`);
        assert.equal(count(out, 'cannot reach the engine'), 0, `${signal}: ${out}`);
      }
    } finally {
      await eng.stop();
      dir.remove();
    }
  });
});
