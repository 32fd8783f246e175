/**
 * `npm run bench:state` (issue 4): `state::update` increments per second through the engine, with
 * svc-state on its embedded store and on Redis, as a ratio to the plain routed call measured in the
 * same run.
 *
 * Each cell starts fresh processes on loopback and runs a closed loop with 64 calls in flight:
 *
 *   plain            bench/caller.js → engine → bench/callee.js (bench::add)                (the baseline)
 *   embedded/one     bench/state-caller.js → engine → svc-state, embedded (lmdb, fsync'd), one key
 *   embedded/many    the same, each of the 64 lanes on its own key
 *   redis/one        svc-state on Redis (a private redis-server, Debian defaults minus persistence), one key
 *   redis/many       the same, 64 keys
 *
 * The engine is bench/engine.js (the Engine class, default options); svc-state is its real process
 * entry (dist/src/workers/state/main.js, SVC_URL + SVC_WORKER_CONFIG), the embedded store in a fresh
 * temporary directory on the same disk as the system's temp dir. Cells interleave per round, order
 * rotating; medians of the rounds, ratio to `plain` inside each round. Target: embedded/one and
 * redis/one ≥ 0.6 × plain. The caller checks at the end that every acknowledged increment is stored.
 *
 *   npm run build && npm run bench:state          3 rounds, 1 s warm-up + 3 s measured (~1.5 min)
 *   npm run bench:state -- --quick                 1 round, 0.3 s + 1 s
 *   npm run bench:state -- --rounds 5 --in-flight 64
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, cpuMicros, fmt, interleave, load, machine, median, parseRoundArgs, runMain, start, startNode, stopAll, type Proc } from './harness.js';
import { freePort } from '../test/helpers/util.js';

const TARGET = 0.6;
const CELLS = ['plain', 'embedded/one', 'embedded/many', 'redis/one', 'redis/many'] as const;
type CellKey = (typeof CELLS)[number];
const LABEL: Record<CellKey, string> = {
  plain: 'plain routed call (bench::add)',
  'embedded/one': 'state::update, embedded, one key',
  'embedded/many': 'state::update, embedded, 64 keys',
  'redis/one': 'state::update, Redis, one key',
  'redis/many': 'state::update, Redis, 64 keys',
};

interface Sample {
  throughput: number;
  p50_us: number;
  p99_us: number;
  calls: number;
  caller_cpu_us: number;
  engine_cpu_us: number;
  /** bench/callee.js or svc-state. */
  callee_cpu_us: number;
  redis_cpu_us: number;
  lost: number;
}

