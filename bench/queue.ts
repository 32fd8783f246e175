/**
 * `npm run bench:queue` (issue 19): durable jobs enqueued and completed per second with 64 outstanding,
 * svc-queue (Redis store, and embedded) against BullMQ doing the same work on the same Redis, in one
 * run; and the time from enqueue to the handler's start at low load (1 outstanding).
 *
 *   bullmq         bench/bullmq-client.js: a BullMQ Queue + Worker (ioredis) in one process → redis
 *   svc/redis      bench/queue-client.js → engine → svc-queue (Redis store, same redis-server) → engine → client
 *   svc/embedded   the same with svc-queue's embedded store (lmdb, fsync'd) in the system's temp dir
 *
 * The client both enqueues and runs the jobs (`add` two numbers); each lane enqueues a job, waits
 * until the handler has run it, and enqueues the next. The engine is bench/engine.js (default
 * options), svc-queue its real process entry. One redis-server (Debian's, no persistence) serves
 * the whole run. Cells interleave per round, order rotating; medians of the rounds; ratios inside
 * each round. Targets: svc ≥ 3× BullMQ on both stores at 64 outstanding; p50 enqueue → handler start
 * ≤ 2 ms at 1 outstanding.
 *
 *   npm run build && npm run bench:queue          3 rounds, 1 s warm-up + 3 s measured per cell (~1.5 min)
 *   npm run bench:queue -- --quick                1 round, 0.3 s + 1 s
 *   npm run bench:queue -- --memory [N]           svc-queue's memory with N (default 1,000,000) waiting jobs
 *   npm run bench:queue -- --store [steps]        each store alone: its CPU per job (bench/queue-store-loop.ts)
 *   npm run bench:queue -- --profile DIR [...]    one round of each cell at load with `node --cpu-prof` on every
 *                                                 node process (client, engine, svc-queue), profiles in DIR, and
 *                                                 the largest self times of each (bench/cpu-profile.ts)
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerWorker, TriggerAction } from 'svc-sdk';
import { HERE, ROOT, UsageError, cpuMicros, fmt, interleave, load, machine, median, parseRoundArgs, runMain, start, stopAll, type Proc } from './harness.js';
import { freePort } from '../test/helpers/util.js';
import { summary } from './cpu-profile.js';
import { embeddedStoreLoop, redisStoreLoop } from './queue-store-loop.js';

const TARGET_RATIO = 3;
const TARGET_START_P50_US = 2000;
const CELLS = ['bullmq', 'svc/redis', 'svc/embedded'] as const;
type CellKey = (typeof CELLS)[number];
type Mode = 'load' | 'idle';
const LABEL: Record<CellKey, string> = { bullmq: 'BullMQ (Queue + Worker, ioredis)', 'svc/redis': 'svc-queue, Redis store', 'svc/embedded': 'svc-queue, embedded store' };

interface Sample {
  throughput: number;
  p50_us: number;
  p99_us: number;
  start_p50_us: number;
  start_p99_us: number;
  calls: number;
  left: number;
  caller_cpu_us: number;
  engine_cpu_us: number;
  queue_cpu_us: number;
  redis_cpu_us: number;
}

interface Redis {
  proc: Proc;
  port: number;
}

async function startRedis(): Promise<Redis> {
  const port = await freePort();
  const proc = start('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  await proc.line(/Ready to accept connections/, 10_000).catch((e: Error) => {
    throw new Error(`redis-server did not start (install Debian's redis-server): ${e.message}`);
  });
  return { proc, port };
}

/** With --profile: where each node process of a cell writes its CPU profile. */
let profileDir: string | undefined;

