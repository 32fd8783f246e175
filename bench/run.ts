/**
 * `npm run bench`: one routed call (caller worker → server → callee worker → back), each a separate
 * process on loopback, at 1, 64 and 256 calls in flight, against three servers measured in the same
 * run: a plain `ws` relay, the same relay coalescing writes per event-loop turn, and the svc engine.
 *
 * Each round starts all three servers, each with its own callee, and one caller
 * (bench/interleaved-caller.ts) that measures them in alternating quarter-second slices, so every
 * server runs under the same machine conditions; a round's cells of one number in flight are
 * interleaved, not consecutive. Before anything is measured each server gets a burst of 20,000
 * calls (V8 has then optimised every process's call path) and a warm-up at each number in flight.
 * The median of the rounds is shown. Why (the VM's drift, JIT warm-up): interleaved-caller.ts and
 * bench/RESULTS.md, 2026-11-22, 3035bb7. The V8 optimisation probes (jit-probes.ts) run first: a
 * call path that deoptimised at a rare branch would measure V8 recompiling it.
 *
 *   npm run bench                     5 rounds, 0.5 s warm-up + 2 s measured per server and number in flight (~2.5 min)
 *   npm run bench -- --quick          1 round, 0.3 s + 1 s (~30 s)
 *   npm run bench -- --rounds 5 --warmup 1000 --measure 4000 --json out.json
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { fmt, median, runMain, startNode, UsageError, type Proc } from './harness.js';
import { checkJitProbes } from './jit-probes.js';


interface Target {
  key: string;
  label: string;
  script: string;
  args: string[];
}
const TARGETS: Target[] = [
  { key: 'plain', label: 'ws relay (plain)', script: 'relay.js', args: ['plain'] },
  { key: 'coalescing', label: 'ws relay (coalescing)', script: 'relay.js', args: ['coalescing'] },
  { key: 'svc', label: 'svc engine', script: 'engine.js', args: [] },
];
const CONCURRENCY = [1, 64, 256];
/** Length of one server's turn (interleaved-caller.ts). */
const SLICE_MS = 250;
/** Calls at 64 in flight to each server before its warm-ups (interleaved-caller.ts: why). */
const WARM_BURST_CALLS = 20_000;
const THROUGHPUT_TARGET = 0.9; // svc ≥ 0.9 × coalescing relay, calls/s at 64 in flight
const LATENCY_TARGET = 1.15; // svc ≤ 1.15 × plain relay, p50 at 1 in flight

interface Cell {
  throughput: number;
  p50_us: number;
  p99_us: number;
  calls: number;
  /** CPU time of the server process per call in the measured window (µs), from /proc. */
  server_cpu_us: number;
  callee_cpu_us: number;
  caller_cpu_us: number;
}

// ---- arguments ---------------------------------------------------------------------------------

