/**
 * The caller of bench/run.ts: one svc-sdk worker per server under test (each server has its own
 * callee), calling `bench::add` ({a, b} → {c: a + b}) in closed loops with a fixed number in flight,
 * and taking turns: the servers are measured in short alternating slices, never side by side.
 *
 *   node dist/bench/interleaved-caller.js '<spec JSON>'
 *
 * spec: {servers: [{key, url, pids: [server pid, callee pid]}], burstCalls, inFlight: [1, 64, 256],
 * warmupMs, sliceMs, slices}. Per server first a burst of `burstCalls` calls at 64 in flight; then per
 * number in flight, `warmupMs` on each server and `slices` slices of `sliceMs` on each, the order
 * of the servers rotating from slice to slice. Prints `PROGRESS <in flight>` as each number in
 * flight is done, then one line `RESULTS [{"server", "in_flight", "throughput", "p50_us", "p99_us",
 * "calls", "server_cpu_us", "callee_cpu_us", "caller_cpu_us"}, …]` (CPU time per call, from /proc).
 *
 * Why slices: this machine is a 2-core VM whose speed drifts by ±30 % over seconds (other tenants).
 * Cells measured one after another, seconds apart, compared servers under different conditions: the
 * same build gave 0.80–1.10 for the throughput ratio and 0.80–1.90 for the p50 ratio from one round
 * to the next. Slices of a quarter second, alternating, put every server under the same drift.
 * Only the processes of the server in its slice are busy; the others wait in epoll.
 *
 * Why the burst: at one call in flight a 0.5 s warm-up is ~1,500 calls, and the engine's call path
 * was still being compiled by V8's optimising tier 3.5 s after its first call (`node --trace-opt`),
 * while a relay's one handler is optimised within a second: the 1-in-flight cells measured JIT
 * warm-up, not a long-running daemon (bench/RESULTS.md, 2026-11-22, 3035bb7).
 */
import { registerWorker, type Worker } from 'svc-sdk';
import { cpuMicros } from './harness.js';

const BURST_IN_FLIGHT = 64;

interface Spec {
  servers: Array<{ key: string; url: string; pids: [number, number] }>;
  burstCalls: number;
  inFlight: number[];
  warmupMs: number;
  sliceMs: number;
  slices: number;
}

/** What one server accumulates over its slices at one number in flight. */
class Tally {
  calls = 0;
  ms = 0;
  lat: number[] = [];
  serverCpu = 0;
  calleeCpu = 0;
  callerCpu = 0;
}

const now = (): number => performance.now();

async function call(w: Worker, a: number): Promise<void> {
  const r = await w.trigger<{ c: number }>({ function_id: 'bench::add', payload: { a, b: 1 } });
  if (r.c !== a + 1) throw new Error(`bench::add(${a}, 1) returned ${JSON.stringify(r)}`);
}

/** `inFlight` lanes calling until `ms` have passed; calls that end after that are not counted. */
async function closedLoop(w: Worker, inFlight: number, ms: number, lat: number[] | null): Promise<number> {
  const end = now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, lane) => {
      for (let i = 0; ; i++) {
        const t0 = now();
        await call(w, lane * 1_000_000 + i);
        const t1 = now();
        if (t1 >= end) return;
        lat?.push(t1 - t0);
        n++;
      }
    }),
  );
  return n;
}

async function burst(w: Worker, calls: number): Promise<void> {
  let issued = 0;
  await Promise.all(
    Array.from({ length: BURST_IN_FLIGHT }, async () => {
      while (issued < calls) await call(w, issued++);
    }),
  );
}

const pct = (sorted: Float64Array, p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as Spec;
  const workers: Worker[] = [];
  for (const s of spec.servers) {
    const w = registerWorker(s.url, { workerName: `bench-caller-${s.key}`, echoLogs: false });
    await w.ready(10_000);
    workers.push(w);
  }
  for (const w of workers) await burst(w, spec.burstCalls);
  const results: unknown[] = [];
  for (const inFlight of spec.inFlight) {
    for (const w of workers) await closedLoop(w, inFlight, spec.warmupMs, null);
    const tallies = spec.servers.map(() => new Tally());
    for (let slice = 0; slice < spec.slices; slice++) {
      for (let k = 0; k < workers.length; k++) {
        const j = (k + slice) % workers.length;
        const t = tallies[j]!;
        const [serverPid, calleePid] = spec.servers[j]!.pids;
        const s0 = cpuMicros(serverPid);
        const c0 = cpuMicros(calleePid);
        const me = process.cpuUsage();
        t.calls += await closedLoop(workers[j]!, inFlight, spec.sliceMs, t.lat);
        t.ms += spec.sliceMs;
        const mine = process.cpuUsage(me);
        t.serverCpu += cpuMicros(serverPid) - s0;
        t.calleeCpu += cpuMicros(calleePid) - c0;
        t.callerCpu += mine.user + mine.system;
      }
    }
    spec.servers.forEach((s, j) => {
      const t = tallies[j]!;
      const sorted = Float64Array.from(t.lat).sort();
      const r = {
        server: s.key,
        in_flight: inFlight,
        throughput: Math.round((t.calls * 1000) / t.ms),
        p50_us: Math.round(pct(sorted, 0.5) * 1000),
        p99_us: Math.round(pct(sorted, 0.99) * 1000),
        calls: t.calls,
        server_cpu_us: t.serverCpu / t.calls,
        callee_cpu_us: t.calleeCpu / t.calls,
        caller_cpu_us: t.callerCpu / t.calls,
      };
      results.push(r);
    });
    process.stdout.write(`PROGRESS ${inFlight}\n`);
  }
  process.stdout.write(`RESULTS ${JSON.stringify(results)}\n`);
  for (const w of workers) await w.shutdown();
}

await main();
process.exit(0);
