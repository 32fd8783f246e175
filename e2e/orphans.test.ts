/**
 * Issue 17, item 4, as it was reproduced: project A's engine (svc-state, svc-http, the quickstart's
 * Python math-worker and TypeScript caller-worker) is killed with kill -9, and project B's engine
 * starts on the same port (no tokens) with its own svc-state and svc-http. Before, A's workers
 * kept running and attached to B: B had two svc-state instances with different data directories,
 * state::get alternated between them (acknowledged keys read back as null), B's svc-http
 * crash-looped on the port A's still held, and `svc worker list` showed only the crash loop.
 * Now A's workers exit within seconds (the liveness pipe), a straggler would be refused (its run
 * secret), and B has only its own workers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { registerWorker } from 'svc-sdk';
import { alive, closedPort, EngineProcess, runSvc, tempDir, until, type WorkerListRow } from './helpers/cli.js';

type ListRow = WorkerListRow;

describe('kill -9 of an engine, then another project on its port: no stale process serves calls', { timeout: 600_000 }, () => {
  const tmp = tempDir();
  const a = join(tmp.dir, 'project-a');
  const b = join(tmp.dir, 'project-b');
  let port = 0;
  let httpPort = 0;
  let engineA: EngineProcess | undefined;
  let engineB: EngineProcess | undefined;
  let pidsA: number[] = [];

  const svcIn = (cwd: string) => async (args: string[], timeoutMs = 30_000) => runSvc(args, { cwd, timeoutMs });
  const inA = svcIn(a);
  const inB = svcIn(b);
  const call = async (run: ReturnType<typeof svcIn>, args: string[]): Promise<unknown> => {
    const r = await run(['trigger', ...args]);
    assert.equal(r.code, 0, `svc trigger ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const list = async (run: ReturnType<typeof svcIn>): Promise<ListRow[]> => {
    const r = await run(['worker', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as ListRow[];
  };
  const pidsOf = (rows: ListRow[]): number[] => rows.flatMap((r) => r.pids.map(Number));

  before(async () => {
    port = await closedPort();
    httpPort = await closedPort();
    const created = await runSvc(['create', '--template', 'quickstart', '--directory', a], { cwd: tmp.dir });
    assert.equal(created.code, 0, created.stderr);
    const cfg = join(a, 'config.yaml');
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace(/port: 49134/, `port: ${port}`));
    for (const args of [['svc-state'], ['svc-http', '--set', `port=${httpPort}`], ['./workers/math-worker'], ['./workers/caller-worker']]) {
      const r = await inA(['worker', 'add', ...args], 240_000);
      assert.equal(r.code, 0, r.stderr + r.stdout);
    }
    mkdirSync(b);
    writeFileSync(
      join(b, 'config.yaml'),
      `engine:\n  host: 127.0.0.1\n  port: ${port}\nworkers:\n  - name: svc-state\n    builtin: svc-state\n  - name: svc-http\n    builtin: svc-http\n    config:\n      port: ${httpPort}\n`,
    );
  });

  after(async () => {
    await engineA?.stop('SIGKILL');
    await engineB?.stop('SIGKILL');
    for (const p of pidsA) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    tmp.remove();
  });

  test('project A runs: math::add through svc-state, POST through svc-http, a key acknowledged in its store', async () => {
    engineA = await EngineProcess.start(['--config', 'config.yaml'], { cwd: a });
    await until('math::add to answer in A', async () => (await inA(['trigger', 'math::add', 'a=2', 'b=3'])).code === 0, 60_000);
    await until('POST /math/add-two-numbers in A', async () => {
      const res = await fetch(`http://127.0.0.1:${httpPort}/math/add-two-numbers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1,"b":1}' }).catch(() => null);
      return res?.status === 200;
    }, 30_000);
    assert.deepEqual(await call(inA, ['state::set', 'scope=orphans', 'key=owner', 'value=a']), { old_value: null, new_value: 'a' });
    const rows = await list(inA);
    assert.deepEqual(rows.map((r) => r.status), ['running', 'running', 'running', 'running']);
    pidsA = pidsOf(rows);
    assert.equal(pidsA.length, 4);
  });

  test('kill -9 of engine A: every worker it started exits within 10 s', async () => {
    await engineA!.stop('SIGKILL');
    engineA = undefined;
    const t0 = Date.now();
    await until('A\'s workers to exit', () => pidsA.every((p) => !alive(p)), 10_000).catch(() => {
      throw new Error(`still running 10 s after their engine died: ${pidsA.filter(alive).join(', ')}`);
    });
    assert.ok(Date.now() - t0 < 10_000);
  });

  test('engine B on the same port has only its own workers, its svc-http serves, its state reads back from its own store', async () => {
    engineB = await EngineProcess.start(['--config', 'config.yaml'], { cwd: b });
    const rows = await until('B\'s workers to connect', async () => {
      const r = await list(inB);
      return r.every((x) => x.status === 'running') ? r : null;
    }, 30_000);
    assert.deepEqual(rows.map((r) => [r.name, r.status, r.restarts]), [['svc-state', 'running', 0], ['svc-http', 'running', 0]]);
    assert.ok(rows[0]!.functions.includes('state::get'));
    const workers = (await call(inB, ['engine::workers::list'])) as { workers: Array<{ name: string; supervised: { worker: string } | null }> };
    assert.deepEqual(workers.workers.map((w) => [w.name, w.supervised?.worker]).sort(), [['svc-http', 'svc-http'], ['svc-state', 'svc-state']]);
    // B's svc-http holds the port: it has no route for A's endpoint.
    const res = await fetch(`http://127.0.0.1:${httpPort}/math/add-two-numbers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1,"b":1}' });
    assert.equal(res.status, 404);
    // Every acknowledged key reads back: one store answers, B's. The forty calls go through one
    // client connected to B (the engine routes them as it routes svc trigger's): forty runs of
    // `svc trigger` took 40 s, a second of starting node each.
    const client = registerWorker(engineB.url, { workerName: 'orphans-e2e-client', echoLogs: false });
    try {
      await client.ready(10_000);
      for (let i = 0; i < 20; i++) {
        assert.deepEqual(await client.trigger({ function_id: 'state::set', payload: { scope: 'orphans', key: `k${i}`, value: i } }), { old_value: null, new_value: i });
      }
      for (let i = 0; i < 20; i++) assert.equal(await client.trigger({ function_id: 'state::get', payload: { scope: 'orphans', key: `k${i}` } }), i);
    } finally {
      await client.shutdown();
    }
    assert.equal(await call(inB, ['state::get', 'scope=orphans', 'key=owner']), null, 'A\'s key is not in B\'s store');
    await engineB.stop('SIGTERM');
    engineB = undefined;
  });

  test('engine A again: its own store still has its key, and its workers come back', async () => {
    engineA = await EngineProcess.start(['--config', 'config.yaml'], { cwd: a });
    const owner = await until('state::get in A', async () => {
      const r = await inA(['trigger', 'state::get', 'scope=orphans', 'key=owner']);
      return r.code === 0 ? JSON.parse(r.stdout) as unknown : null;
    }, 60_000);
    assert.equal(owner, 'a');
    assert.equal(await call(inA, ['state::get', 'scope=orphans', 'key=k0']), null);
    await engineA.stop('SIGTERM');
    engineA = undefined;
  });
});
