/**
 * The engine for bench/soak.ts: bench/engine.ts plus a memory probe. Run with `--expose-gc`; each
 * `mem` line on stdin is answered, after two full garbage collections, with
 *   MEM {"rss":…,"heapUsed":…,"external":…,"handles":…,"sessions":…,"in_flight":…}
 * so that memory is compared at rest, not at a random point of the collector's cycle; each `stat`
 * line, at once and without a GC, with `STAT {"rss":…,"heapUsed":…,"heapTotal":…,"external":…,
 * "logBytes":…,"traceBytes":…,"connections":…}` (bench/exhaustion-soak.ts). The probe
 * lives here, not in the engine: the engine needs no hidden option for it.
 *
 *   node --expose-gc dist/bench/soak-engine.js   → prints `READY ws://127.0.0.1:<port>`
 *
 * SVC_BENCH_ENGINE_OPTIONS='{"maxLogBytes":1048576}' overrides engine options (default: the defaults).
 */
import { createInterface } from 'node:readline';
import { FATAL_EXIT_CODE, guardProcess } from '../src/daemon/process-guard.js';
import { Engine } from '../src/engine/server.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('soak-engine: run with node --expose-gc\n');
  process.exit(2);
}
const overrides = JSON.parse(process.env.SVC_BENCH_ENGINE_OPTIONS ?? '{}') as Record<string, unknown>;
const engine = new Engine({ ...overrides, host: '127.0.0.1', port: 0, printEvents: false });
const { url } = await engine.start();
// As the daemon does (svc --config): an error that escapes the engine's handlers is logged, here
// on stderr, where bench/exhaustion-soak.ts looks for it.
guardProcess({ log: (m) => process.stderr.write(`GUARD ${m}\n`), fatal: () => process.exit(FATAL_EXIT_CODE) });
process.stdout.write(`READY ${url}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'stat') {
    // Without a GC: what the process holds now, garbage included.
    const m = process.memoryUsage();
    process.stdout.write(`STAT ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, logBytes: engine.logs.heldBytes, traceBytes: engine.traces?.heldBytes ?? 0, connections: engine.connectionCount })}\n`);
    return;
  }
  if (line.trim() !== 'mem') return;
  gc();
  gc();
  const m = process.memoryUsage();
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length;
  process.stdout.write(
    `MEM ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external, handles, sessions: engine.sessionCount, in_flight: engine.invocations.size })}\n`,
  );
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
