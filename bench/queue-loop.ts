/** What bench/queue-client.ts and bench/bullmq-client.ts share. */

/** p50 and p99 of latencies given in ns, in µs. */
export function percentiles(ns: number[]): { p50_us: number; p99_us: number } {
  const s = Float64Array.from(ns).sort();
  const pct = (p: number): number => (s.length === 0 ? NaN : Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! / 1000));
  return { p50_us: pct(0.5), p99_us: pct(0.99) };
}
