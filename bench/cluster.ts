/**
 * `npm run bench:cluster`: cluster mode (docs/cluster.md). Engines run as their own processes,
 * sharing one private redis-server; callers and callees are the processes of `npm run bench`
 * (bench/caller.ts, bench/callee.ts). Measured in the same run, cells interleaved per round:
 *
 * - **same-engine**: caller and callee on engine A (cluster mode on), 64 calls in flight.
 * - **cross-engine**: caller on engine A, callee on engine B: every call crosses Redis twice.
 *   Target: at least 0.5× same-engine.
 * - **one engine**: one caller + callee pair on one engine.
 * - **two engines**: a caller + callee pair on each of two engines at once (every call stays on
 *   its engine; the engines share Redis). Aggregate calls/s; target at least 1.6× one engine on a
 *   machine with enough cores (each pair needs about three busy processes).
 *
 *   npm run bench:cluster                 3 rounds, 0.5 s warm-up + 2 s measured per cell
 *   npm run bench:cluster -- --quick      1 round, 0.3 s + 1 s
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { registerWorker } from 'svc-sdk';
import { cpuMicros, median, startNode, type Proc } from './harness.js';
import { startRedis } from '../test/workers/state/redis-server.js';

const IN_FLIGHT = 64;


async function startEngine(redisUrl: string, nodeId: string, prefix: string): Promise<{ url: string; proc: Proc }> {
  const proc = startNode('engine.js', [], { env: { ...process.env, SVC_BENCH_ENGINE_OPTIONS: JSON.stringify({ cluster: { redisUrl, nodeId, leaseMs: 3000, prefix } }) } });
  return { url: await proc.line('READY ', 10_000), proc };
}

/** Until `url`'s engine routes bench::add to a worker on `engine`. */
async function waitRoutable(url: string, engine: string): Promise<void> {
  const w = registerWorker(url, { workerName: 'bench-probe', role: 'client', echoLogs: false });
  try {
    await w.ready(10_000);
    const end = Date.now() + 10_000;
    for (;;) {
      try {
        const f = await w.trigger<{ engines: string[] }>({ function_id: 'engine::functions::info', payload: { function_id: 'bench::add' } });
        if (f.engines.includes(engine)) return;
      } catch {
        /* not yet registered */
      }
      if (Date.now() > end) throw new Error(`bench::add on ${engine} never became visible at ${url}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await w.shutdown();
  }
}


/** The pid of the redis-server listening on `port` (started by the test helper, which keeps it private). */
function redisPid(port: string): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // redis-server rewrites its title to "redis-server 127.0.0.1:<port>".
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.startsWith('redis-server') && cmd.includes(`:${port}`)) return Number(d);
    } catch {
      /* gone */
    }
  }
  return undefined;
}

/** CPU µs per call of the engines and Redis in the measured window of a single-pair cell. */
export interface CpuPerCall {
  a: number;
  b: number;
  redis: number;
}
let cpuPids: { a?: number; b?: number; redis?: number } = {};
let lastCpu: CpuPerCall | null = null;

interface Pair {
  callerUrl: string;
  calleeUrl: string;
  calleeNode: string;
}

/** Run caller/callee pairs at once; calls/s of each caller over the same measured window. */
async function runPairs(engines: Array<{ url: string; node: string }>, pairs: Pair[], warmupMs: number, measureMs: number): Promise<number[]> {
  const procs: Proc[] = [];
  try {
    for (const p of pairs) {
      const callee = startNode('callee.js', [p.calleeUrl]);
      procs.push(callee);
      await callee.line('READY', 15_000);
    }
    for (const p of pairs) await waitRoutable(p.callerUrl, p.calleeNode);
    const callers = pairs.map((p) => startNode('caller.js', [p.callerUrl, String(IN_FLIGHT), String(warmupMs), String(measureMs)]));
    procs.push(...callers);
    const sample = (): number[] => [cpuMicros(cpuPids.a), cpuMicros(cpuPids.b), cpuMicros(cpuPids.redis)];
    let c0: number[] = [];
    let c1: number[] = [];
    if (callers.length === 1) {
      await callers[0]!.line('MEASURE_START', 20_000 + warmupMs);
      c0 = sample();
      await callers[0]!.line('MEASURE_END', 20_000 + measureMs);
      c1 = sample();
    }
    const results = await Promise.all(callers.map(async (c) => JSON.parse(await c.line('RESULT ', 20_000 + warmupMs + measureMs)) as { throughput: number; calls: number }));
    void engines;
    if (callers.length === 1) {
      const n = results[0]!.calls;
      lastCpu = { a: (c1[0]! - c0[0]!) / n, b: (c1[1]! - c0[1]!) / n, redis: (c1[2]! - c0[2]!) / n };
    }
    return results.map((r) => r.throughput);
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}


async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const rounds = quick ? 1 : 3;
  const warmupMs = quick ? 300 : 500;
  const measureMs = quick ? 1000 : 2000;
  const cores = availableParallelism();
  process.stdout.write(
    `svc bench:cluster: ${cores} cores (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${rounds} round(s), ${warmupMs} ms warm-up + ${measureMs} ms measured per cell, ${IN_FLIGHT} calls in flight per caller\n`,
  );
  process.stdout.write(`load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
  const redis = await startRedis();
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  const a = await startEngine(redis.url, 'a', prefix);
  const b = await startEngine(redis.url, 'b', prefix);
  cpuPids = { a: a.proc.child.pid, b: b.proc.child.pid, redis: redisPid(new URL(redis.url).port) };
  const cpu: Record<string, CpuPerCall[]> = { same: [], cross: [], one: [] };
  const engines = [
    { url: a.url, node: 'a' },
    { url: b.url, node: 'b' },
  ];
  const samples: Record<string, number[]> = { same: [], cross: [], one: [], two: [], cross_over_same: [], two_over_one: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      const cells: Array<[string, () => Promise<number>]> = [
        ['same', async () => (await runPairs(engines, [{ callerUrl: a.url, calleeUrl: a.url, calleeNode: 'a' }], warmupMs, measureMs))[0]!],
        ['cross', async () => (await runPairs(engines, [{ callerUrl: a.url, calleeUrl: b.url, calleeNode: 'b' }], warmupMs, measureMs))[0]!],
        ['one', async () => (await runPairs(engines, [{ callerUrl: b.url, calleeUrl: b.url, calleeNode: 'b' }], warmupMs, measureMs))[0]!],
        [
          'two',
          async () => {
            const r = await runPairs(
              engines,
              [
                { callerUrl: a.url, calleeUrl: a.url, calleeNode: 'a' },
                { callerUrl: b.url, calleeUrl: b.url, calleeNode: 'b' },
              ],
              warmupMs,
              measureMs,
            );
            return r[0]! + r[1]!;
          },
        ],
      ];
      const got: Record<string, number> = {};
      for (let k = 0; k < cells.length; k++) {
        const [name, run] = cells[(k + round) % cells.length]!;
        lastCpu = null;
        got[name] = await run();
        samples[name]!.push(got[name]!);
        if (lastCpu) cpu[name]!.push(lastCpu);
        process.stdout.write(`  round ${round + 1} ${name.padEnd(6)} ${Math.round(got[name]!).toLocaleString('en-US').padStart(8)} calls/s\n`);
      }
      samples.cross_over_same!.push(got.cross! / got.same!);
      samples.two_over_one!.push(got.two! / got.one!);
    }
  } finally {
    await Promise.allSettled([a.proc.stop(), b.proc.stop()]);
    await redis.stop();
  }
  process.stdout.write(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n\n`);
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
  const cpuOf = (k: string, f: keyof CpuPerCall): string => {
    const m = median(cpu[k]!.map((x) => x[f]).filter((x) => Number.isFinite(x)));
    return Number.isFinite(m) ? m.toFixed(1) : '—';
  };
  const ratio = (k: string): string => `${median(samples[k]!).toFixed(2)} (per round: ${samples[k]!.map((x) => x.toFixed(2)).join(', ')})`;
  process.stdout.write(
    [
      '| cell | calls/s (median) | CPU µs/call: engine A | engine B | redis |',
      '|---|---:|---:|---:|---:|',
      `| same-engine call (caller and callee on engine A) | ${fmt(median(samples.same!))} | ${cpuOf('same', 'a')} | ${cpuOf('same', 'b')} | ${cpuOf('same', 'redis')} |`,
      `| cross-engine call (caller on A, callee on B) | ${fmt(median(samples.cross!))} | ${cpuOf('cross', 'a')} | ${cpuOf('cross', 'b')} | ${cpuOf('cross', 'redis')} |`,
      `| one engine (B), one caller + callee pair | ${fmt(median(samples.one!))} | ${cpuOf('one', 'a')} | ${cpuOf('one', 'b')} | ${cpuOf('one', 'redis')} |`,
      `| two engines, a pair on each (aggregate) | ${fmt(median(samples.two!))} | | | |`,
      '',
      `cross-engine / same-engine: ${ratio('cross_over_same')}  (target ≥ 0.5)`,
      `two engines / one engine:   ${ratio('two_over_one')}  (target ≥ 1.6 with enough cores; this machine has ${cores})`,
      '',
    ].join('\n'),
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:cluster failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
