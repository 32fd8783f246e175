/**
 * The svc-http process as `svc worker add svc-http` runs it: env in, listening line out, clean exit.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { registerWorker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';

const MAIN = fileURLToPath(new URL('../../../src/workers/http/main.js', import.meta.url));

let engine: Awaited<ReturnType<typeof startEngine>>;
before(async () => {
  engine = await startEngine();
});
after(() => engine?.stop());

function run(env: Record<string, string>): { child: ChildProcess; out: () => string; err: () => string } {
  const child = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, out: () => out, err: () => err };
}

test('main: serves on the configured port, and exits 0 on SIGTERM', async () => {
  const p = run({ SVC_URL: engine.url, SVC_WORKER_CONFIG: JSON.stringify({ port: 0, request_log: false }) });
  try {
    const deadline = Date.now() + 10_000;
    let m: RegExpExecArray | null = null;
    while (!(m = /svc-http listening on http:\/\/127\.0\.0\.1:(\d+) \(engine ws:/.exec(p.out())) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(m, `no listening line; stdout: ${p.out()} stderr: ${p.err()}`);
    const base = `http://127.0.0.1:${m[1]}`;

    const w = registerWorker(engine.url, { workerName: 'main-test', echoLogs: false });
    try {
      w.registerFunction('main::hi', (req: { query_params: { name?: string } }) => ({ status_code: 200, body: { hi: req.query_params.name } }));
      await w.registerTrigger({ type: 'http', function_id: 'main::hi', config: { api_path: '/hi', http_method: 'GET' } });
      const res = await fetch(`${base}/hi?name=ada`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { hi: 'ada' });
    } finally {
      await w.shutdown();
    }
    p.child.kill('SIGTERM');
    const [code] = await once(p.child, 'exit');
    assert.equal(code, 0);
  } finally {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  }
});

test('main: an invalid config exits 2 with a message naming the key', async () => {
  const p = run({ SVC_URL: engine.url, SVC_WORKER_CONFIG: JSON.stringify({ port: 0, prot: 1 }) });
  const [code] = await once(p.child, 'exit');
  assert.equal(code, 2);
  assert.match(p.err(), /^svc-http config: unknown key "prot"/);

  const q = run({ SVC_URL: engine.url, SVC_WORKER_CONFIG: '{port:' });
  const [code2] = await once(q.child, 'exit');
  assert.equal(code2, 2);
  assert.match(q.err(), /^svc-http: SVC_WORKER_CONFIG is not valid JSON/);
});
