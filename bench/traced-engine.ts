/**
 * The svc engine for bench/tracing.ts, with tracing on or off (engine option `tracing`).
 *
 *   node dist/bench/traced-engine.js on|off   → prints `READY ws://127.0.0.1:<port>`
 */
import { Engine } from '../src/engine/server.js';

const mode = process.argv[2];
if (mode !== 'on' && mode !== 'off') {
  process.stderr.write('usage: traced-engine.js on|off\n');
  process.exit(2);
}
const engine = new Engine({ host: '127.0.0.1', port: 0, printEvents: false, tracing: mode === 'on' });
const { url } = await engine.start();
process.stdout.write(`READY ${url}\n`);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
