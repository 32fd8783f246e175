/**
 * `npm run bench:python` (issue 3): throughput of a Python worker serving `math::add`, as a ratio to
 * a TypeScript worker serving the same function, measured in the same run.
 *
 * Every cell is the routed call of `npm run bench`, each side a separate process on loopback:
 * bench/caller.js (svc-sdk, closed loop, 64 calls in flight) → the svc engine (bench/engine.js,
 * default options) → the callee → back. Callees:
 *
 *   ts          bench/callee.js math::add            svc-sdk, a plain function     (the baseline)
 *   py-sync     bench/python_callee.py … sync        svc_sdk, a plain `def` (thread pool), as users write it
 *   py-async    bench/python_callee.py … async       svc_sdk, an `async def` (on the event loop)
 *   py-raw      bench/python_raw_callee.py           no SDK: one `websockets` connection, one JSON
 *                                                    message per call each way, behind the coalescing
 *                                                    relay (bench/relay.ts) instead of the engine
 *
 * Cells interleave per round, order rotating; the table shows medians of the rounds and the ratios
 * inside each round. Targets at 64 in flight: py-sync ≥ 0.5 × ts (issue 3); py-sync ≥ 0.8 × py-raw
 * (issue 21: a Python svc_sdk callee through svc against the minimal Python callee on the relay).
 *
 * Python: a venv at bench/out/python-venv (created with `pip install ./sdk/python` when missing; set
 * SVC_BENCH_PYTHON to use another interpreter), run with PYTHONPATH=sdk/python/src so the working
 * tree's SDK is what is measured.
 *
 *   npm run build && npm run bench:python            5 rounds, 1 s warm-up + 3 s measured (~1.5 min)
 *   npm run bench:python -- --quick                   1 round, 0.3 s + 1 s
 *   npm run bench:python -- --rounds 3 --in-flight 64
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { benchPython, HERE, ROOT, cpuMicros, fmt, interleave, load, machine, median, parseRoundArgs, runMain, start, startNode, stopAll, type Proc } from './harness.js';

const TARGET = 0.5;
const RAW_TARGET = 0.8;
const CALLEES = ['ts', 'py-sync', 'py-async', 'py-raw'] as const;
type Callee = (typeof CALLEES)[number];
const LABEL: Record<Callee, string> = {
  ts: 'TypeScript worker (svc-sdk)',
  'py-sync': 'Python worker, plain def (svc_sdk)',
  'py-async': 'Python worker, async def (svc_sdk)',
  'py-raw': 'Python websockets callee, coalescing relay',
};

interface Sample {
  throughput: number;
  p50_us: number;
  p99_us: number;
  calls: number;
  caller_cpu_us: number;
  engine_cpu_us: number;
  callee_cpu_us: number;
}

async function cell(callee: Callee, o: ReturnType<typeof parseRoundArgs>, py: string): Promise<Sample> {
  const procs: Proc[] = [];
  try {
    const engine = callee === 'py-raw' ? startNode('relay.js', ['coalescing']) : startNode('engine.js', []);
    procs.push(engine);
    const url = await engine.line('READY ', 10_000);
    const pyEnv = { env: { ...process.env, PYTHONPATH: join(ROOT, 'sdk', 'python', 'src') } };
    const server =
      callee === 'ts'
        ? startNode('callee.js', [url, 'math::add'])
        : callee === 'py-raw'
          ? start(py, [join(ROOT, 'bench', 'python_raw_callee.py'), url, 'math::add'], pyEnv)
          : start(py, [join(ROOT, 'bench', 'python_callee.py'), url, callee === 'py-sync' ? 'sync' : 'async'], pyEnv);
    procs.push(server);
    await server.line('READY', 20_000);
    const caller = startNode('caller.js', [url, String(o.inFlight), String(o.warmupMs), String(o.measureMs), 'math::add']);
    procs.push(caller);
    await caller.line('MEASURE_START', 15_000 + o.warmupMs);
    const e0 = cpuMicros(engine.child.pid);
    const c0 = cpuMicros(server.child.pid);
    await caller.line('MEASURE_END', 15_000 + o.measureMs);
    const e1 = cpuMicros(engine.child.pid);
    const c1 = cpuMicros(server.child.pid);
    const r = JSON.parse(await caller.line('RESULT ', 10_000)) as Omit<Sample, 'engine_cpu_us' | 'callee_cpu_us'>;
    return { ...r, engine_cpu_us: (e1 - e0) / r.calls, callee_cpu_us: (c1 - c0) / r.calls };
  } finally {
    await stopAll(procs);
  }
}

async function main(): Promise<void> {
  const o = parseRoundArgs(process.argv.slice(2), { rounds: 5, warmupMs: 1000, measureMs: 3000, inFlight: 64 });
  if (!existsSync(join(HERE, 'caller.js'))) throw new Error('run `npm run build` first');
  const py = benchPython();
  const pyVersion = spawnSync(
    py,
    ['-c', 'import sys, websockets; from svc_sdk import InitOptions; print(sys.version.split()[0], "websockets", websockets.__version__, "svc_sdk event loop", InitOptions(worker_name="x").event_loop)'],
    { encoding: 'utf8', env: { ...process.env, PYTHONPATH: join(ROOT, 'sdk', 'python', 'src') } },
  );
  if (pyVersion.status !== 0) throw new Error(`${py} cannot import websockets: ${pyVersion.stderr}`);
  process.stdout.write(
    `svc bench:python: math::add, caller (svc-sdk, ${o.inFlight} in flight) → engine (py-raw: coalescing relay) → callee, separate processes on loopback\n` +
      `machine: ${machine()}, Python ${pyVersion.stdout.trim()}\n` +
      `${o.rounds} round(s) × ${CALLEES.length} cells, ${o.warmupMs} ms warm-up + ${o.measureMs} ms measured; median of rounds\n` +
      `load average before: ${load()}\n`,
  );
  const samples = await interleave(CALLEES, o.rounds, (c) => cell(c, o, py), (c, round, r) =>
    process.stdout.write(`  round ${round + 1} ${c.padEnd(9)} ${fmt(r.throughput).padStart(7)} calls/s  p50 ${fmt(r.p50_us).padStart(6)} µs  p99 ${fmt(r.p99_us).padStart(6)} µs\n`),
  );
  process.stdout.write(`load average after: ${load()}\n\n`);

  const med = (c: Callee, f: keyof Sample): number => median(samples.get(c)!.map((s) => s[f]));
  const base = med('ts', 'throughput');
  const perRound = (c: Callee): string => samples.get(c)!.map((s, i) => (s.throughput / samples.get('ts')![i]!.throughput).toFixed(2)).join(', ');
  // CPU time of all three processes per call: what the call costs the machine, less sensitive to
  // other work on the cores than calls/s. Its inverse ratio is the throughput ratio to expect when
  // the cores are the limit.
  const total = (c: Callee): number => median(samples.get(c)!.map((s) => s.callee_cpu_us + s.engine_cpu_us + s.caller_cpu_us));
  const rows = [
    `| callee of math::add | calls/s | × TypeScript | p50 µs | p99 µs | CPU µs/call: callee | engine (relay for py-raw) | caller | total | × TypeScript by CPU | ratio per round |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...CALLEES.map(
      (c) =>
        `| ${LABEL[c]} | ${fmt(med(c, 'throughput'))} | ${(med(c, 'throughput') / base).toFixed(2)} | ${fmt(med(c, 'p50_us'))} | ${fmt(med(c, 'p99_us'))} | ${fmt(med(c, 'callee_cpu_us'), 1)} | ${fmt(med(c, 'engine_cpu_us'), 1)} | ${fmt(med(c, 'caller_cpu_us'), 1)} | ${fmt(total(c), 1)} | ${(total('ts') / total(c)).toFixed(2)} | ${perRound(c)} |`,
    ),
  ];
  const ratio = med('py-sync', 'throughput') / base;
  const raw = med('py-raw', 'throughput');
  const perRoundRaw = (c: Callee): string => samples.get(c)!.map((s, i) => (s.throughput / samples.get('py-raw')![i]!.throughput).toFixed(2)).join(', ');
  rows.push('', `Python (plain def) / TypeScript, calls/s at ${o.inFlight} in flight: ${ratio.toFixed(2)}× (target ≥ ${TARGET}×): ${ratio >= TARGET ? 'PASS' : 'MISS'}`);
  for (const c of ['py-sync', 'py-async'] as const) {
    const r = med(c, 'throughput') / raw;
    rows.push(
      `${LABEL[c]} through svc / Python websockets callee on the coalescing relay, calls/s at ${o.inFlight} in flight: ${r.toFixed(2)}× (target ≥ ${RAW_TARGET}×): ${r >= RAW_TARGET ? 'PASS' : 'MISS'} (per round ${perRoundRaw(c)})`,
    );
  }
  process.stdout.write(`${rows.join('\n')}\n`);
}

runMain(main);
