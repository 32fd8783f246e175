/**
 * `npm run bench:hops`: where svc-sdk's share of a lone call's latency is (issue 21). On the plain
 * relay (bench/relay.ts, no engine), the four pairings of caller and callee, each raw (one `ws`
 * connection, one JSON message per call each way: bench/raw-callee.ts and a raw client here) or
 * svc-sdk at default options (bench/callee.ts, `registerWorker` + `trigger()` here), one call in
 * flight, in alternating slices so that all four share the machine's drift. Per pairing: p50 and
 * p90 of the round trip as the caller sees it, and the callee's CPU per call (from /proc).
 *
 *   npm run bench:hops                      20 slices of 200 ms per pairing (~25 s)
 *   npm run bench:hops -- --slices 40 --slice-ms 250
 *
 * sdk→raw minus raw→raw is the svc-sdk caller's cost on the clock, raw→sdk minus raw→raw the
 * callee's; npm run bench's "server only" rows then give the engine's against the relay.
 */
import WebSocket from 'ws';
import { registerWorker } from 'svc-sdk';
import { cpuMicros, fmt, load, machine, runMain, startNode, stopAll, UsageError, type Proc } from './harness.js';

type Side = 'raw' | 'sdk';
const PAIRS: Array<[caller: Side, callee: Side]> = [
  ['raw', 'raw'],
  ['raw', 'sdk'],
  ['sdk', 'raw'],
  ['sdk', 'sdk'],
];
const FUNCTION: Record<Side, string> = { raw: 'hops::raw', sdk: 'hops::sdk' };

function parseArgs(argv: string[]): { slices: number; sliceMs: number } {
  const o = { slices: 20, sliceMs: 200 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = Number(argv[++i]);
    if (!(v >= 1)) throw new UsageError(`${a} needs a positive number`);
    if (a === '--slices') o.slices = Math.round(v);
    else if (a === '--slice-ms') o.sliceMs = v;
    else throw new UsageError(`unknown argument ${a} (known: --slices N, --slice-ms MS)`);
  }
  return o;
}

/** A raw caller: `call(functionId)` resolves with the answer's result. */
async function rawCaller(url: string): Promise<{ call(functionId: string): Promise<unknown>; close(): void }> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const pending = new Map<string, (r: unknown) => void>();
  let n = 0;
  ws.on('message', (raw) => {
    const m = JSON.parse(raw.toString()) as { type?: string; invocation_id?: string; result?: unknown };
    const resolve = m.type === 'invocationresult' && m.invocation_id ? pending.get(m.invocation_id) : undefined;
    if (!resolve) return;
    pending.delete(m.invocation_id!);
    resolve(m.result);
  });
  return {
    call: (functionId) =>
      new Promise((resolve) => {
        const id = `h-${n++}`;
        pending.set(id, resolve);
        ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: id, function_id: functionId, data: { a: 1, b: 1 } }));
      }),
    close: () => ws.close(),
  };
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  console.log('svc bench:hops: one call in flight on the plain relay, raw and svc-sdk callers × callees');
  console.log(`machine: ${machine()}`);
  console.log(`load average before: ${load()}`);
  const procs: Proc[] = [];
  try {
    const relay = startNode('relay.js', ['plain']);
    procs.push(relay);
    const url = await relay.line('READY', 10_000);
    const callees: Record<Side, Proc> = {
      raw: startNode('raw-callee.js', [url, FUNCTION.raw]),
      sdk: startNode('callee.js', [url, FUNCTION.sdk]),
    };
    procs.push(callees.raw, callees.sdk);
    await Promise.all([callees.raw.line('READY', 15_000), callees.sdk.line('READY', 15_000)]);
    const raw = await rawCaller(url);
    const worker = registerWorker(url, { workerName: 'bench-hops' });
    await worker.ready(10_000);
    const callers: Record<Side, (functionId: string) => Promise<unknown>> = {
      raw: raw.call,
      sdk: (functionId) => worker.trigger({ function_id: functionId, payload: { a: 1, b: 1 } }),
    };
    const samples = PAIRS.map(() => [] as number[]);
    const calleeCpu = PAIRS.map(() => ({ us: 0, calls: 0 }));
    const slice = async (p: number, ms: number, record: boolean): Promise<void> => {
      const [caller, callee] = PAIRS[p]!;
      const call = callers[caller];
      const functionId = FUNCTION[callee];
      const pid = callees[callee].child.pid;
      const cpu0 = cpuMicros(pid);
      const end = performance.now() + ms;
      let calls = 0;
      while (performance.now() < end) {
        const t0 = performance.now();
        await call(functionId);
        if (record) samples[p]!.push((performance.now() - t0) * 1000);
        calls++;
      }
      if (record) {
        calleeCpu[p]!.us += cpuMicros(pid) - cpu0;
        calleeCpu[p]!.calls += calls;
      }
    };
    // Warm-up: long enough for V8 to optimise every path (bench/interleaved-caller.ts, "Why the burst").
    for (let p = 0; p < PAIRS.length; p++) await slice(p, 2000, false);
    for (let s = 0; s < o.slices; s++) for (let k = 0; k < PAIRS.length; k++) await slice((s + k) % PAIRS.length, o.sliceMs, true);
    console.log('');
    console.log('| caller → callee | calls | p50 µs | p90 µs | p50 / raw→raw | callee CPU µs/call |');
    console.log('|---|---:|---:|---:|---:|---:|');
    const p50s = samples.map((xs) => quantile(xs.sort((a, b) => a - b), 0.5));
    PAIRS.forEach(([caller, callee], p) => {
      const xs = samples[p]!;
      console.log(`| ${caller} → ${callee} | ${xs.length} | ${fmt(p50s[p]!, 1)} | ${fmt(quantile(xs, 0.9), 1)} | ${fmt(p50s[p]! / p50s[0]!, 2)} | ${fmt(calleeCpu[p]!.us / calleeCpu[p]!.calls, 1)} |`);
    });
    console.log('');
    console.log(`load average after: ${load()}`);
    raw.close();
    await worker.shutdown();
  } finally {
    await stopAll(procs);
  }
}

runMain(main);
