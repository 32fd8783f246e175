/**
 * svc-sdk's own work per call it makes, sockets-free: a `Caller` (what `worker.trigger()` runs)
 * on a stub connection that only encodes and collects the frames, answered with `onResult`, 64
 * calls in flight, as bench/queue.ts's client and svc-queue make them. Prints CPU µs per call
 * (process CPU, GC included) and the GC time.
 *
 *   node dist/bench/sdk-caller-cost.js [sdk dist dir] [calls]    default: this tree's svc-sdk, 600,000 calls
 *
 * Give another tree's sdk/typescript/dist to compare two builds in one run (alternate the two).
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { HERE } from './harness.js';

interface CallerLike {
  call(req: { function_id: string; payload: unknown; action?: { type: 'enqueue'; queue: string } }): Promise<unknown>;
  onResult(m: { type: 'invocationresult'; invocation_id: string; function_id: string; result: unknown }): void;
}

const dir = process.argv[2] ?? join(HERE, '..', '..', 'sdk', 'typescript', 'dist');
const calls = Number(process.argv[3] ?? 600_000);
const { Caller } = (await import(pathToFileURL(join(dir, 'caller.js')).href)) as { Caller: new (conn: unknown, host: unknown) => CallerLike };

const sent: string[] = [];
const conn = {
  encode: (msg: unknown) => JSON.stringify(msg),
  oversize: () => null,
  sendText: (text: string) => (sent.push(text), true),
  send: () => true,
};
const host = { state: 'connected', defaultTimeoutMs: 30_000, invocationTimeoutMs: undefined, canCancel: true, closedBy: null, ready: async () => {} };
const caller = new Caller(conn, host);
const action = { type: 'enqueue' as const, queue: 'bench' };

let gcMs = 0;
new PerformanceObserver((l) => {
  for (const e of l.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });

/** `n` calls, 64 in flight: each round sends 64, then answers them (as a read of 64 results would). */
async function run(n: number): Promise<void> {
  for (let done = 0; done < n; done += 64) {
    const pending: Array<Promise<unknown>> = [];
    for (let i = 0; i < 64; i++) pending.push(caller.call({ function_id: 'bench::add', payload: { a: i, b: 1, k: done + i }, action }));
    for (const text of sent.splice(0)) {
      const id = (JSON.parse(text) as { invocation_id: string }).invocation_id;
      caller.onResult({ type: 'invocationresult', invocation_id: id, function_id: 'bench::add', result: { messageReceiptId: id } });
    }
    await Promise.all(pending);
  }
}

await run(100_000);
gcMs = 0;
const cpu0 = process.cpuUsage();
await run(calls);
const cpu = process.cpuUsage(cpu0);
process.stdout.write(`${dir}: ${((cpu.user + cpu.system) / calls).toFixed(3)} µs CPU per call (stub connection, 64 in flight; GC ${((gcMs * 1000) / calls).toFixed(3)} µs per call)\n`);
process.exit(0);
