/**
 * The caller of the benchmark: an ordinary SDK worker at default options running a closed loop of `bench::add` calls
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
import { closedLoop } from './closed-loop.js';

const [url, inFlightArg, warmupArg, measureArg, functionIdArg] = process.argv.slice(2);
const functionId = functionIdArg ?? 'bench::add';
const inFlight = Number(inFlightArg);
const warmupMs = Number(warmupArg);
const measureMs = Number(measureArg);
if (!url || !(inFlight >= 1) || !(warmupMs >= 0) || !(measureMs > 0)) {
  process.stderr.write('usage: caller.js <ws-url> <in-flight> <warmup-ms> <measure-ms> [function-id]\n');
  process.exit(2);
}

const w = registerWorker(url, { workerName: 'bench-caller' });
await w.ready(10_000);

const result = await closedLoop(inFlight, warmupMs, measureMs, async (lane, i) => {
  const a = lane * 1_000_000 + i;
  const r = await w.trigger<{ c: number }>({ function_id: functionId, payload: { a, b: 1 } });
  if (r.c !== a + 1) throw new Error(`${functionId}(${a}, 1) returned ${JSON.stringify(r)}`);
});
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
await w.shutdown();
process.exit(0);
