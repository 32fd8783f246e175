/**
 * `npm run bench`: one routed call (caller → server → callee → back), each a separate process on
 * loopback, measured in one interleaved run against two `ws` relays (bench/relay.ts: plain, and
 * coalescing writes per event-loop turn). Two comparisons (issue 21):
 *
 *   end to end    what a user gets: the relays driven by minimal raw-`ws` caller and callee programs
 *                 (one JSON message per call each way, no SDK: interleaved-caller.ts, raw-callee.ts),
 *                 svc driven by svc-sdk caller and callee at default options (tracing and implicit
 *                 context on). The acceptance rows compare these.
 *   server only   svc-sdk caller and callee on every server: what the server alone costs. svc's
 *                 row is the same target as end to end.
 *
 * Points: 1, 64 and 256 calls in flight on one caller connection to one callee, and 4×2: 4 caller
 * connections with 64 in flight each to `bench::add2`, served by 2 callee replicas. CPU time per
 * call of each process (caller, server, callees) from /proc over the measured slices.
 *
 * Each round starts every target (server + 2 callee processes) and one caller
 * (bench/interleaved-caller.ts) that measures them in alternating quarter-second slices, so every
 * target runs under the same machine conditions. Before anything is measured each target gets a
 * burst of 20,000 calls per function (V8 has then optimised every process's call path) and a
 * warm-up at each point. The median of the rounds is shown. Why (the VM's drift, JIT warm-up):
 * interleaved-caller.ts and bench/RESULTS.md, 2026-11-22, 3035bb7. The V8 optimisation probes
 * (jit-probes.ts) run first: a call path that deoptimised at a rare branch would measure V8
 * recompiling it.
 *
 *   npm run bench                     5 rounds, 0.5 s warm-up + 2 s measured per target and point (~6 min)
 *   npm run bench -- --quick          1 round, 0.3 s + 1 s (~1.5 min)
 *   npm run bench -- --rounds 7 --warmup 1000 --measure 4000 --json out.json
 */
import { writeFileSync } from 'node:fs';
import { fmt, load, machine, median, runMain, startNode, UsageError, type Proc } from './harness.js';
import type { PointSpec, TargetSpec } from './interleaved-caller.js';
import { checkJitProbes } from './jit-probes.js';

interface Target {
  key: string;
  label: string;
  server: [script: string, args: string[]];
  /** Callee script (both replicas) and the client the caller uses. */
  callee: string;
  client: TargetSpec['client'];
  comparison: 'end to end' | 'server only';
}
const TARGETS: Target[] = [
  { key: 'plain-raw', label: 'ws relay (plain), raw ws clients', server: ['relay.js', ['plain']], callee: 'raw-callee.js', client: 'raw', comparison: 'end to end' },
  { key: 'coalescing-raw', label: 'ws relay (coalescing), raw ws clients', server: ['relay.js', ['coalescing']], callee: 'raw-callee.js', client: 'raw', comparison: 'end to end' },
  { key: 'svc', label: 'svc (engine + svc-sdk at defaults)', server: ['engine.js', []], callee: 'callee.js', client: 'sdk', comparison: 'end to end' },
  { key: 'plain-sdk', label: 'ws relay (plain), svc-sdk clients', server: ['relay.js', ['plain']], callee: 'callee.js', client: 'sdk', comparison: 'server only' },
  { key: 'coalescing-sdk', label: 'ws relay (coalescing), svc-sdk clients', server: ['relay.js', ['coalescing']], callee: 'callee.js', client: 'sdk', comparison: 'server only' },
];
const POINTS: PointSpec[] = [
  { name: '1', inFlight: 1, connections: 1, functionId: 'bench::add' },
  { name: '64', inFlight: 64, connections: 1, functionId: 'bench::add' },
  { name: '256', inFlight: 256, connections: 1, functionId: 'bench::add' },
  { name: '4×2', inFlight: 64, connections: 4, functionId: 'bench::add2' },
];
const POINT_LABEL: Record<string, string> = { '1': '1', '64': '64', '256': '256', '4×2': '4×64 (4 conns, 2 callees)' };
/** Length of one target's turn (interleaved-caller.ts). */
const SLICE_MS = 250;
/** Calls at 64 in flight to each target and function before its warm-ups (interleaved-caller.ts: why). */
const WARM_BURST_CALLS = 20_000;

interface Cell {
  throughput: number;
  p50_us: number;
  p99_us: number;
  calls: number;
  /** CPU time per call in the measured slices (µs), from /proc; callee: both replicas. */
  server_cpu_us: number;
  callee_cpu_us: number;
  caller_cpu_us: number;
}

