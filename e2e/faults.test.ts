/**
 * Faults under load (issue 9), on the real quickstart run through the `svc` CLI as in
 * e2e/quickstart.test.ts: while a client keeps calls of `math::add` (and some of
 * `math::add_two_numbers`, through caller-worker) in flight, random workers (math-worker,
 * caller-worker, svc-state) are killed with SIGKILL every 1–2 s for ~20 s, and the engine is
 * restarted once in the middle. Then:
 *
 * - No call hangs: every call ends, with a result or an error, within its deadline plus a margin.
 * - No acknowledged state write is lost. Precisely: a call is *acknowledged* when its result
 *   reached the client; each one increments running_total by its c ≥ 1 exactly once in svc-state
 *   and returns the new total. So, with T0 the total before the load and F the total after it:
 *     (1) F ≥ T0 + Σ c over acknowledged calls (no acknowledged increment is missing),
 *     (2) the totals acknowledged are pairwise distinct and each ≤ F (a write that was acknowledged
 *         and then lost would let a later call reach the same total again, or leave F below it),
 *     (3) F ≤ T0 + Σ c over all calls made (nothing is applied twice or invented).
 *   Calls that ended in an error may or may not have applied their increment (the increment can
 *   land after the caller's deadline, or the answer can be lost with a killed worker): that is the
 *   slack between (1) and (3), and why exactness is not asserted.
 * - After the faults stop, calls succeed again within seconds.
 *
 * A supervised worker that exits 5 times within 60 s is left stopped (a crash loop,
 * docs/configuration.md); the test kills each worker at most 4 times so that recovery is the
 * supervisor's normal restart, not an operator's `svc worker restart`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvocationError, registerWorker, type Worker } from 'svc-sdk';
import { closedPort, EngineProcess, runSvc, tempDir, until } from './helpers/cli.js';

interface ListRow {
  name: string;
  pid: number | null;
  pids: number[];
  status: string;
  restarts: number;
}
interface Outcome {
  fn: string;
  c: number;
  start: number;
  ms: number;
  ok: boolean;
  total?: number;
  code?: string;
}

const DEADLINE_MS = 5000;
/** Time for a call's deadline to be noticed and its rejection to be delivered. */
const MARGIN_MS = 1500;
const FAULT_WINDOW_MS = 20_000;
const RECOVERY_MS = 20_000;
const CONCURRENCY = 6;
const VICTIMS = ['math-worker', 'caller-worker', 'svc-state'];
const MAX_KILLS_PER_WORKER = 4;

