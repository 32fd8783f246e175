/**
 * The quickstart end to end, through the `svc` CLI only, as a new user runs it (issue #6):
 * create the project, start the engine, add the four workers, call, kill, restart, stop.
 * The only departures from the README: free ports instead of 49134 and 3111, so the test can run
 * beside anything else on the machine, and engine.telemetry sending the spans and log lines to a
 * real OpenTelemetry Collector (issue 24: an HTTP request is one trace across every worker).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Collector } from '../test/helpers/otelcol.js';
import { alive, closedPort, EngineProcess, runSvc, tempDir, until, type WorkerListRow } from './helpers/cli.js';

type ListRow = WorkerListRow;

describe('quickstart, end to end through the CLI', () => {
  const tmp = tempDir();
  const project = join(tmp.dir, 'qs');
  let engine: EngineProcess;
  let httpPort = 0;
  let collector: Collector;
  const seenPids = new Set<number>();

  const svc = async (args: string[], timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    runSvc(args, { cwd: project, timeoutMs });
  const call = async (args: string[]): Promise<unknown> => {
    const r = await svc(['trigger', ...args]);
    assert.equal(r.code, 0, `svc trigger ${args.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const list = async (): Promise<ListRow[]> => {
    const r = await svc(['worker', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as ListRow[];
    for (const row of rows) for (const p of row.pids) seenPids.add(Number(p));
    return rows;
  };
  const post = async (a: number, b: number): Promise<{ status: number; type: string | null; body: { c: number; running_total: number } }> => {
    const res = await fetch(`http://127.0.0.1:${httpPort}/math/add-two-numbers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a, b }),
    });
    return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as { c: number; running_total: number } };
  };

  before(async () => {
    const created = await runSvc(['create', '--template', 'quickstart', '--directory', project], { cwd: tmp.dir });
    assert.equal(created.code, 0, created.stderr);
    const enginePort = await closedPort();
    httpPort = await closedPort();
    collector = await Collector.start();
    const cfg = join(project, 'config.yaml');
    const telemetry = `\n  telemetry:\n    endpoint: ${collector.httpEndpoint}\n    export_interval_ms: 200`;
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace(/port: 49134/, `port: ${enginePort}${telemetry}`));
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project });
  });

  after(async () => {
    if (engine) await engine.stop('SIGKILL');
    await collector?.stop();
    for (const p of seenPids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    tmp.remove();
  });

  test('1-2. add svc-state and svc-http; math::add is not found until math-worker registers, then answers', { timeout: 240_000 }, async () => {
    const state = await svc(['worker', 'add', 'svc-state']);
    assert.equal(state.code, 0, state.stderr);
    assert.match(state.stdout, /✓ added svc-state to config\.yaml/);
    assert.match(state.stdout, /svc-state auto-started \(pid \d+\)/);
    const http = await svc(['worker', 'add', 'svc-http', '--set', `port=${httpPort}`]);
    assert.equal(http.code, 0, http.stderr);
    assert.match(http.stdout, /svc-http auto-started \(pid \d+\)/);
    // Adding again does not duplicate the entry.
    assert.match((await svc(['worker', 'add', 'svc-state'])).stdout, /svc-state is already in config\.yaml/);
    assert.equal(readFileSync(join(project, 'config.yaml'), 'utf8').match(/name: svc-state/g)?.length, 1);

    const early = await svc(['trigger', 'math::add', 'a=2', 'b=3']);
    assert.notEqual(early.code, 0);
    assert.match(early.stderr, /function_not_found: Function math::add not found/);

    const math = await svc(['worker', 'add', './workers/math-worker'], 240_000);
    assert.equal(math.code, 0, math.stderr + math.stdout);
    assert.match(math.stdout, /installing dependencies of math-worker/);
    assert.match(math.stdout, /math-worker auto-started \(pid \d+\)/);
    const caller = await svc(['worker', 'add', './workers/caller-worker'], 240_000);
    assert.equal(caller.code, 0, caller.stderr + caller.stdout);
    assert.match(caller.stdout, /caller-worker auto-started \(pid \d+\)/);

    const first = await until('math::add to answer', async () => {
      const r = await svc(['trigger', 'math::add', 'a=2', 'b=3']);
      return r.code === 0 ? r.stdout : null;
    }, 20_000);
    assert.deepEqual(JSON.parse(first), { c: 5, running_total: 5 });
  });

  test('3. math::add_two_numbers through the caller-worker', async () => {
    await until('math::add_two_numbers to register', async () => (await svc(['trigger', 'engine::functions::info', 'function_id=math::add_two_numbers'])).code === 0, 20_000);
    assert.deepEqual(await call(['--function-id=math::add_two_numbers', '--payload={"a":1,"b":1}']), { c: 2, running_total: 7 });
  });

  test('4. the HTTP endpoint answers 200 JSON with c and running_total', async () => {
    const r = await until('POST /math/add-two-numbers to be routed', async () => {
      const res = await post(2, 3).catch(() => null);
      return res && res.status === 200 ? res : null;
    }, 20_000);
    assert.match(r.type ?? '', /^application\/json/);
    assert.deepEqual(r.body, { c: 5, running_total: 12 });
  });

  test('4b. that request is one trace in the OpenTelemetry Collector: svc-http → caller-worker → math-worker → svc-state, with math::add\'s log line', async () => {
    // The route's function (http::add_two_numbers on caller-worker) calls math::add_two_numbers,
    // which calls math::add on math-worker, which updates the total in svc-state.
    const chain = ['http::add_two_numbers', 'math::add_two_numbers', 'math::add', 'state::update'];
    const spans = await until('the request\'s trace to reach the collector', async () => {
      const root = collector.spans().find((s) => s.name === chain[0] && s.attributes['svc.caller.worker'] === 'svc-http');
      const trace = root ? collector.spans().filter((s) => s.traceId === root.traceId) : [];
      return trace.length >= chain.length ? trace : null;
    }, 20_000).catch((e: Error) => {
      const seen = collector.spans().map((s) => `${s.name} (${s.attributes['svc.caller.worker']} → ${s.attributes['svc.callee.worker']})`);
      throw new Error(`${e.message}; the collector has ${seen.length} span(s): ${seen.slice(0, 20).join(', ')}`);
    });
    assert.equal(spans.length, chain.length, `spans of the trace: ${spans.map((s) => s.name).join(', ')}`);
    const [root, ...rest] = chain.map((name) => {
      const s = spans.find((x) => x.name === name);
      assert.ok(s, `${name} in the trace: ${spans.map((x) => x.name).join(', ')}`);
      return s;
    });
    assert.equal(root!.parentId, '', 'svc-http\'s call starts the trace');
    // Each call is a child of the one that made it.
    let parent = root!;
    for (const s of rest) {
      assert.equal(s.parentId, parent.spanId, `${s.name}'s parent is ${parent.name}`);
      parent = s;
    }
    const workers = spans.flatMap((s) => [s.attributes['svc.caller.worker'], s.attributes['svc.callee.worker']]);
    for (const w of ['svc-http', 'caller-worker', 'math-worker', 'svc-state']) assert.ok(workers.includes(w), `${w} in the trace: ${workers.join(', ')}`);
    const add = spans.find((s) => s.name === 'math::add')!;
    const line = await until('math::add\'s log line to reach the collector', async () => collector.logs().find((l) => l.traceId === root!.traceId) ?? null, 20_000);
    assert.equal(line.body, 'adding a=2 and b=3');
    assert.equal(line.spanId, add.spanId, 'the line is under the span of the call it was logged in');
  });

  test('5. 200 concurrent HTTP requests raise the total by exactly the sum of their c', async () => {
    const before = (await call(['math::add', 'a=0', 'b=0'])) as { running_total: number };
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => post(i, 1)));
    for (const r of results) assert.equal(r.status, 200);
    const sum = results.reduce((s, r) => s + r.body.c, 0);
    assert.equal(sum, Array.from({ length: 200 }, (_, i) => i + 1).reduce((s, x) => s + x, 0));
    const after = (await call(['math::add', 'a=0', 'b=0'])) as { running_total: number };
    assert.equal(after.running_total, before.running_total + sum);
  });

  test('worker list shows every worker running with its functions; logs hold math::add\'s line', async () => {
    const rows = await list();
    assert.deepEqual(rows.map((r) => r.name).sort(), ['caller-worker', 'math-worker', 'svc-http', 'svc-state']);
    for (const r of rows) assert.equal(r.status, 'running', `${r.name}: ${r.status}`);
    assert.deepEqual(rows.find((r) => r.name === 'math-worker')?.functions, ['math::add']);
    assert.ok(rows.find((r) => r.name === 'caller-worker')?.functions.includes('math::add_two_numbers'));
    const logs = await svc(['worker', 'logs', 'math-worker', '--lines', '5000']);
    assert.match(logs.stdout, /adding a=2 and b=3/);
  });

  test('6. kill -9 of math-worker: it is restarted and callable again', async () => {
    const pid = Number((await list()).find((r) => r.name === 'math-worker')!.pid);
    assert.ok(alive(pid));
    process.kill(pid, 'SIGKILL');
    const row = await until('math-worker to be restarted', async () => {
      const r = (await list()).find((x) => x.name === 'math-worker');
      return r && r.status === 'running' && Number(r.pid) !== pid && r.restarts >= 1 ? r : null;
    }, 20_000);
    assert.ok(alive(Number(row.pid)));
    const again = await until('math::add after the restart', async () => {
      const r = await svc(['trigger', 'math::add', 'a=1', 'b=2']);
      return r.code === 0 ? (JSON.parse(r.stdout) as { c: number }) : null;
    }, 20_000);
    assert.equal(again.c, 3);
  });

  test('7. the engine restarted: the running total is still there', async () => {
    const before = (await call(['math::add', 'a=0', 'b=0'])) as { running_total: number };
    assert.equal((await engine.stop('SIGTERM')).code, 0);
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project });
    const after = await until('math::add after the engine restart', async () => {
      const r = await svc(['trigger', 'math::add', 'a=0', 'b=0']);
      return r.code === 0 ? (JSON.parse(r.stdout) as { running_total: number }) : null;
    }, 60_000);
    assert.equal(after.running_total, before.running_total);
  });

  test('8. stopping the engine leaves no worker process', async () => {
    const pids = (await list()).flatMap((r) => r.pids.map(Number));
    assert.equal(pids.length, 4);
    const exit = await engine.stop('SIGTERM');
    assert.equal(exit.code, 0);
    for (const p of seenPids) assert.equal(alive(p), false, `worker process ${p} outlived the engine`);
  });
});
