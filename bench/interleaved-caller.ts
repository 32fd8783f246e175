/**
 * The caller of bench/run.ts: clients for every target (a server with its callees), calling a
 * function that answers {a, b} with {c: a + b} in closed loops with a fixed number in flight, and
 * taking turns: the targets are measured in short alternating slices, never side by side.
 *
 *   node dist/bench/interleaved-caller.js '<spec JSON>'
 *
 * A target's client is `sdk` (svc-sdk `registerWorker` at default options, `trigger()`) or `raw`
 * (one `ws` connection, one JSON `invokefunction` out and one `invocationresult` back per call: what a
 * user writes without an SDK). A point is a number in flight per connection, a number of caller
 * connections and the function called (bench/run.ts: `bench::add2` has two callee replicas).
 *
 * spec: {targets: [{key, url, client, pids: [server pid, callee pids…]}], points: [{name, inFlight,
 * connections, functionId}], burstCalls, warmupMs, sliceMs, slices}. Per target first a burst of
 * `burstCalls` calls at 64 in flight; then per point, `warmupMs` on each target and `slices` slices
 * of `sliceMs` on each, the order of the targets rotating from slice to slice. Prints `PROGRESS
 * <point>` as each point is done, then one line `RESULTS [{"target", "point", "throughput", "p50_us",
 * "p99_us", "calls", "server_cpu_us", "callee_cpu_us", "caller_cpu_us"}, …]` (CPU time per call of
 * each process in the slices, from /proc; callee: all replicas).
 *
 * Why slices: this machine is a 2-core VM whose speed drifts by ±30 % over seconds (other tenants).
 * Cells measured one after another, seconds apart, compared servers under different conditions: the
 * same build gave 0.80–1.10 for the throughput ratio and 0.80–1.90 for the p50 ratio from one round
 * to the next. Slices of a quarter second, alternating, put every target under the same drift.
 * Only the processes of the target in its slice are busy; the others wait in epoll.
 *
 * Why the burst: at one call in flight a 0.5 s warm-up is ~1,500 calls, and the engine's call path
 * was still being compiled by V8's optimising tier 3.5 s after its first call (`node --trace-opt`),
 * while a relay's one handler is optimised within a second: the 1-in-flight cells measured JIT
 * warm-up, not a long-running daemon (bench/RESULTS.md, 2026-11-22, 3035bb7).
 */
import WebSocket from 'ws';
import { registerWorker } from 'svc-sdk';
import { cpuMicros } from './harness.js';

const BURST_IN_FLIGHT = 64;

export interface TargetSpec {
  key: string;
  url: string;
  client: 'sdk' | 'raw';
  pids: number[];
}
export interface PointSpec {
  name: string;
  inFlight: number;
  connections: number;
  functionId: string;
}
interface Spec {
  targets: TargetSpec[];
  points: PointSpec[];
  burstCalls: number;
  warmupMs: number;
  sliceMs: number;
  slices: number;
}

/** One caller connection: `call` resolves with c of {a, b: 1} → {c}. */
interface Client {
  call(functionId: string, a: number): Promise<number>;
  close(): Promise<void>;
}

async function sdkClient(url: string, name: string): Promise<Client> {
  const w = registerWorker(url, { workerName: name });
  await w.ready(10_000);
  return {
    call: async (function_id, a) => (await w.trigger<{ c: number }>({ function_id, payload: { a, b: 1 } })).c,
    close: () => w.shutdown(),
  };
}

