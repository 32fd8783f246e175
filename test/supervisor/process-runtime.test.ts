import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProcessRuntime } from '../../src/supervisor/process-runtime.js';
import { runtimeConformance } from './runtime-conformance.js';

const RUNTIME = fileURLToPath(new URL('../../src/supervisor/process-runtime.js', import.meta.url));

runtimeConformance({
  name: 'process',
  make: () => new ProcessRuntime(),
  firstLaunchMs: 10_000,
  async killHard(inst) {
    process.kill(inst.pid!, 'SIGKILL');
  },
  async alive(inst) {
    try {
      process.kill(inst.pid!, 0);
      return true;
    } catch {
      return false;
    }
  },
});

test('a launch while every file descriptor is in use fails with a clear error and nothing uncaught', () => {
  // In a process of its own with 64 descriptors, all taken before the launch: the spawn then has
  // no stdio, and its error, emitted on the next tick before anything listened, ended the engine.
  const script = `
    import { openSync } from 'node:fs';
    import { ProcessRuntime } from ${JSON.stringify(RUNTIME)};
    const held = [];
    try { for (;;) held.push(openSync('/dev/null', 'r')); } catch {}
    // One descriptor free, for the log file the launch appends to.
    (await import('node:fs')).closeSync(held.pop());
    process.on('uncaughtException', (e) => { console.log('UNCAUGHT ' + e.message); process.exit(3); });
    try {
      await new ProcessRuntime().launch({ name: 'w', replica: 0, cwd: ${JSON.stringify(tmpdir())}, command: 'sleep 5', env: {}, logFile: ${JSON.stringify(join(tmpdir(), `svc-emfile-${process.pid}.log`))} });
      console.log('LAUNCHED');
    } catch (e) {
      console.log('REJECTED ' + e.message);
    }
    await new Promise((r) => setTimeout(r, 200));
  `;
  const r = spawnSync('prlimit', ['--nofile=64:64', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /^REJECTED could not start w: spawn failed: spawn \/bin\/sh EMFILE$/m);
});
