/**
 * The callee of bench/tracing.ts: `bench::add` as in bench/callee.ts, optionally sending one Logger
 * line to the engine per call (what a worker that logs every request costs the engine).
 *
 *   node dist/bench/logging-callee.js <url> log|quiet   → prints `READY`
 */
import { Logger, registerWorker } from 'svc-sdk';

const [url, mode] = process.argv.slice(2);
if (!url || (mode !== 'log' && mode !== 'quiet')) {
  process.stderr.write('usage: logging-callee.js <ws-url> log|quiet\n');
  process.exit(2);
}
const w = registerWorker(url, { workerName: 'bench-callee', echoLogs: false });
const logger = new Logger(w, { echo: false });
if (mode === 'log') {
  w.registerFunction('bench::add', (data: { a: number; b: number }) => {
    logger.info('adding', { a: data.a, b: data.b });
    return { c: data.a + data.b };
  });
} else {
  w.registerFunction('bench::add', (data: { a: number; b: number }) => ({ c: data.a + data.b }));
}
await w.ready(10_000);
const deadline = Date.now() + 10_000;
for (;;) {
  try {
    const r = await w.trigger<{ c: number }>({ function_id: 'bench::add', payload: { a: 1, b: 2 }, timeoutMs: 1000 });
    if (r.c !== 3) throw new Error(`bench::add returned ${JSON.stringify(r)}`);
    break;
  } catch (e) {
    if (Date.now() > deadline) throw e;
    await new Promise((r) => setTimeout(r, 20));
  }
}
process.stdout.write('READY\n');
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
