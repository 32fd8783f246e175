/**
 * The caller of bench/state.ts: an ordinary svc-sdk worker running a closed loop of
 * `state::update {scope, key, ops: [{type: 'increment', by: 1}]}` calls through the engine, a fixed
 * number in flight (each lane awaits its call and issues the next at once), like bench/caller.ts.
 *
 *   node dist/bench/state-caller.js <url> <in-flight> <warmup-ms> <measure-ms> one|many
 *
 * `one`: every lane increments the same key (the hard case: every write conflicts on one row / one
 * Redis key); `many`: lane k increments its own key `k<k>`.
 *
 * Prints MEASURE_START / MEASURE_END around the measured window, then
 * `RESULT {"throughput", "p50_us", "p99_us", "calls", "caller_cpu_us", "lost"}`; `lost` is the
 * number of acknowledged increments missing from the stored counters at the end (must be 0).
 */
import { randomUUID } from 'node:crypto';
import { registerWorker } from 'svc-sdk';
import { closedLoop } from './closed-loop.js';

const [url, inFlightArg, warmupArg, measureArg, keys] = process.argv.slice(2);
const inFlight = Number(inFlightArg);
const warmupMs = Number(warmupArg);
const measureMs = Number(measureArg);
if (!url || !(inFlight >= 1) || !(warmupMs >= 0) || !(measureMs > 0) || (keys !== 'one' && keys !== 'many')) {
  process.stderr.write('usage: state-caller.js <ws-url> <in-flight> <warmup-ms> <measure-ms> one|many\n');
  process.exit(2);
}

const w = registerWorker(url, { workerName: 'bench-state-caller', echoLogs: false });
await w.ready(10_000);
// svc-state may still be registering its functions: wait until a call goes through.
for (const deadline = Date.now() + 15_000; ; ) {
  try {
    await w.trigger({ function_id: 'state::list_groups', payload: {}, timeoutMs: 1000 });
    break;
  } catch (e) {
    if (Date.now() > deadline) throw e;
    await new Promise((r) => setTimeout(r, 20));
  }
}
// A scope of its own, so a store reused across runs still starts every counter at zero.
const scope = `bench-${randomUUID()}`;
const keyOf = (lane: number): string => (keys === 'one' ? 'counter' : `k${lane}`);
const ops = [{ type: 'increment', by: 1 }];

/** Acknowledged increments per key, to check the stored counters at the end. */
const acked = new Map<string, number>();
const loop = await closedLoop(inFlight, warmupMs, measureMs, async (lane) => {
  const key = keyOf(lane);
  const r = await w.trigger<{ old_value: number | null; new_value: number }>({ function_id: 'state::update', payload: { scope, key, ops } });
  if (r.new_value !== (r.old_value ?? 0) + 1) throw new Error(`state::update of ${key} returned ${JSON.stringify(r)}`);
  acked.set(key, (acked.get(key) ?? 0) + 1);
});

let lost = 0;
for (const [key, count] of acked) {
  const stored = await w.trigger<number | null>({ function_id: 'state::get', payload: { scope, key } });
  lost += count - (stored ?? 0);
}

const result = { ...loop, lost };
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
await w.shutdown();
process.exit(0);