/** `node` arguments that make the process `name` of cell `key` write a CPU profile (none without --profile). */
function profiled(key: string, name: string): string[] {
  if (profileDir === undefined) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${key.replace(/[^a-z0-9]+/gi, '-')}-${name}.cpuprofile`];
}

/** The engine and svc-queue for a svc cell; the caller stops them. */
async function startSvc(key: CellKey, redis: Redis, procs: Proc[], dataDir: string, queues: Record<string, unknown>): Promise<{ url: string; engine: Proc; queue: Proc }> {
  const engine = start(process.execPath, [...profiled(key, 'engine'), join(HERE, 'engine.js')]);
  procs.push(engine);
  const url = await engine.line('READY ', 10_000);
  const config =
    key === 'svc/redis'
      ? { store: 'redis', redis_url: `redis://127.0.0.1:${redis.port}`, redis_key_prefix: `bench-${Date.now()}-${Math.random()}`, queues }
      : { store: 'embedded', data_dir: dataDir, queues };
  const queue = start(process.execPath, [...profiled(key, 'svc-queue'), join(ROOT, 'dist', 'src', 'workers', 'queue', 'main.js')], {
    env: { ...process.env, SVC_URL: url, SVC_WORKER_CONFIG: JSON.stringify(config), SVC_LOG_ECHO: '0' },
  });
  procs.push(queue);
  await queue.line('svc-queue: connected', 15_000);
  return { url, engine, queue };
}

