/**
 * `npm run bench:http` (issue 5): requests per second of an HTTP endpoint served through svc, as a
 * ratio to a plain express app doing the same addition in-process, measured in the same run.
 *
 * Load: autocannon (bench/http-load.js, its own process), 64 keep-alive connections, each sending
 * `POST /add {"a":2,"b":3}` back to back; every answer is checked to be `{"c":5}`. Servers, each
 * cell with fresh processes on loopback:
 *
 *   express        bench/express-baseline.js: express + express.json(), the addition in-process (the baseline)
 *   svc            svc-http (its real process entry, request_log on: the default, as a user runs it)
 *                  → engine (bench/engine.js, default options) → bench/http-worker.js (svc-sdk,
 *                  `bench::http_add` bound to POST /add) → back
 *   svc, no log    the same with svc-http's request_log off
 *
 * Cells interleave per round, order rotating; medians of the rounds, ratio to express inside each
 * round. Target: svc (request_log on) ≥ 0.5 × express.
 *
 *   npm run build && npm run bench:http            3 rounds, 1 s warm-up + 4 s measured (~1.5 min)
 *   npm run bench:http -- --quick                   1 round, 0.3 s + 1 s
 *   npm run bench:http -- --rounds 5 --in-flight 64 (connections)
 */
import { join } from 'node:path';
import { ROOT, cpuMicros, fmt, interleave, load, machine, median, parseRoundArgs, runMain, start, startNode, stopAll, type Proc } from './harness.js';

const TARGET = 0.5;
const CELLS = ['express', 'svc', 'svc-nolog'] as const;
type CellKey = (typeof CELLS)[number];
const LABEL: Record<CellKey, string> = {
  express: 'plain express app (in-process addition)',
  svc: 'svc-http → engine → worker (request_log on, default)',
  'svc-nolog': 'svc-http → engine → worker (request_log off)',
};

interface Sample {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  mismatches: number;
  load_cpu_us: number;
  /** express, or svc-http. */
  http_cpu_us: number;
  engine_cpu_us: number;
  worker_cpu_us: number;
}

