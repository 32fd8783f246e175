/**
 * The svc-http process as `svc worker add svc-http` runs it: env in, listening line out, clean exit.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { registerWorker } from 'svc-sdk';
import { startEngine } from '../../helpers/engine.js';
import { eventually, sleep } from '../../helpers/util.js';

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

test('main: a taken port exits 1 with a message naming the port and how to choose another', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const busy = (blocker.address() as AddressInfo).port;
  try {
    const p = run({ SVC_URL: engine.url, SVC_WORKER_CONFIG: JSON.stringify({ port: busy, request_log: false }) });
    const [code] = await once(p.child, 'exit');
    assert.equal(code, 1);
    assert.equal(
      p.err(),
      `svc-http: port ${busy} on 127.0.0.1 is already in use; choose another: svc worker add svc-http --set port=<n> (0: any free port), or port: in its config.yaml entry\n`,
    );
  } finally {
    blocker.close();
  }
});

test('main: a flood of connections that takes every file descriptor does not end svc-http, which serves again after it', async () => {
  // 128 descriptors, and more connections than that: svc-http's process report (every 100 ms here)
  // read /proc/self while none was left, threw EMFILE from its timer, and the process exited.
  const child = spawn('prlimit', ['--nofile=128:128', process.execPath, MAIN], {
    env: { ...process.env, SVC_URL: engine.url, SVC_WORKER_CONFIG: JSON.stringify({ port: 0, request_log: false }), SVC_PROCESS_REPORT_MS: '100' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const sockets: Socket[] = [];
  const w = registerWorker(engine.url, { workerName: 'flood-test', echoLogs: false });
  try {
    const deadline = Date.now() + 10_000;
    let m: RegExpExecArray | null = null;
    while (!(m = /svc-http listening on http:\/\/127\.0\.0\.1:(\d+) \(engine ws:/.exec(out)) && Date.now() < deadline) await sleep(20);
    assert.ok(m, `no listening line: ${out}`);
    const port = Number(m[1]);
    w.registerFunction('flood::hi', () => ({ status_code: 200, body: 'hi' }));
    await w.registerTrigger({ type: 'http', function_id: 'flood::hi', config: { api_path: '/hi', http_method: 'GET' } });
    for (let i = 0; i < 200; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => {});
      sockets.push(s);
    }
    await sleep(1500);
    assert.equal(child.exitCode, null, `svc-http exited during the flood: ${out}`);
    for (const s of sockets) s.destroy();
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/hi`);
      assert.equal(res.status, 200);
    }, 10_000);
  } finally {
    for (const s of sockets) s.destroy();
    await w.shutdown();
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('main: connections over max_connections are closed as they arrive, with a warning, and served again after', async () => {
  const p = run({ SVC_URL: engine.url, SVC_WORKER_CONFIG: JSON.stringify({ port: 0, request_log: false, max_connections: 20 }) });
  const sockets: Socket[] = [];
  const w = registerWorker(engine.url, { workerName: 'max-conn-test', echoLogs: false });
  try {
    const deadline = Date.now() + 10_000;
    let m: RegExpExecArray | null = null;
    while (!(m = /svc-http listening on http:\/\/127\.0\.0\.1:(\d+) \(engine ws:/.exec(p.out())) && Date.now() < deadline) await sleep(20);
    assert.ok(m, `no listening line: ${p.out()} ${p.err()}`);
    const port = Number(m[1]);
    w.registerFunction('maxconn::hi', () => ({ status_code: 200, body: 'hi' }));
    await w.registerTrigger({ type: 'http', function_id: 'maxconn::hi', config: { api_path: '/hi', http_method: 'GET' } });
    let closed = 0;
    for (let i = 0; i < 60; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => closed++);
      sockets.push(s);
    }
    // 20 held open by svc-http, the other 40 closed at once, before any request.
    await eventually(() => assert.equal(closed, 40));
    await sleep(200);
    assert.equal(closed, 40);
    await eventually(() => assert.match(p.out() + p.err(), /svc-http has 20 connections open \(max_connections\): closed \d+ more as they arrived/));
    for (const s of sockets) s.destroy();
    await eventually(async () => assert.equal((await fetch(`http://127.0.0.1:${port}/hi`)).status, 200));
  } finally {
    for (const s of sockets) s.destroy();
    await w.shutdown();
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  }
});