async function cell(key: CellKey, mode: Mode, redis: Redis, o: ReturnType<typeof parseRoundArgs>): Promise<Sample> {
  const procs: Proc[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-queue-'));
  const inFlight = mode === 'load' ? o.inFlight : 1;
  try {
    let client: Proc;
    let engine: Proc | undefined;
    let queue: Proc | undefined;
    const loop = [String(inFlight), String(o.warmupMs), String(o.measureMs)];
    if (key === 'bullmq') {
      client = start(process.execPath, [...profiled(key, 'client'), join(HERE, 'bullmq-client.js'), String(redis.port), ...loop]);
    } else {
      const svc = await startSvc(key, redis, procs, dataDir, { bench: { concurrency: Math.max(64, o.inFlight) } });
      engine = svc.engine;
      queue = svc.queue;
      client = start(process.execPath, [...profiled(key, 'client'), join(HERE, 'queue-client.js'), svc.url, ...loop]);
    }
    procs.push(client);
    await client.line('MEASURE_START', 30_000 + o.warmupMs);
    const cpu0 = [engine, queue, redis.proc].map((p) => cpuMicros(p?.child.pid));
    await client.line('MEASURE_END', 30_000 + o.measureMs);
    const cpu1 = [engine, queue, redis.proc].map((p) => cpuMicros(p?.child.pid));
    const r = JSON.parse(await client.line('RESULT ', 30_000)) as Omit<Sample, 'engine_cpu_us' | 'queue_cpu_us' | 'redis_cpu_us'>;
    const per = (i: number): number => (cpu1[i]! - cpu0[i]!) / r.calls;
    return { ...r, engine_cpu_us: per(0), queue_cpu_us: per(1), redis_cpu_us: per(2) };
  } finally {
    await stopAll(procs);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function throughputAndLatency(argv: string[]): Promise<void> {
  const o = parseRoundArgs(argv, { rounds: 3, warmupMs: 1000, measureMs: 3000, inFlight: 64 });
  process.stdout.write(
    `svc bench:queue: jobs enqueued and completed per second, ${o.inFlight} outstanding, and enqueue → handler start at 1 outstanding\n` +
      `machine: ${machine()}; embedded store in ${tmpdir()}; one redis-server for every cell\n` +
      `${o.rounds} round(s) × ${CELLS.length} cells × 2 loads, ${o.warmupMs} ms warm-up + ${o.measureMs} ms measured; median of rounds\n` +
      `load average before: ${load()}\n`,
  );
  const redis = await startRedis();
  try {
    const keys = CELLS.flatMap((k) => [`${k}@load`, `${k}@idle`] as const);
    const samples = await interleave(keys, o.rounds, (k) => cell(k.split('@')[0] as CellKey, k.split('@')[1] as Mode, redis, o), (k, round, r) =>
      process.stdout.write(
        `  round ${round + 1} ${k.padEnd(18)} ${fmt(r.throughput).padStart(7)} jobs/s  p50 ${fmt(r.p50_us).padStart(6)} µs  start p50 ${fmt(r.start_p50_us).padStart(6)} µs${r.left ? `  LEFT ${r.left}` : ''}\n`,
      ),
    );
    process.stdout.write(`load average after: ${load()}\n\n`);
    const med = (k: string, f: keyof Sample): number => median(samples.get(k as (typeof keys)[number])!.map((s) => s[f]));
    const cpu = (k: string, f: keyof Sample): string => (Number.isFinite(med(k, f)) ? fmt(med(k, f), 1) : '');
    const base = `bullmq@load`;
    const rows = [
      `| | jobs/s, ${o.inFlight} outstanding | × BullMQ | p50 / p99 enqueue → done µs | p50 / p99 enqueue → start µs, 1 outstanding | CPU µs/job at ${o.inFlight}: client | engine | svc-queue | redis | ratio per round |`,
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
      ...CELLS.map((c) => {
        const l = `${c}@load`;
        const i = `${c}@idle`;
        const perRound = samples.get(l as (typeof keys)[number])!.map((s, n) => (s.throughput / samples.get(base)![n]!.throughput).toFixed(2)).join(', ');
        return `| ${LABEL[c]} | ${fmt(med(l, 'throughput'))} | ${(med(l, 'throughput') / med(base, 'throughput')).toFixed(2)} | ${fmt(med(l, 'p50_us'))} / ${fmt(med(l, 'p99_us'))} | ${fmt(med(i, 'start_p50_us'))} / ${fmt(med(i, 'start_p99_us'))} | ${cpu(l, 'caller_cpu_us')} | ${cpu(l, 'engine_cpu_us')} | ${cpu(l, 'queue_cpu_us')} | ${cpu(l, 'redis_cpu_us')} | ${perRound} |`;
      }),
      '',
    ];
    const left = keys.reduce((a, k) => a + samples.get(k)!.reduce((b, s) => b + s.left, 0), 0);
    rows.push(`jobs not completed at the end of a cell: ${left}${left ? '  ← BUG' : ''}`);
    for (const c of ['svc/redis', 'svc/embedded'] as const) {
      const ratio = med(`${c}@load`, 'throughput') / med(base, 'throughput');
      rows.push(`${c} / BullMQ, jobs/s at ${o.inFlight} outstanding: ${ratio.toFixed(2)}× (target ≥ ${TARGET_RATIO}×): ${ratio >= TARGET_RATIO ? 'PASS' : 'MISS'}`);
      const p50 = med(`${c}@idle`, 'start_p50_us');
      rows.push(`${c} p50 enqueue → handler start at 1 outstanding: ${fmt(p50)} µs (target ≤ ${TARGET_START_P50_US} µs): ${p50 <= TARGET_START_P50_US ? 'PASS' : 'MISS'}`);
    }
    process.stdout.write(`${rows.join('\n')}\n`);
    if (left) process.exitCode = 1;
  } finally {
    await redis.proc.stop();
  }
}

/** RSS and anonymous (heap) memory of a process, in MiB, from /proc. */
function memoryOf(pid: number): { rss: number; anon: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024 };
}

/** svc-queue's memory before and after `n` jobs wait in its store (their function has no provider). */
async function memory(argv: string[]): Promise<void> {
  const n = argv[0] !== undefined ? Number(argv[0]) : 1_000_000;
  if (!(n > 0)) throw new UsageError(`--memory takes a number of jobs, got ${argv[0]}`);
  process.stdout.write(`svc bench:queue --memory: svc-queue's memory with ${fmt(n)} waiting jobs\nmachine: ${machine()}; load average ${load()}\n`);
  const redis = await startRedis();
  try {
    for (const key of ['svc/embedded', 'svc/redis'] as const) {
      const procs: Proc[] = [];
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-queue-mem-'));
      try {
        const { url, queue } = await startSvc(key, redis, procs, dataDir, { bench: { max_jobs: n + 10 } });
        const w = registerWorker(url, { workerName: 'bench-queue-filler', echoLogs: false, implicitContext: false });
        await w.ready(10_000);
        await w.trigger({ function_id: 'queue::list', payload: {}, timeoutMs: 10_000 });
        const before = memoryOf(queue.child.pid!);
        const t0 = Date.now();
        let sent = 0;
        const action = TriggerAction.Enqueue({ queue: 'bench' });
        const lane = async (): Promise<void> => {
          while (sent < n) {
            const i = sent++;
            await w.trigger({ function_id: 'bench::nobody', payload: { a: i, b: 1, note: 'a job waiting for a worker that is not there' }, action });
          }
        };
        await Promise.all(Array.from({ length: 256 }, lane));
        const secs = (Date.now() - t0) / 1000;
        // Let the garbage collector settle, then read again.
        await new Promise((r) => setTimeout(r, 3000));
        const after = memoryOf(queue.child.pid!);
        const stats = await w.trigger<{ waiting: number; bytes: number }>({ function_id: 'queue::stats', payload: { queue: 'bench' } });
        const file = join(dataDir, 'data.mdb');
        const disk = key === 'svc/embedded' && existsSync(file) ? `, store file ${fmt(statSync(file).size / 2 ** 20)} MiB` : '';
        process.stdout.write(
          `${key}: ${fmt(stats.waiting)} jobs waiting (${fmt(stats.bytes / 2 ** 20, 1)} MiB of payload${disk}), enqueued at ${fmt(n / secs)} jobs/s; ` +
            `svc-queue RSS ${fmt(before.rss, 1)} → ${fmt(after.rss, 1)} MiB (+${fmt(after.rss - before.rss, 1)}), anonymous (heap) ${fmt(before.anon, 1)} → ${fmt(after.anon, 1)} MiB (+${fmt(after.anon - before.anon, 1)})\n`,
        );
        await w.shutdown();
      } finally {
        await stopAll(procs);
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await redis.proc.stop();
  }
}

/** One round of each cell at load, every node process profiled; then where each one's CPU went. */
async function profile(argv: string[]): Promise<void> {
  const dir = argv[0];
  if (!dir || dir.startsWith('--')) throw new UsageError('--profile takes a directory for the profiles');
  profileDir = dir;
  const o = parseRoundArgs(argv.slice(1), { rounds: 1, warmupMs: 1000, measureMs: 3000, inFlight: 64 });
  process.stdout.write(`svc bench:queue --profile ${dir}: ${o.inFlight} outstanding, ${o.warmupMs} ms warm-up + ${o.measureMs} ms; machine: ${machine()}; load average ${load()}\n`);
  const redis = await startRedis();
  try {
    for (const key of CELLS) {
      const r = await cell(key, 'load', redis, o);
      process.stdout.write(`\n${key}: ${fmt(r.throughput)} jobs/s; CPU µs/job: client ${fmt(r.caller_cpu_us, 1)}, engine ${fmt(r.engine_cpu_us, 1)}, svc-queue ${fmt(r.queue_cpu_us, 1)}, redis ${fmt(r.redis_cpu_us, 1)}\n`);
      for (const name of ['client', 'engine', 'svc-queue']) {
        const file = join(dir, `${key.replace(/[^a-z0-9]+/gi, '-')}-${name}.cpuprofile`);
        if (existsSync(file)) process.stdout.write(`${summary(file, 12)}\n`);
      }
    }
  } finally {
    await redis.proc.stop();
  }
}

runMain(async () => {
  const argv = process.argv.slice(2);
  if (argv[0] === '--memory') await memory(argv.slice(1));
  else if (argv[0] === '--profile') await profile(argv.slice(1));
  else if (argv[0] === '--store') {
    const steps = argv[1] !== undefined ? Number(argv[1]) : 6000;
    if (!(steps > 0)) throw new UsageError(`--store takes a number of steps, got ${argv[1]}`);
    const redis = await startRedis();
    try {
      process.stdout.write(`machine: ${machine()}; load average ${load()}\n${await redisStoreLoop(redis.port, redis.proc.child.pid!, steps)}\n`);
      process.stdout.write(`${await embeddedStoreLoop(Math.min(steps, 2000))}\n`);
    } finally {
      await redis.proc.stop();
    }
  }
  else await throughputAndLatency(argv);
});