/** Poll until POST /add answers 200 {"c":5}: the route is bound and served end to end. */
async function untilServed(base: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const r = await fetch(`${base}/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":2,"b":3}' });
      last = `${r.status} ${await r.text()}`;
      if (last === '200 {"c":5}') return;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`POST ${base}/add not served within ${timeoutMs} ms; last answer: ${last}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function cell(key: CellKey, o: ReturnType<typeof parseRoundArgs>): Promise<Sample> {
  const procs: Proc[] = [];
  try {
    let http: Proc;
    let engine: Proc | undefined;
    let worker: Proc | undefined;
    let base: string;
    if (key === 'express') {
      http = startNode('express-baseline.js', []);
      procs.push(http);
      base = await http.line('READY ', 10_000);
    } else {
      engine = startNode('engine.js', []);
      procs.push(engine);
      const url = await engine.line('READY ', 10_000);
      http = start(process.execPath, [join(ROOT, 'dist', 'src', 'workers', 'http', 'main.js')], {
        env: { ...process.env, SVC_URL: url, SVC_WORKER_CONFIG: JSON.stringify({ host: '127.0.0.1', port: 0, request_log: key === 'svc' }) },
      });
      procs.push(http);
      const listening = await http.line('svc-http listening on ', 15_000);
      base = listening.split(' ')[0]!;
      worker = startNode('http-worker.js', [url]);
      procs.push(worker);
      await worker.line('READY', 15_000);
    }
    await untilServed(base, 15_000);
    const loader = startNode('http-load.js', [`${base}/add`, String(o.inFlight), String(o.warmupMs), String(o.measureMs)]);
    procs.push(loader);
    await loader.line('MEASURE_START', 30_000 + o.warmupMs);
    const pids = [http, engine, worker].map((p) => p?.child.pid);
    const before = pids.map(cpuMicros);
    await loader.line('MEASURE_END', 30_000 + o.measureMs);
    const after = pids.map(cpuMicros);
    const r = JSON.parse(await loader.line('RESULT ', 10_000)) as Omit<Sample, 'http_cpu_us' | 'engine_cpu_us' | 'worker_cpu_us'>;
    const per = (i: number): number => (after[i]! - before[i]!) / r.requests;
    return { ...r, http_cpu_us: per(0), engine_cpu_us: per(1), worker_cpu_us: per(2) };
  } finally {
    await stopAll(procs);
  }
}

async function main(): Promise<void> {
  const o = parseRoundArgs(process.argv.slice(2), { rounds: 3, warmupMs: 1000, measureMs: 4000, inFlight: 64 });
  if (o.measureMs < 1000) throw new Error('--measure must be at least 1000 ms (autocannon samples per second)');
  process.stdout.write(
    `svc bench:http: POST /add {a, b} → {c: a + b}, autocannon with ${o.inFlight} connections, separate processes on loopback\n` +
      `machine: ${machine()}\n` +
      `${o.rounds} round(s) × ${CELLS.length} cells, ${o.warmupMs} ms warm-up + ${o.measureMs} ms measured; median of rounds\n` +
      `load average before: ${load()}\n`,
  );
  const samples = await interleave(CELLS, o.rounds, (k) => cell(k, o), (k, round, r) =>
    process.stdout.write(
      `  round ${round + 1} ${k.padEnd(9)} ${fmt(r.rps).padStart(7)} req/s  p50 ${fmt(r.p50_ms, 1).padStart(5)} ms  p99 ${fmt(r.p99_ms, 1).padStart(5)} ms` +
        `${r.non2xx || r.errors || r.mismatches ? `  non-2xx ${r.non2xx}, errors ${r.errors}, wrong bodies ${r.mismatches}` : ''}\n`,
    ),
  );
  process.stdout.write(`load average after: ${load()}\n\n`);

  const med = (k: CellKey, f: keyof Sample): number => median(samples.get(k)!.map((s) => s[f]));
  const base = med('express', 'rps');
  const perRound = (k: CellKey): string => samples.get(k)!.map((s, i) => (s.rps / samples.get('express')![i]!.rps).toFixed(2)).join(', ');
  // CPU time of all processes per request, autocannon's included (less sensitive to other work on
  // the cores than req/s); its inverse ratio is the throughput ratio to expect when the cores are the limit.
  const total = (k: CellKey): number =>
    median(samples.get(k)!.map((s) => s.http_cpu_us + s.load_cpu_us + (k === 'express' ? 0 : s.engine_cpu_us + s.worker_cpu_us)));
  const rows = [
    '| server | req/s | × express | p50 ms | p99 ms | CPU µs/request: express or svc-http | engine | worker | autocannon | total | × express by CPU | ratio per round |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...CELLS.map(
      (k) =>
        `| ${LABEL[k]} | ${fmt(med(k, 'rps'))} | ${(med(k, 'rps') / base).toFixed(2)} | ${fmt(med(k, 'p50_ms'), 1)} | ${fmt(med(k, 'p99_ms'), 1)} | ${fmt(med(k, 'http_cpu_us'), 1)} | ${k === 'express' ? '' : fmt(med(k, 'engine_cpu_us'), 1)} | ${k === 'express' ? '' : fmt(med(k, 'worker_cpu_us'), 1)} | ${fmt(med(k, 'load_cpu_us'), 1)} | ${fmt(total(k), 1)} | ${(total('express') / total(k)).toFixed(2)} | ${perRound(k)} |`,
    ),
    '',
  ];
  const bad = CELLS.reduce((a, k) => a + samples.get(k)!.reduce((b, s) => b + s.non2xx + s.errors + s.mismatches, 0), 0);
  rows.push(`non-2xx answers, connection errors and wrong bodies: ${bad}${bad ? '  ← the numbers above count only correct answers' : ''}`);
  const ratio = med('svc', 'rps') / base;
  rows.push(`svc (request_log on) / express, req/s at ${o.inFlight} connections: ${ratio.toFixed(2)}× (target ≥ ${TARGET}×): ${ratio >= TARGET ? 'PASS' : 'MISS'}`);
  process.stdout.write(`${rows.join('\n')}\n`);
}

runMain(main);
