/**
 * The engine's health probes (src/engine/health.ts): GET /healthz and /readyz on the engine's own
 * port, as a kubelet sends them (the pod's IP as Host, no token). A real engine on port 0, real
 * workers; in cluster mode a real redis-server.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { registerWorker, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { adminToken } from '../helpers/tokens.js';
import { eventually } from '../helpers/util.js';
import { startRedis } from '../workers/state/redis-server.js';
import { startClusterEngine, SVC_BIN, TEST_LEASE_MS } from '../cluster/helpers.js';

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One plain HTTP request to the engine's port, with the given method and headers. */
function probe(port: number, path: string, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('engine health endpoint', { timeout: 60_000 }, () => {
  const workers: Worker[] = [];
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown(0)));
  });

  /** A call in flight on the engine at `url` until `release()`: a worker holds it. */
  async function holdCall(url: string): Promise<{ result: Promise<unknown>; release: () => void }> {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const options = { echoLogs: false, reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000 } };
    const callee = registerWorker(url, { workerName: 'holder', ...options });
    const caller = registerWorker(url, { workerName: 'health-caller', ...options });
    workers.push(callee, caller);
    let entered = false;
    callee.registerFunction('hold::call', async () => {
      entered = true;
      await held;
      return 'done';
    });
    await callee.ready();
    await eventually(async () => assert.ok(await caller.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'hold::call' } })));
    const result = caller.trigger({ function_id: 'hold::call', payload: {} });
    await eventually(() => assert.ok(entered));
    return { result, release };
  }

  it('is ready once started and answers any Host, with no token and nothing but the word', async () => {
    const secret = `health-secret-${randomUUID()}`;
    const eng = await startEngine({ tokens: [adminToken(secret)] });
    try {
      // The kubelet sends the pod's IP as Host; a probe carries no token.
      for (const host of ['10.1.2.3:49134', 'engine.svc.cluster.local', 'localhost']) {
        const ready = await probe(eng.port, '/readyz', { headers: { host } });
        assert.equal(ready.status, 200, ready.body);
        assert.equal(ready.body, 'ready\n');
        const live = await probe(eng.port, '/healthz', { headers: { host } });
        assert.equal(live.status, 200);
        assert.equal(live.body, 'live\n');
        assert.equal(live.headers['cache-control'], 'no-store');
        assert.ok(!JSON.stringify([ready, live]).includes(secret), 'no secret in an answer');
      }
      const head = await probe(eng.port, '/readyz?verbose=1', { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
    } finally {
      await eng.stop();
    }
  });

  it('refuses web pages, other methods, and leaves other paths to the WebSocket answer', async () => {
    const eng = await startEngine();
    try {
      const page = await probe(eng.port, '/readyz', { headers: { origin: 'https://evil.example' } });
      assert.equal(page.status, 403);
      assert.match(page.body, /^origin_not_allowed: /);
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const bad = await probe(eng.port, '/healthz', { method });
        assert.equal(bad.status, 405, method);
        assert.equal(bad.headers.allow, 'GET, HEAD');
        assert.match(bad.body, new RegExp(`^method_not_allowed: /healthz answers GET and HEAD, not ${method}`));
      }
      for (const path of ['/', '/health', '/readyz/x', '/metrics']) {
        const other = await probe(eng.port, path);
        assert.equal(other.status, 426, path);
        assert.match(other.body, /connect with a WebSocket/);
      }
      // The engine still serves workers after all that.
      const w = registerWorker(eng.url, { workerName: 'after-probes', echoLogs: false });
      workers.push(w);
      await w.ready();
    } finally {
      await eng.stop();
    }
  });

  it('is not ready while draining: a call in flight keeps the drain open, liveness stays up', async () => {
    const eng = await startEngine({ shutdownGraceMs: 20_000 });
    const { result, release } = await holdCall(eng.url);
    assert.equal((await probe(eng.port, '/readyz')).status, 200);

    let stopped = false;
    const stopping = eng.stop().then(() => (stopped = true));
    for (let i = 0; i < 3; i++) {
      const r = await probe(eng.port, '/readyz');
      assert.equal(r.status, 503);
      assert.equal(r.body, 'not ready: draining\n');
      assert.equal((await probe(eng.port, '/healthz')).status, 200);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(stopped, false, 'the held call keeps the drain open');
    release();
    assert.equal(await result, 'done');
    await stopping;
    await assert.rejects(probe(eng.port, '/healthz'), 'nothing listens once stopped');
  });

  it('svc --config on SIGTERM: not ready while a held call drains, then gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-health-'));
    writeFileSync(join(dir, 'config.yaml'), 'engine:\n  host: 127.0.0.1\n  port: 0\n  shutdown_grace_ms: 20000\nworkers: []\n');
    const child = spawn(process.execPath, [SVC_BIN, '--config', join(dir, 'config.yaml')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await eventually(() => assert.match(out, /svc engine ready on ws:\/\/\S+/), 20_000);
      const url = /svc engine ready on (ws:\/\/\S+)/.exec(out)![1]!;
      const port = Number(new URL(url).port);
      const { result, release } = await holdCall(url);
      assert.equal((await probe(port, '/readyz')).status, 200);
      child.kill('SIGTERM');
      await eventually(async () => assert.equal((await probe(port, '/readyz')).body, 'not ready: draining\n'));
      assert.equal((await probe(port, '/healthz')).status, 200);
      release();
      assert.equal(await result, 'done');
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('in cluster mode: ready on the backplane, not ready once it is lost for over a lease', async () => {
    const redis = await startRedis();
    const eng = await startClusterEngine(redis.url, 'health-node', `health-${randomUUID().slice(0, 8)}`);
    const port = Number(new URL(eng.url).port);
    let redisUp = true;
    try {
      assert.equal((await probe(port, '/readyz')).status, 200);
      await redis.stop();
      redisUp = false;
      await eventually(async () => {
        const r = await probe(port, '/readyz');
        assert.equal(r.status, 503);
        assert.equal(r.body, 'not ready: backplane_unavailable\n');
      }, TEST_LEASE_MS * 4);
      assert.equal((await probe(port, '/healthz')).status, 200, 'alive: the backplane may come back');
    } finally {
      await eng.stop();
      if (redisUp) await redis.stop();
    }
  });
});