describe('faults under steady load: kill -9 workers, restart the engine', () => {
  const tmp = tempDir();
  const project = join(tmp.dir, 'qs');
  let engine: EngineProcess;
  let client: Worker;
  const seenPids = new Set<number>();

  const svc = (args: string[], timeoutMs = 30_000) => runSvc(args, { cwd: project, timeoutMs });
  const list = async (): Promise<ListRow[]> => {
    const r = await svc(['worker', 'list', '--json']);
    if (r.code !== 0) return [];
    const rows = JSON.parse(r.stdout) as ListRow[];
    for (const row of rows) for (const p of row.pids) seenPids.add(Number(p));
    return rows;
  };

  before(async () => {
    const created = await runSvc(['create', '--template', 'quickstart', '--directory', project], { cwd: tmp.dir });
    assert.equal(created.code, 0, created.stderr);
    const enginePort = await closedPort();
    const httpPort = await closedPort();
    const cfg = join(project, 'config.yaml');
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace(/port: 49134/, `port: ${enginePort}`));
    engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project });
    for (const args of [['svc-state'], ['svc-http', '--set', `port=${httpPort}`], ['./workers/math-worker'], ['./workers/caller-worker']]) {
      const r = await svc(['worker', 'add', ...args], 240_000);
      assert.equal(r.code, 0, `svc worker add ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    }
    client = registerWorker(engine.url, {
      workerName: 'fault-load',
      role: 'client',
      echoLogs: false,
      invocationTimeoutMs: DEADLINE_MS,
      reconnect: { initialDelayMs: 100, maxDelayMs: 500 },
    });
    await until('math::add_two_numbers to answer', async () => {
      try {
        await client.trigger({ function_id: 'math::add_two_numbers', payload: { a: 0, b: 0 } });
        return true;
      } catch {
        return false;
      }
    }, 60_000);
  });

  after(async () => {
    await client?.shutdown();
    if (engine) await engine.stop('SIGTERM');
    for (const p of seenPids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    tmp.remove();
  });

  test('no call hangs, no acknowledged write is lost, and service resumes within seconds', { timeout: 180_000 }, async () => {
    const total = async (): Promise<number> => Number(await client.trigger({ function_id: 'state::get', payload: { scope: 'math', key: 'running_total' } }));
    const t0 = await total();
    const outcomes: Outcome[] = [];
    let loadRunning = true;
    let seq = 0;

    const oneCall = async (): Promise<Outcome> => {
      const n = seq++;
      const c = 1 + (n % 3);
      const fn = n % 4 === 3 ? 'math::add_two_numbers' : 'math::add';
      const start = Date.now();
      try {
        const r = (await client.trigger({ function_id: fn, payload: { a: c, b: 0 }, timeoutMs: DEADLINE_MS })) as { c: number; running_total: number };
        assert.equal(r.c, c);
        return { fn, c, start, ms: Date.now() - start, ok: true, total: r.running_total };
      } catch (e) {
        return { fn, c, start, ms: Date.now() - start, ok: false, code: e instanceof InvocationError ? e.code : String(e) };
      }
    };
    const loops = Array.from({ length: CONCURRENCY }, async () => {
      while (loadRunning) {
        const o = await oneCall();
        outcomes.push(o);
        // A failing call often fails at once (function_not_found while a worker restarts): pace
        // the retries so that the load stays steady instead of spinning.
        if (!o.ok) await sleep(50);
      }
    });

    // ---- faults ----
    const kills = new Map<string, number>();
    const faultLog: string[] = [];
    const faultsStart = Date.now();
    let restarted = false;
    while (Date.now() - faultsStart < FAULT_WINDOW_MS) {
      // `svc worker list` itself takes ~1 s on two cores: with it, one fault every ~1.5–2.5 s.
      await sleep(300 + Math.random() * 1000);
      if (!restarted && Date.now() - faultsStart > FAULT_WINDOW_MS / 2) {
        restarted = true;
        const t = Date.now();
        const exit = await engine.stop('SIGTERM');
        assert.equal(exit.code, 0, `the engine's exit: ${engine.stderr}`);
        engine = await EngineProcess.start(['--config', 'config.yaml'], { cwd: project, timeoutMs: 20_000 });
        faultLog.push(`+${t - faultsStart} ms engine restarted (${Date.now() - t} ms)`);
        continue;
      }
      const rows = (await list()).filter((r) => VICTIMS.includes(r.name) && r.status === 'running' && r.pid && (kills.get(r.name) ?? 0) < MAX_KILLS_PER_WORKER);
      if (rows.length === 0) continue;
      const victim = rows[Math.floor(Math.random() * rows.length)]!;
      const pids = victim.pids.map(Number);
      const pid = pids[Math.floor(Math.random() * pids.length)]!;
      try {
        process.kill(pid, 'SIGKILL');
        kills.set(victim.name, (kills.get(victim.name) ?? 0) + 1);
        faultLog.push(`+${Date.now() - faultsStart} ms kill -9 ${victim.name} (pid ${pid})`);
      } catch {
        /* it exited meanwhile */
      }
    }
    const faultsEnd = Date.now();
    assert.ok(restarted, 'the engine was restarted');
    assert.ok([...kills.values()].reduce((a, b) => a + b, 0) >= 5, `too few kills: ${faultLog.join('; ')}`);

    // ---- recovery: 20 calls in a row succeed ----
    let streak = 0;
    let recoveredAt = 0;
    await until('calls to succeed again after the faults', async () => {
      const recent = outcomes.filter((o) => o.start >= faultsEnd);
      streak = 0;
      for (const o of recent) streak = o.ok ? streak + 1 : 0;
      if (streak >= 20 && !recoveredAt) recoveredAt = Date.now();
      return streak >= 20;
    }, RECOVERY_MS);
    loadRunning = false;
    await Promise.all(loops);

    const f = await total();
    const acked = outcomes.filter((o) => o.ok);
    const failed = outcomes.filter((o) => !o.ok);
    const codes = new Map<string, number>();
    for (const o of failed) codes.set(o.code!, (codes.get(o.code!) ?? 0) + 1);
    const slowest = Math.max(...outcomes.map((o) => o.ms));
    const ackedSum = acked.reduce((s, o) => s + o.c, 0);
    const allSum = outcomes.reduce((s, o) => s + o.c, 0);
    console.log(
      `faults: ${faultLog.join('; ')}\n` +
        `calls: ${outcomes.length} (${acked.length} ok, ${failed.length} failed: ${JSON.stringify(Object.fromEntries(codes))}); slowest ${slowest} ms; ` +
        `service back ${recoveredAt - faultsEnd} ms after the faults; running_total ${t0} → ${f} ` +
        `(acknowledged increments ${ackedSum}, all attempted ${allSum})`,
    );

    // No call hung.
    for (const o of outcomes) assert.ok(o.ms <= DEADLINE_MS + MARGIN_MS, `a call of ${o.fn} took ${o.ms} ms (deadline ${DEADLINE_MS} ms): ${o.code ?? 'ok'}`);
    // The load ran through the faults and some calls did fail (else the faults did not bite).
    assert.ok(acked.length > 100, `only ${acked.length} calls succeeded`);
    assert.ok(failed.length > 0, 'no call failed: the faults had no effect');
    assert.ok(acked.some((o) => o.start > faultsStart && o.start < faultsEnd), 'calls succeeded between the faults');

    // No acknowledged write lost: (1), (2), (3) of the header.
    assert.ok(f >= t0 + ackedSum, `final total ${f} < ${t0} + ${ackedSum} acknowledged`);
    const totals = acked.map((o) => o.total!);
    assert.equal(new Set(totals).size, totals.length, 'two acknowledged calls saw the same running_total: an acknowledged increment was lost');
    assert.ok(Math.max(...totals) <= f, `an acknowledged total ${Math.max(...totals)} is above the final ${f}`);
    assert.ok(f <= t0 + allSum, `final total ${f} > ${t0} + ${allSum} for every call made: an increment was applied twice`);

    // Every supervised worker is running again.
    const rows = await list();
    for (const name of VICTIMS) assert.equal(rows.find((r) => r.name === name)?.status, 'running', `${name}: ${JSON.stringify(rows.find((r) => r.name === name))}`);
  });
});