function parseArgs(argv: string[]): { rounds: number; warmupMs: number; measureMs: number; json?: string } {
  const quick = argv.includes('--quick');
  const o: { rounds: number; warmupMs: number; measureMs: number; json?: string } = quick
    ? { rounds: 1, warmupMs: 300, measureMs: 1000 }
    : { rounds: 5, warmupMs: 500, measureMs: 2000 };
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

// ---- processes ---------------------------------------------------------------------------------



/**
 * One round: every server with its own callee, all running at once, and one interleaved caller
 * (bench/interleaved-caller.ts) that measures them in alternating slices.
 */
async function runRound(o: { warmupMs: number; measureMs: number }): Promise<Map<string, Cell>> {
  const procs: Proc[] = [];
  try {
    const servers: Array<{ key: string; url: string; pids: [number, number] }> = [];
    for (const t of TARGETS) {
      const server = startNode(t.script, t.args);
      procs.push(server);
      const url = await server.line('READY ', 10_000);
      const callee = startNode('callee.js', [url]);
      procs.push(callee);
      await callee.line('READY', 15_000);
      servers.push({ key: t.key, url, pids: [server.child.pid ?? -1, callee.child.pid ?? -1] });
    }
    const slices = Math.max(1, Math.round(o.measureMs / SLICE_MS));
    const caller = startNode('interleaved-caller.js', [JSON.stringify({ servers, burstCalls: WARM_BURST_CALLS, inFlight: CONCURRENCY, warmupMs: o.warmupMs, sliceMs: SLICE_MS, slices })]);
    procs.push(caller);
    // Bursts, then per number in flight a warm-up and the slices of every server.
    const budget = 60_000 + CONCURRENCY.length * TARGETS.length * (o.warmupMs + slices * SLICE_MS) * 2;
    const rows = JSON.parse(await caller.line('RESULTS ', budget)) as Array<Cell & { server: string; in_flight: number }>;
    return new Map(rows.map((r) => [`${r.server}@${r.in_flight}`, r]));
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

// ---- report ------------------------------------------------------------------------------------


function machine(): Record<string, string | number> {
  let model = cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) model = m[1]!.trim();
  } catch {
    /* not Linux */
  }
  return {
    nproc: availableParallelism(),
    cpu: model,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
}


async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const m = machine();
  const cells = TARGETS.length * CONCURRENCY.length * o.rounds;
  process.stdout.write(
    `svc bench: one routed call, caller → server → callee → caller, separate processes on loopback\n` +
      `machine: ${m.nproc} cores, ${m.cpu}, ${m.memory_gib} GiB, Linux ${m.kernel}, node ${m.node}\n` +
      `${o.rounds} round(s) × ${cells / o.rounds} cells; per server a ${fmt(WARM_BURST_CALLS)}-call burst, then per number in flight ${o.warmupMs} ms warm-up + ${o.measureMs} ms measured in ${SLICE_MS} ms slices taking turns; median of rounds\n` +
      (process.env.SVC_BENCH_ENGINE_OPTIONS ? `engine options: ${process.env.SVC_BENCH_ENGINE_OPTIONS}\n` : '') +
      '\n',
  );
  // A call path that deoptimises at a rare branch would measure V8 recompiling it: probe first.
  checkJitProbes();
  process.stdout.write('\n');
  // Other work on the machine shows up as noise; the load average says how much there was.
  const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
  const loadBefore = load();
  process.stdout.write(`load average before: ${loadBefore}\n`);
  const samples = new Map<string, Cell[]>();
  const key = (t: Target, c: number): string => `${t.key}@${c}`;
  for (let round = 0; round < o.rounds; round++) {
    const cells = await runRound(o);
    for (const c of CONCURRENCY) {
      for (const t of TARGETS) {
        const r = cells.get(key(t, c));
        if (!r) throw new Error(`round ${round + 1}: no result for ${t.label} at ${c} in flight`);
        const list = samples.get(key(t, c)) ?? [];
        list.push(r);
        samples.set(key(t, c), list);
        process.stdout.write(
          `  round ${round + 1} ${t.label.padEnd(22)} ${String(c).padStart(3)} in flight: ${fmt(r.throughput).padStart(7)} calls/s  p50 ${fmt(r.p50_us).padStart(5)} µs  p99 ${fmt(r.p99_us).padStart(6)} µs\n`,
        );
      }
    }
  }

  const loadAfter = load();
  process.stdout.write(`load average after: ${loadAfter}\n`);
  const med = (t: Target, c: number, f: keyof Cell): number => median((samples.get(key(t, c)) ?? []).map((x) => x[f]));
  const rows: string[] = [];
  rows.push('| server | in flight | calls/s | p50 µs | p99 µs | CPU µs/call: server | caller | callee |');
  rows.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of CONCURRENCY) {
    for (const t of TARGETS) {
      rows.push(
        `| ${t.label} | ${c} | ${fmt(med(t, c, 'throughput'))} | ${fmt(med(t, c, 'p50_us'))} | ${fmt(med(t, c, 'p99_us'))} | ${fmt(med(t, c, 'server_cpu_us'), 1)} | ${fmt(med(t, c, 'caller_cpu_us'), 1)} | ${fmt(med(t, c, 'callee_cpu_us'), 1)} |`,
      );
    }
  }
  const [plain, coalescing, svc] = TARGETS as [Target, Target, Target];
  const tputRatio = med(svc, 64, 'throughput') / med(coalescing, 64, 'throughput');
  const p50Ratio = med(svc, 1, 'p50_us') / med(plain, 1, 'p50_us');
  const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
  // The same ratios within each round (cells of one round ran back to back), to show the spread.
  const perRound = (num: Target, den: Target, c: number, f: keyof Cell): string =>
    Array.from({ length: o.rounds }, (_, i) => (samples.get(key(num, c))![i]![f] / samples.get(key(den, c))![i]![f]).toFixed(2)).join(', ');
  rows.push('');
  rows.push('| target | ratio of medians | goal | | per round |');
  rows.push('|---|---:|---:|---|---|');
  rows.push(
    `| calls/s at 64 in flight, svc / coalescing relay | ${tputRatio.toFixed(2)} | ≥ ${THROUGHPUT_TARGET} | ${verdict(tputRatio >= THROUGHPUT_TARGET)} | ${perRound(svc, coalescing, 64, 'throughput')} |`,
  );
  rows.push(`| p50 at 1 in flight, svc / plain relay | ${p50Ratio.toFixed(2)} | ≤ ${LATENCY_TARGET} | ${verdict(p50Ratio <= LATENCY_TARGET)} | ${perRound(svc, plain, 1, 'p50_us')} |`);
  process.stdout.write(`\n${rows.join('\n')}\n`);

  if (o.json) {
    const out = {
      date: new Date().toISOString(),
      machine: m,
      load_average: { before: loadBefore, after: loadAfter },
      options: o,
      samples: Object.fromEntries(samples),
      ratios: { throughput_64_svc_over_coalescing: tputRatio, p50_1_svc_over_plain: p50Ratio },
    };
    writeFileSync(o.json, JSON.stringify(out, null, 2) + '\n');
    process.stdout.write(`\nraw samples written to ${o.json}\n`);
  }
}

runMain(main);
