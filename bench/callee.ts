/**
 * The callee of the benchmark: an ordinary SDK worker at default options serving `bench::add`
 * ({a, b} → {c: a + b}).
 *
 *   node dist/bench/callee.js <url> [function-id...]   → prints `READY` once a call of its own (first) function went through
 *
 * `function-id` (default `bench::add`) is the id it serves, e.g. `math::add` for bench/python-worker.ts;
 * bench/run.ts gives two (the second served by two replicas).
 *
 * That self-call proves the server has the registration, so the caller can start at full speed.
 */
import { registerWorker } from 'svc-sdk';

const url = process.argv[2];
const functionIds = process.argv.length > 3 ? process.argv.slice(3) : ['bench::add'];
const functionId = functionIds[0]!;
if (!url) {
  process.stderr.write('usage: callee.js <ws-url> [function-id]\n');
  process.exit(2);
}
const w = registerWorker(url, { workerName: 'bench-callee' });
for (const id of functionIds) w.registerFunction(id, (data: { a: number; b: number }) => ({ c: data.a + data.b }));
await w.ready(10_000);
const deadline = Date.now() + 10_000;
for (;;) {
  try {
    const r = await w.trigger<{ c: number }>({ function_id: functionId, payload: { a: 1, b: 2 }, timeoutMs: 1000 });
    if (r.c !== 3) throw new Error(`${functionId} returned ${JSON.stringify(r)}`);
    break;
  } catch (e) {
    if (Date.now() > deadline) throw e;
    await new Promise((r) => setTimeout(r, 20));
  }
}
process.stdout.write('READY\n');
// Exit through process.exit so that `node --cpu-prof` writes its profile.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