async function cell(key: CellKey, o: ReturnType<typeof parseRoundArgs>): Promise<Sample> {
  const procs: Proc[] = [];
  let dataDir: string | undefined;
  try {
    let redis: Proc | undefined;
    let redisUrl = '';
    if (key.startsWith('redis/')) {
      const port = await freePort();
      redis = start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
      procs.push(redis);
      await redis.line(/Ready to accept connections/, 10_000).catch((e: Error) => {
        throw new Error(`redis-server did not start (install Debian's redis-server): ${e.message}`);
      });
      redisUrl = `redis://127.0.0.1:${port}`;
    }
    const engine = startNode('engine.js', []);
    procs.push(engine);
    const url = await engine.line('READY ', 10_000);
    let callee: Proc;
    let caller: Proc;
    const loop = [url, String(o.inFlight), String(o.warmupMs), String(o.measureMs)];
    if (key === 'plain') {
      callee = startNode('callee.js', [url]);
      procs.push(callee);
      await callee.line('READY', 15_000);
      caller = startNode('caller.js', loop);
    } else {
      let config: Record<string, unknown>;
      if (redis) config = { store: 'redis', redis_url: redisUrl };
      else {
        dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-state-'));
        config = { store: 'embedded', data_dir: dataDir };
      }
      callee = start(process.execPath, [join(ROOT, 'dist', 'src', 'workers', 'state', 'main.js')], {
        env: { ...process.env, SVC_URL: url, SVC_WORKER_CONFIG: JSON.stringify(config) },
      });
      procs.push(callee);
      await callee.line('svc-state: connected', 15_000);
      caller = startNode('state-caller.js', [...loop, key.endsWith('/one') ? 'one' : 'many']);
    }
    procs.push(caller);
    await caller.line('MEASURE_START', 30_000 + o.warmupMs);
    const e0 = cpuMicros(engine.child.pid);
    const c0 = cpuMicros(callee.child.pid);
    const r0 = cpuMicros(redis?.child.pid);
    await caller.line('MEASURE_END', 15_000 + o.measureMs);
    const e1 = cpuMicros(engine.child.pid);
    const c1 = cpuMicros(callee.child.pid);
    const r1 = cpuMicros(redis?.child.pid);
    const r = JSON.parse(await caller.line('RESULT ', 30_000)) as { throughput: number; p50_us: number; p99_us: number; calls: number; caller_cpu_us: number; lost?: number };
    return { ...r, lost: r.lost ?? 0, engine_cpu_us: (e1 - e0) / r.calls, callee_cpu_us: (c1 - c0) / r.calls, redis_cpu_us: (r1 - r0) / r.calls };
  } finally {
    await stopAll(procs);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const o = parseRoundArgs(process.argv.slice(2), { rounds: 3, warmupMs: 1000, measureMs: 3000, inFlight: 64 });
  process.stdout.write(
    `svc bench:state: state::update {increment by 1} through the engine vs the plain routed call, ${o.inFlight} in flight, separate processes on loopback\n` +
      `machine: ${machine()}; embedded store in ${tmpdir()}\n` +
      `${o.rounds} round(s) × ${CELLS.length} cells, ${o.warmupMs} ms warm-up + ${o.measureMs} ms measured; median of rounds\n` +
      `load average before: ${load()}\n`,
  );
  const samples = await interleave(CELLS, o.rounds, (k) => cell(k, o), (k, round, r) =>
    process.stdout.write(`  round ${round + 1} ${k.padEnd(13)} ${fmt(r.throughput).padStart(7)} calls/s  p50 ${fmt(r.p50_us).padStart(6)} µs  p99 ${fmt(r.p99_us).padStart(6)} µs${r.lost ? `  LOST ${r.lost}` : ''}\n`),
  );
  process.stdout.write(`load average after: ${load()}\n\n`);

  const med = (k: CellKey, f: keyof Sample): number => median(samples.get(k)!.map((s) => s[f]));
  const base = med('plain', 'throughput');
  const perRound = (k: CellKey): string => samples.get(k)!.map((s, i) => (s.throughput / samples.get('plain')![i]!.throughput).toFixed(2)).join(', ');
  // CPU time of all processes per call (less sensitive to other work on the cores than calls/s);
  // its inverse ratio is the throughput ratio to expect when the cores are the limit.
  const total = (k: CellKey): number =>
    median(samples.get(k)!.map((s) => s.callee_cpu_us + s.engine_cpu_us + s.caller_cpu_us + (Number.isFinite(s.redis_cpu_us) ? s.redis_cpu_us : 0)));
  const rows = [
    '| call | calls/s | × plain | p50 µs | p99 µs | CPU µs/call: callee / svc-state | engine | caller | redis | total | × plain by CPU | ratio per round |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...CELLS.map(
      (k) =>
        `| ${LABEL[k]} | ${fmt(med(k, 'throughput'))} | ${(med(k, 'throughput') / base).toFixed(2)} | ${fmt(med(k, 'p50_us'))} | ${fmt(med(k, 'p99_us'))} | ${fmt(med(k, 'callee_cpu_us'), 1)} | ${fmt(med(k, 'engine_cpu_us'), 1)} | ${fmt(med(k, 'caller_cpu_us'), 1)} | ${k.startsWith('redis') ? fmt(med(k, 'redis_cpu_us'), 1) : ''} | ${fmt(total(k), 1)} | ${(total('plain') / total(k)).toFixed(2)} | ${perRound(k)} |`,
    ),
    '',
  ];
  const lost = CELLS.reduce((a, k) => a + samples.get(k)!.reduce((b, s) => b + s.lost, 0), 0);
  rows.push(`acknowledged increments missing from the store: ${lost}${lost ? '  ← BUG' : ''}`);
  for (const k of ['embedded/one', 'redis/one'] as const) {
    const ratio = med(k, 'throughput') / base;
    rows.push(`${k} / plain, calls/s at ${o.inFlight} in flight: ${ratio.toFixed(2)}× (target ≥ ${TARGET}×): ${ratio >= TARGET ? 'PASS' : 'MISS'}`);
  }
  process.stdout.write(`${rows.join('\n')}\n`);
  if (lost) process.exitCode = 1;
}

runMain(main);
