/**
 * A supervised worker attaches only to the engine run that started it (issue 17, item 4): each
 * instance gets a run secret of its own (SVC_RUN_SECRET), presented at connect; any other engine,
 * including a later run of the same one, refuses it with `stale_worker` and close code 4410, and
 * the SDK stops for good. Connections without a secret (iii SDKs, unsupervised workers) are
 * accepted as before.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { InvocationError } from 'svc-sdk';
import { RUN_SECRET_HEADER } from 'svc-sdk/protocol';
import { runSvc } from '../../e2e/helpers/cli.js';
import { startEngine } from '../helpers/engine.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

/** Connect with these upgrade headers; resolves with the frames and the close (or 'open' after 300 ms). */
async function attempt(url: string, headers: Record<string, string>): Promise<{ frames: Array<{ type: string; error?: { code: string; message: string } }>; code: number | 'open' }> {
  const ws = new WebSocket(url, { headers });
  const frames: Array<{ type: string; error?: { code: string; message: string } }> = [];
  ws.on('message', (d) => frames.push(JSON.parse(d.toString()) as (typeof frames)[number]));
  const code = await new Promise<number | 'open'>((resolve) => {
    ws.on('close', (c) => resolve(c));
    ws.on('open', () => setTimeout(() => resolve('open'), 300));
  });
  ws.terminate();
  return { frames, code };
}

describe('run secrets: a worker attaches only to the engine run that started it', () => {
  let eng: Eng;
  let other: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine();
    other = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
    await other.stop();
  });

  test('another run\'s secret is refused before anything else: stale_worker, close 4410, both runs named', async () => {
    const secret = other.engine.run.issue({ kind: 'instance', worker: 'math-worker', replica: 0 });
    const r = await attempt(eng.url, { [RUN_SECRET_HEADER]: secret });
    assert.equal(r.code, 4410);
    assert.equal(r.frames.length, 1, 'no workerregistered, nothing of the registry');
    assert.equal(r.frames[0]!.error!.code, 'stale_worker');
    assert.match(r.frames[0]!.error!.message, new RegExp(`engine run ${other.engine.run.id}, but this engine is run ${eng.engine.run.id}`));
    // Garbage is refused the same way (its run is "unknown").
    assert.equal((await attempt(eng.url, { [RUN_SECRET_HEADER]: 'not-a-secret' })).code, 4410);
  });

  test('this run\'s secret is accepted and says which instance the connection is; a revoked one is refused', async () => {
    const secret = eng.engine.run.issue({ kind: 'instance', worker: 'math-worker', replica: 1 });
    const w = pool.make('whatever-it-calls-itself', { runSecret: secret });
    await w.ready(3000);
    const info = (await w.trigger({ function_id: 'engine::workers::info', payload: { worker_id: w.workerId } })) as { supervised: unknown; name: string };
    assert.deepEqual(info.supervised, { worker: 'math-worker', replica: 1 });
    assert.equal(info.name, 'whatever-it-calls-itself');
    eng.engine.run.revoke(secret);
    const r = await attempt(eng.url, { [RUN_SECRET_HEADER]: secret });
    assert.equal(r.code, 4410);
    assert.match(r.frames[0]!.error!.message, /no longer honours: the instance it was issued to has exited/);
  });

  test('no secret: accepted as before, and not shown as supervised', async () => {
    const r = await attempt(eng.url, {});
    assert.equal(r.code, 'open');
    const w = pool.make('plain');
    await w.ready(3000);
    const info = (await w.trigger({ function_id: 'engine::workers::info', payload: { worker_id: w.workerId } })) as { supervised: unknown };
    assert.equal(info.supervised, null);
  });

  test('svc-sdk takes the refusal as final: ready() and calls fail with stale_worker at once, and it never reconnects', async () => {
    let refusals = 0;
    const secret = other.engine.run.issue({ kind: 'instance', worker: 'w', replica: 0 });
    const before = eng.engine.sessionCount;
    const w = pool.make('stale', { runSecret: secret, reconnect: { initialDelayMs: 20, maxDelayMs: 20 } });
    w.on('error', (e: InvocationError) => {
      if (e.code === 'stale_worker') refusals++;
    });
    const t0 = Date.now();
    await assert.rejects(w.ready(5000), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'stale_worker');
      assert.match(e.message, /the engine that started this worker is gone/);
      return true;
    });
    assert.ok(Date.now() - t0 < 2000, 'at once, not after the timeout');
    await assert.rejects(w.trigger({ function_id: 'engine::health::check' }), { code: 'stale_worker' });
    await sleep(300); // 15 reconnect periods
    assert.equal(refusals, 1, 'one connection, refused once');
    assert.equal(w.state, 'closed');
    assert.equal(eng.engine.sessionCount, before);
  });

  test('a process started with SVC_RUN_SECRET of another run exits (its engine is gone), whatever it was doing', async () => {
    const secret = other.engine.run.issue({ kind: 'instance', worker: 'w', replica: 0 });
    const sdk = fileURLToPath(new URL('../../../sdk/typescript/dist/index.js', import.meta.url));
    // A worker that would otherwise run for ever: it keeps a timer, and ignores nothing.
    const program = `import { registerWorker } from ${JSON.stringify(sdk)};
      registerWorker(process.env.SVC_URL, { workerName: 'orphan', echoLogs: false }).registerFunction('x::y', () => 1);
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', program], {
      env: { ...process.env, SVC_URL: eng.url, SVC_RUN_SECRET: secret },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    assert.ok(exit.signal === 'SIGTERM' || exit.code !== null, JSON.stringify(exit));
    assert.match(stderr, /is not the engine run that started this worker; this process was started by that engine, so it exits/);
  });
});

test('the svc CLI run by a supervised worker does not present the secret it inherits', async () => {
  const eng = await startEngine();
  const other = await startEngine();
  try {
    const inherited = other.engine.run.issue({ kind: 'instance', worker: 'w', replica: 0 });
    const r = await runSvc(['trigger', 'engine::health::check', '--address', eng.url], { env: { SVC_RUN_SECRET: inherited, SVC_LIVENESS_FD: '0' } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { status: string }).status, 'ok');
  } finally {
    await eng.stop();
    await other.stop();
  }
});

describe('run secrets: the engine lists what each proven connection is', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  before(async () => {
    eng = await startEngine();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('engine::workers::list shows `supervised` only for connections that presented a secret of this run', async () => {
    const proven = pool.make('math-worker', { runSecret: eng.engine.run.issue({ kind: 'instance', worker: 'math-worker', replica: 0 }) });
    const claimed = pool.make('math-worker');
    await proven.ready();
    await claimed.ready();
    await eventually(async () => {
      const list = (await proven.trigger({ function_id: 'engine::workers::list' })) as { workers: Array<{ worker_id: string; supervised: unknown }> };
      const byId = new Map(list.workers.map((x) => [x.worker_id, x.supervised]));
      assert.deepEqual(byId.get(proven.workerId!), { worker: 'math-worker', replica: 0 });
      assert.equal(byId.get(claimed.workerId!), null);
    });
  });
});
