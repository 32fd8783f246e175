/**
 * svc-sdk's own work per call it serves, sockets-free: an `Invoker` (what a worker runs for each
 * `invokefunction`) with the default implicit context, on a stub connection that only encodes and
 * collects the answers, serving a plain `(data) => ({c: a + b})` handler, 64 calls per batch. Prints
 * CPU µs per call (process CPU, GC included). The twin of bench/sdk-caller-cost.ts.
 *
 *   node dist/bench/sdk-callee-cost.js [sdk dist dir] [calls]    default: this tree's svc-sdk, 600,000 calls
 *
 * Give another tree's sdk/typescript/dist to compare two builds in one run (alternate the two).
 */
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { HERE } from './harness.js';

interface InvokerLike {
  register(id: string, handler: (data: { a: number; b: number }) => unknown, options: object): unknown;
  invoke(m: { type: 'invokefunction'; invocation_id: string; function_id: string; data: unknown; traceparent?: string }): unknown;
}

const dir = process.argv[2] ?? join(HERE, '..', '..', 'sdk', 'typescript', 'dist');
const calls = Number(process.argv[3] ?? 600_000);
const { Invoker } = (await import(pathToFileURL(join(dir, 'invoker.js')).href)) as { Invoker: new (conn: unknown, host: unknown) => InvokerLike };

let answered = 0;
const conn = {
  encode: (msg: unknown) => JSON.stringify(msg),
  oversize: () => null,
  sendText: () => (answered++, true),
  send: () => true,
};
const host = { workerName: 'cost', logger: null, worker: null, implicitContext: true, accepting: () => true };
const invoker = new Invoker(conn, host);
invoker.register('bench::add', (d) => ({ c: d.a + d.b }), {});
const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** `n` calls in batches of 64 (as a read of 64 frames would bring them), each batch answered before the next. */
async function run(n: number): Promise<void> {
  for (let done = 0; done < n; done += 64) {
    for (let i = 0; i < 64; i++) void invoker.invoke({ type: 'invokefunction', invocation_id: `id-${done + i}`, function_id: 'bench::add', data: { a: i, b: 1 }, traceparent });
    // Let answers that wait for a promise job go out, as the next socket read would.
    await new Promise((r) => setImmediate(r));
  }
  if (answered < n) throw new Error(`only ${answered} of ${n} calls answered`);
  answered = 0;
}

await run(100_000);
const cpu0 = process.cpuUsage();
await run(calls);
const cpu = process.cpuUsage(cpu0);
process.stdout.write(`${dir}: ${((cpu.user + cpu.system) / calls).toFixed(3)} µs CPU per call (stub connection, implicit context on)\n`);
process.exit(0);
