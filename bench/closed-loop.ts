/**
 * The measuring loop of the benchmark callers (bench/caller.ts, bench/state-caller.ts): `inFlight`
 * lanes, each awaiting its call and issuing the next at once. Only calls completed inside the
 * window [warm-up end, warm-up end + measure) count. Prints MEASURE_START / MEASURE_END at the
 * window's edges (the orchestrator samples the other processes' CPU time then) and returns the
 * caller-side figures of the RESULT line.
 */
export interface LoopResult {
  throughput: number;
  p50_us: number;
  p99_us: number;
  calls: number;
  /** This process's CPU time (user + system) per call in the measured window. */
  caller_cpu_us: number;
}

/** `call(lane, i)`: the i-th call (from 0) of lane `lane`; it throws when the answer is wrong. */
export async function closedLoop(inFlight: number, warmupMs: number, measureMs: number, call: (lane: number, i: number) => Promise<void>): Promise<LoopResult> {
  const now = process.hrtime.bigint;
  const start = now() + BigInt(warmupMs) * 1_000_000n;
  const end = start + BigInt(measureMs) * 1_000_000n;
  // Latencies in ns of calls completed inside the window; grown when full.
  let lat = new Float64Array(Math.max(1024, Math.ceil((measureMs / 1000) * 200_000)));
  let n = 0;

  let cpuStart: NodeJS.CpuUsage | undefined;
  const startTimer = setTimeout(() => {
    cpuStart = process.cpuUsage();
    process.stdout.write('MEASURE_START\n');
  }, warmupMs);

  const lane = async (k: number): Promise<void> => {
    for (let i = 0; ; i++) {
      const t0 = now();
      await call(k, i);
      const t1 = now();
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
  };
  await Promise.all(Array.from({ length: inFlight }, (_, k) => lane(k)));
  clearTimeout(startTimer);
  const cpu = process.cpuUsage(cpuStart);
  process.stdout.write('MEASURE_END\n');

  const sorted = lat.subarray(0, n).sort();
  const pct = (p: number): number => (n === 0 ? NaN : sorted[Math.min(n - 1, Math.floor(p * n))]! / 1000);
  return {
    throughput: Math.round(n / (measureMs / 1000)),
    p50_us: Math.round(pct(0.5)),
    p99_us: Math.round(pct(0.99)),
    calls: n,
    caller_cpu_us: n === 0 ? NaN : (cpu.user + cpu.system) / n,
  };
}
