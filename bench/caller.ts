/**
 * The caller of the benchmark: an ordinary SDK worker running a closed loop of `bench::add` calls
 * with a fixed number in flight. Each lane awaits its call and issues the next one at once.
 *
 *   node dist/bench/caller.js <url> <in-flight> <warmup-ms> <measure-ms> [function-id]
 *
 * `function-id` (default `bench::add`) is any function that answers {a, b} with {c: a + b}
 * (bench/python-worker.ts calls `math::add` of a Python and a TypeScript worker).
 *
 * Prints `MEASURE_START` when the measured window opens, `MEASURE_END` when it closes (bench/run.ts
 * samples the other processes' CPU time at those two moments), then
 * `RESULT {"throughput", "p50_us", "p99_us", "calls", "caller_cpu_us"}` counting only calls completed
 * in the window.
 */
import { registerWorker } from 'svc-sdk';

const [url, inFlightArg, warmupArg, measureArg, functionIdArg] = process.argv.slice(2);
const functionId = functionIdArg ?? 'bench::add';
const inFlight = Number(inFlightArg);
const warmupMs = Number(warmupArg);
const measureMs = Number(measureArg);
if (!url || !(inFlight >= 1) || !(warmupMs >= 0) || !(measureMs > 0)) {
  process.stderr.write('usage: caller.js <ws-url> <in-flight> <warmup-ms> <measure-ms> [function-id]\n');
  process.exit(2);
}

const w = registerWorker(url, { workerName: 'bench-caller', echoLogs: false });
await w.ready(10_000);

const now = process.hrtime.bigint;
const start = now() + BigInt(warmupMs) * 1_000_000n;
const end = start + BigInt(measureMs) * 1_000_000n;
// Latencies in ns of calls completed inside [start, end). Sized for ~200k calls/s.
let lat = new Float64Array(Math.max(1024, Math.ceil((measureMs / 1000) * 200_000)));
let n = 0;

let cpuStart: NodeJS.CpuUsage | undefined;
const startTimer = setTimeout(() => {
  cpuStart = process.cpuUsage();
  process.stdout.write('MEASURE_START\n');
}, warmupMs);

async function lane(k: number): Promise<void> {
  let i = k;
  for (;;) {
    const t0 = now();
    const r = await w.trigger<{ c: number }>({ function_id: functionId, payload: { a: i, b: 1 } });
    const t1 = now();
    if (r.c !== i + 1) throw new Error(`${functionId}(${i}, 1) returned ${JSON.stringify(r)}`);
    i++;
    if (t1 >= end) return;
    if (t1 >= start) {
      if (n === lat.length) {
        const bigger = new Float64Array(lat.length * 2);
        bigger.set(lat);
        lat = bigger;
      }
      lat[n++] = Number(t1 - t0);
    }
  }
}

await Promise.all(Array.from({ length: inFlight }, (_, k) => lane(k * 1_000_000)));
clearTimeout(startTimer);
const cpu = process.cpuUsage(cpuStart);
process.stdout.write('MEASURE_END\n');

const sorted = lat.subarray(0, n).sort();
const pct = (p: number): number => (n === 0 ? NaN : sorted[Math.min(n - 1, Math.floor(p * n))]! / 1000);
const result = {
  throughput: Math.round(n / (measureMs / 1000)),
  p50_us: Math.round(pct(0.5)),
  p99_us: Math.round(pct(0.99)),
  calls: n,
  /** This process's CPU time (user + system) per call in the measured window. */
  caller_cpu_us: n === 0 ? NaN : (cpu.user + cpu.system) / n,
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
await w.shutdown();
process.exit(0);