/** The client a user writes with `ws` alone: ids from a counter, a map of pending calls. */
async function rawClient(url: string, prefix: string): Promise<Client> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const pending = new Map<string, (c: number) => void>();
  let next = 0;
  ws.on('message', (raw) => {
    const m = JSON.parse(raw.toString()) as { type?: string; invocation_id?: string; result?: { c: number }; error?: unknown };
    if (m.type !== 'invocationresult' || m.invocation_id === undefined) return;
    const resolve = pending.get(m.invocation_id);
    if (!resolve) return;
    pending.delete(m.invocation_id);
    if (m.error) throw new Error(`raw call failed: ${JSON.stringify(m.error)}`);
    resolve(m.result!.c);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return {
    call: (function_id, a) =>
      new Promise<number>((resolve) => {
        const invocation_id = `${prefix}${next++}`;
        pending.set(invocation_id, resolve);
        ws.send(JSON.stringify({ type: 'invokefunction', invocation_id, function_id, data: { a, b: 1 } }));
      }),
    close: async () => ws.close(),
  };
}

/** What one target accumulates over its slices at one point. */
class Tally {
  calls = 0;
  ms = 0;
  lat: number[] = [];
  serverCpu = 0;
  calleeCpu = 0;
  callerCpu = 0;
}

const now = (): number => performance.now();

async function call(c: Client, functionId: string, a: number): Promise<void> {
  const r = await c.call(functionId, a);
  if (r !== a + 1) throw new Error(`${functionId}(${a}, 1) returned ${r}`);
}

/** `inFlight` lanes on each of the clients calling until `ms` have passed; calls that end after that are not counted. */
async function closedLoop(clients: Client[], p: PointSpec, ms: number, lat: number[] | null): Promise<number> {
  const end = now() + ms;
  let n = 0;
  await Promise.all(
    clients.slice(0, p.connections).flatMap((c, k) =>
      Array.from({ length: p.inFlight }, async (_, lane) => {
        for (let i = 0; ; i++) {
          const t0 = now();
          await call(c, p.functionId, (k * p.inFlight + lane) * 1_000_000 + i);
          const t1 = now();
          if (t1 >= end) return;
          lat?.push(t1 - t0);
          n++;
        }
      }),
    ),
  );
  return n;
}

async function burst(c: Client, functionId: string, calls: number): Promise<void> {
  let issued = 0;
  await Promise.all(
    Array.from({ length: BURST_IN_FLIGHT }, async () => {
      while (issued < calls) await call(c, functionId, issued++);
    }),
  );
}

const pct = (sorted: Float64Array, p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);
const sumCpu = (pids: number[]): number => pids.reduce((s, pid) => s + cpuMicros(pid), 0);

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as Spec;
  const connections = Math.max(...spec.points.map((p) => p.connections));
  const clients: Client[][] = [];
  for (const t of spec.targets) {
    const list: Client[] = [];
    for (let k = 0; k < connections; k++) list.push(t.client === 'sdk' ? await sdkClient(t.url, `bench-caller-${t.key}-${k}`) : await rawClient(t.url, `${k}-`));
    clients.push(list);
  }
  for (const list of clients) for (const p of new Set(spec.points.map((x) => x.functionId))) for (const c of list) await burst(c, p, spec.burstCalls / connections);
  const results: unknown[] = [];
  for (const p of spec.points) {
    for (const list of clients) await closedLoop(list, p, spec.warmupMs, null);
    const tallies = spec.targets.map(() => new Tally());
    for (let slice = 0; slice < spec.slices; slice++) {
      for (let k = 0; k < clients.length; k++) {
        const j = (k + slice) % clients.length;
        const t = tallies[j]!;
        const [serverPid, ...calleePids] = spec.targets[j]!.pids;
        const s0 = cpuMicros(serverPid);
        const c0 = sumCpu(calleePids);
        const me = process.cpuUsage();
        t.calls += await closedLoop(clients[j]!, p, spec.sliceMs, t.lat);
        t.ms += spec.sliceMs;
        const mine = process.cpuUsage(me);
        t.serverCpu += cpuMicros(serverPid) - s0;
        t.calleeCpu += sumCpu(calleePids) - c0;
        t.callerCpu += mine.user + mine.system;
      }
    }
    spec.targets.forEach((s, j) => {
      const t = tallies[j]!;
      const sorted = Float64Array.from(t.lat).sort();
      results.push({
        target: s.key,
        point: p.name,
        throughput: Math.round((t.calls * 1000) / t.ms),
        p50_us: Math.round(pct(sorted, 0.5) * 1000),
        p99_us: Math.round(pct(sorted, 0.99) * 1000),
        calls: t.calls,
        server_cpu_us: t.serverCpu / t.calls,
        callee_cpu_us: t.calleeCpu / t.calls,
        caller_cpu_us: t.callerCpu / t.calls,
      });
    });
    process.stdout.write(`PROGRESS ${p.name}\n`);
  }
  process.stdout.write(`RESULTS ${JSON.stringify(results)}\n`);
  for (const list of clients) for (const c of list) await c.close();
}

await main();
process.exit(0);
