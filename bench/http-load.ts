/**
 * The load generator of bench/http.ts, in a process of its own so its CPU time is its own:
 * autocannon (programmatic API), a fixed number of keep-alive connections each sending
 * `POST <url> {"a":2,"b":3}` back to back, every answer checked to be `{"c":5}`.
 *
 *   node dist/bench/http-load.js <url> <connections> <warmup-ms> <measure-ms>
 *
 * A warm-up run, then `MEASURE_START`, the measured run, `MEASURE_END`, and
 * `RESULT {"rps", "p50_ms", "p99_ms", "requests", "non2xx", "errors", "mismatches", "load_cpu_us"}`.
 */
import autocannon from 'autocannon';

const [url, connectionsArg, warmupArg, measureArg] = process.argv.slice(2);
const connections = Number(connectionsArg);
const warmupMs = Number(warmupArg);
const measureMs = Number(measureArg);
if (!url || !(connections >= 1) || !(warmupMs >= 0) || !(measureMs >= 1000)) {
  process.stderr.write('usage: http-load.js <url> <connections> <warmup-ms> <measure-ms ≥ 1000>\n');
  process.exit(2);
}

const request = (durationMs: number): Promise<autocannon.Result> =>
  autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ a: 2, b: 3 }),
    expectBody: JSON.stringify({ c: 5 }),
    connections,
    pipelining: 1,
    // autocannon's duration is in seconds; fractions work.
    duration: durationMs / 1000,
  });

if (warmupMs > 0) await request(warmupMs);
const cpu0 = process.cpuUsage();
process.stdout.write('MEASURE_START\n');
const r = await request(measureMs);
const cpu = process.cpuUsage(cpu0);
process.stdout.write('MEASURE_END\n');
const requests = r['2xx'];
const result = {
  rps: Math.round(requests / (measureMs / 1000)),
  p50_ms: r.latency.p50,
  p99_ms: r.latency.p99,
  requests,
  non2xx: r.non2xx,
  errors: r.errors,
  mismatches: r.mismatches,
  load_cpu_us: requests ? (cpu.user + cpu.system) / requests : NaN,
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
process.exit(0);
