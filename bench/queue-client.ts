/**
 * The svc side of bench/queue.ts: one svc-sdk worker that both enqueues and runs the jobs, as a user's
 * service would: `bench::add` adds two numbers; each lane enqueues a job with
 * `TriggerAction.Enqueue({queue: 'bench'})`, waits until its handler has run, and enqueues the next.
 *
 *   node dist/bench/queue-client.js <engine-url> <in-flight> <warmup-ms> <measure-ms>
 *
 * Prints MEASURE_START / MEASURE_END around the measured window, then `RESULT {throughput, p50_us,
 * p99_us, calls, caller_cpu_us, start_p50_us, start_p99_us, left}`: latencies are from the enqueue
 * call to the end of the handler (p50/p99) and to its start (start_*); `left` is the number of jobs
 * svc-queue still holds a moment after the end (0: every job completed).
 */
import { registerWorker, TriggerAction } from 'svc-sdk';
import { closedLoop } from './closed-loop.js';
import { percentiles } from './queue-loop.js';

// Exit through process.exit so that `node --cpu-prof` writes its profile (bench:queue --profile).
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));

const [url, inFlightArg, warmupArg, measureArg] = process.argv.slice(2);
const inFlight = Number(inFlightArg);
if (!url || !(inFlight >= 1)) {
  process.stderr.write('usage: queue-client.js <ws-url> <in-flight> <warmup-ms> <measure-ms>\n');
  process.exit(2);
}

const w = registerWorker(url, { workerName: 'bench-queue-client', echoLogs: false, implicitContext: false });
const waiting = new Map<number, { t0: bigint; started: bigint; done: () => void }>();
const starts: number[] = [];
w.registerFunction('bench::add', (d: { a: number; b: number; k: number }) => {
  const j = waiting.get(d.k);
  if (j) {
    j.started = process.hrtime.bigint();
    waiting.delete(d.k);
    j.done();
  }
  return { c: d.a + d.b };
});
await w.ready(10_000);
for (const deadline = Date.now() + 15_000; ; ) {
  try {
    await w.trigger({ function_id: 'queue::list', payload: {}, timeoutMs: 1000 });
    break;
  } catch (e) {
    if (Date.now() > deadline) throw e;
    await new Promise((r) => setTimeout(r, 20));
  }
}

let next = 0;
let measuring = false;
setTimeout(() => (measuring = true), Number(warmupArg));
const action = TriggerAction.Enqueue({ queue: 'bench' });
const loop = await closedLoop(inFlight, Number(warmupArg), Number(measureArg), async () => {
  const k = next++;
  const t0 = process.hrtime.bigint();
  const ran = new Promise<void>((done) => waiting.set(k, { t0, started: 0n, done }));
  const entry = waiting.get(k)!;
  await w.trigger({ function_id: 'bench::add', payload: { a: k, b: 1, k }, action });
  await ran;
  if (measuring) starts.push(Number(entry.started - t0));
});

// Every job completed: svc-queue's counts come back to zero.
let left = -1;
for (let i = 0; i < 100 && left !== 0; i++) {
  left = (await w.trigger<{ jobs: number }>({ function_id: 'queue::stats', payload: { queue: 'bench' } })).jobs;
  if (left !== 0) await new Promise((r) => setTimeout(r, 50));
}
const start = percentiles(starts);
process.stdout.write(`RESULT ${JSON.stringify({ ...loop, start_p50_us: start.p50_us, start_p99_us: start.p99_us, left })}\n`);
await w.shutdown();
process.exit(0);
