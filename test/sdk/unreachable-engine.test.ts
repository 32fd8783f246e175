/**
 * A worker whose engine address is wrong says so. Before, a TypeScript worker with an SVC_URL
 * nobody listens on retried in silence (the Python SDK logs each retry), and one with a malformed
 * SVC_URL (`localhost:49134`) printed why and then exited 0. Real processes: exit codes and stderr
 * are what a user sees.
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../..', import.meta.url));

/** Runs a worker program for at most `ms`: its exit code (null: still running, killed) and stderr. */
function run(url: string, ms: number, program = ''): Promise<{ code: number | null; stderr: string }> {
  const src = `import { registerWorker } from 'svc-sdk';
const w = registerWorker(${JSON.stringify(url)}, { workerName: 'lost', reconnect: { initialDelayMs: 50, maxDelayMs: 100 } });
w.registerFunction('lost::f', () => 1);
${program}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', src], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  return new Promise((resolve) => child.on('close', (code) => (clearTimeout(timer), resolve({ code, stderr }))));
}

test('an engine that cannot be reached is reported once on stderr, naming the address and why, while the worker retries', async () => {
  const { code, stderr } = await run('ws://127.0.0.1:1', 1500);
  assert.equal(code, null, stderr); // still retrying when killed
  const lines = stderr.split('\n').filter((l) => l.includes('Cannot reach the engine'));
  assert.deepEqual(lines, ["svc-sdk [lost]: Cannot reach the engine at ws://127.0.0.1:1 (ECONNREFUSED); retrying until it answers (the address comes from SVC_URL or registerWorker's url)"], stderr);
});

test("with an 'error' listener the program gets it as connection_failed instead of stderr", async () => {
  const { stderr } = await run('ws://127.0.0.1:1', 1500, `w.on('error', (e) => process.stderr.write('listener: ' + e.code + '\\n'));`);
  assert.equal(stderr.trim(), 'listener: connection_failed');
});

test('a malformed engine address ends the worker with exit code 1, not 0', async () => {
  const { code, stderr } = await run('localhost:49134', 10_000);
  assert.match(stderr, /^svc-sdk \[lost\]: Cannot connect to the engine at "localhost:49134": The URL's protocol must be one of/);
  assert.equal(code, 1);
});