function parseArgs(argv: string[]): { rounds: number; warmupMs: number; measureMs: number; json?: string } {
  const quick = argv.includes('--quick');
  const o: { rounds: number; warmupMs: number; measureMs: number; json?: string } = quick ? { rounds: 1, warmupMs: 300, measureMs: 1000 } : { rounds: 5, warmupMs: 500, measureMs: 2000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    const num = (): number => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${a} needs a positive number, got ${v ?? 'nothing'}`);
      i++;
      return n;
    };
    if (a === '--quick') continue;
    else if (a === '--rounds') o.rounds = Math.round(num());
    else if (a === '--warmup') o.warmupMs = num();
    else if (a === '--measure') o.measureMs = num();
    else if (a === '--json') {
      if (!v) throw new UsageError('--json needs a file name');
      o.json = v;
      i++;
    } else throw new UsageError(`unknown argument ${a} (known: --quick, --rounds N, --warmup MS, --measure MS, --json FILE)`);
  }
  return o;
}

/** One round: every target (server, callee replica A serving both functions, replica B serving bench::add2) and one interleaved caller. */
async function runRound(o: { warmupMs: number; measureMs: number }): Promise<Map<string, Cell>> {
  const procs: Proc[] = [];
  try {
    const targets: TargetSpec[] = [];
    for (const t of TARGETS) {
      const server = startNode(...t.server);
      procs.push(server);
      const url = await server.line('READY ', 10_000);
      const a = startNode(t.callee, [url, 'bench::add', 'bench::add2']);
      const b = startNode(t.callee, [url, 'bench::add2']);
      procs.push(a, b);
      await a.line('READY', 15_000);
      await b.line('READY', 15_000);
      targets.push({ key: t.key, url, client: t.client, pids: [server, a, b].map((p) => p.child.pid ?? -1) });
    }
    const slices = Math.max(1, Math.round(o.measureMs / SLICE_MS));
    const caller = startNode('interleaved-caller.js', [JSON.stringify({ targets, points: POINTS, burstCalls: WARM_BURST_CALLS, warmupMs: o.warmupMs, sliceMs: SLICE_MS, slices })]);
    procs.push(caller);
    const budget = 120_000 + POINTS.length * TARGETS.length * (o.warmupMs + slices * SLICE_MS) * 2;
    const rows = JSON.parse(await caller.line('RESULTS ', budget)) as Array<Cell & { target: string; point: string }>;
    return new Map(rows.map((r) => [`${r.target}@${r.point}`, r]));
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  process.stdout.write(
    `svc bench: one routed call, caller → server → callee → caller, separate processes on loopback\n` +
      `machine: ${machine()}\n` +
      `${o.rounds} round(s) × ${TARGETS.length * POINTS.length} cells; per target a ${fmt(WARM_BURST_CALLS)}-call burst per function, then per point ${o.warmupMs} ms warm-up + ${o.measureMs} ms measured in ${SLICE_MS} ms slices taking turns; median of rounds\n` +
      (process.env.SVC_BENCH_ENGINE_OPTIONS ? `engine options: ${process.env.SVC_BENCH_ENGINE_OPTIONS}\n` : '') +
      '\n',
  );
  // A call path that deoptimises at a rare branch would measure V8 recompiling it: probe first.
  checkJitProbes();
  // Other work on the machine shows up as noise; the load average says how much there was.
  const loadBefore = load();
  process.stdout.write(`\nload average before: ${loadBefore}\n`);
  const samples = new Map<string, Cell[]>();
  const key = (t: Target, p: string): string => `${t.key}@${p}`;
  for (let round = 0; round < o.rounds; round++) {
    const cells = await runRound(o);
    for (const p of POINTS) {
      for (const t of TARGETS) {
        const r = cells.get(key(t, p.name));
        if (!r) throw new Error(`round ${round + 1}: no result for ${t.label} at ${p.name}`);
        samples.set(key(t, p.name), [...(samples.get(key(t, p.name)) ?? []), r]);
        process.stdout.write(
          `  round ${round + 1} ${t.label.padEnd(40)} ${p.name.padStart(3)}: ${fmt(r.throughput).padStart(7)} calls/s  p50 ${fmt(r.p50_us).padStart(5)} µs  p99 ${fmt(r.p99_us).padStart(6)} µs  CPU µs/call ${fmt(r.caller_cpu_us, 1)} + ${fmt(r.server_cpu_us, 1)} + ${fmt(r.callee_cpu_us, 1)}\n`,
        );
      }
    }
    process.stdout.write(`  load average after round ${round + 1}: ${load()}\n`);
  }
  const loadAfter = load();
  process.stdout.write(`load average after: ${loadAfter}\n`);
  process.stdout.write(`\n${report(samples, o.rounds)}\n`);
  if (o.json) {
    const out = { date: new Date().toISOString(), machine: machine(), load_average: { before: loadBefore, after: loadAfter }, options: o, samples: Object.fromEntries(samples) };
    writeFileSync(o.json, JSON.stringify(out, null, 2) + '\n');
    process.stdout.write(`\nraw samples written to ${o.json}\n`);
  }
}

/** The tables: medians per target and point, then the acceptance rows with their verdicts and per-round ratios. */
function report(samples: Map<string, Cell[]>, rounds: number): string {
  const byKey = new Map(TARGETS.map((t) => [t.key, t]));
  const list = (t: string, p: string): Cell[] => samples.get(`${t}@${p}`) ?? [];
  const med = (t: string, p: string, f: keyof Cell): number => median(list(t, p).map((x) => x[f]));
  const total = (t: string, p: string): number => median(list(t, p).map((x) => x.caller_cpu_us + x.server_cpu_us + x.callee_cpu_us));
  const rows: string[] = [];
  for (const comparison of ['end to end', 'server only'] as const) {
    rows.push(`${comparison === 'end to end' ? 'End to end (what a user gets)' : 'Server only (svc-sdk caller and callee on every server)'}:`, '');
    rows.push('| target | in flight | calls/s | p50 µs | p99 µs | CPU µs/call: caller | server | callee | total |', '|---|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const p of POINTS) {
      for (const t of TARGETS.filter((x) => x.comparison === comparison || (comparison === 'server only' && x.key === 'svc'))) {
        rows.push(
          `| ${t.label} | ${POINT_LABEL[p.name]} | ${fmt(med(t.key, p.name, 'throughput'))} | ${fmt(med(t.key, p.name, 'p50_us'))} | ${fmt(med(t.key, p.name, 'p99_us'))} | ${fmt(med(t.key, p.name, 'caller_cpu_us'), 1)} | ${fmt(med(t.key, p.name, 'server_cpu_us'), 1)} | ${fmt(med(t.key, p.name, 'callee_cpu_us'), 1)} | ${fmt(total(t.key, p.name), 1)} |`,
        );
      }
    }
    rows.push('');
  }
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
  // The same ratio within each round (cells of one round ran in alternating slices), to show the spread.
  const perRound = (a: [string, string], b: [string, string], f: keyof Cell): string =>
    Array.from({ length: rounds }, (_, i) => (list(...a)[i]![f] / list(...b)[i]![f]).toFixed(2)).join(', ');
  const goals: Array<{ what: string; a: [string, string]; b: [string, string]; f: keyof Cell; op: '≥' | '≤'; goal: number }> = [
    { what: 'calls/s at 64, svc / coalescing relay raw', a: ['svc', '64'], b: ['coalescing-raw', '64'], f: 'throughput', op: '≥', goal: 1.0 },
    { what: 'calls/s at 256, svc / coalescing relay raw', a: ['svc', '256'], b: ['coalescing-raw', '256'], f: 'throughput', op: '≥', goal: 1.0 },
    { what: 'calls/s at 4×2, svc / coalescing relay raw', a: ['svc', '4×2'], b: ['coalescing-raw', '4×2'], f: 'throughput', op: '≥', goal: 1.0 },
    { what: 'p50 at 1, svc / plain relay raw', a: ['svc', '1'], b: ['plain-raw', '1'], f: 'p50_us', op: '≤', goal: 1.1 },
    { what: 'calls/s of svc, 256 / 64 in flight', a: ['svc', '256'], b: ['svc', '64'], f: 'throughput', op: '≥', goal: 1.0 },
    { what: 'server only: calls/s at 64, svc / coalescing relay (svc-sdk)', a: ['svc', '64'], b: ['coalescing-sdk', '64'], f: 'throughput', op: '≥', goal: 0.9 },
    { what: 'server only: p50 at 1, svc / plain relay (svc-sdk)', a: ['svc', '1'], b: ['plain-sdk', '1'], f: 'p50_us', op: '≤', goal: 1.15 },
  ];
  rows.push('Acceptance (issue 21; the server-only rows are issue 2\'s goals):', '', '| target | ratio of medians | goal | | per round |', '|---|---:|---:|---|---|');
  for (const g of goals) {
    if (!byKey.has(g.a[0]) || !byKey.has(g.b[0])) continue;
    const r = med(...g.a, g.f) / med(...g.b, g.f);
    rows.push(`| ${g.what} | ${r.toFixed(2)} | ${g.op} ${g.goal.toFixed(2)} | ${verdict(g.op === '≥' ? r >= g.goal : r <= g.goal)} | ${perRound(g.a, g.b, g.f)} |`);
  }
  return rows.join('\n');
}

runMain(main);
