/**
 * The engine for bench/soak.ts: bench/engine.ts plus a memory probe. Run with `--expose-gc`; each
 * `mem` line on stdin is answered, after two full garbage collections, with
 *   MEM {"rss":…,"heapUsed":…,"external":…,"handles":…,"sessions":…,"in_flight":…}
 * so that memory is compared at rest, not at a random point of the collector's cycle. The probe
 * lives here, not in the engine: the engine needs no hidden option for it.
 *
 *   node --expose-gc dist/bench/soak-engine.js   → prints `READY ws://127.0.0.1:<port>`
 */
import { createInterface } from 'node:readline';
import { Engine } from '../src/engine/server.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('soak-engine: run with node --expose-gc\n');
  process.exit(2);
}
const engine = new Engine({ host: '127.0.0.1', port: 0, printEvents: false });
const { url } = await engine.start();
process.stdout.write(`READY ${url}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
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
