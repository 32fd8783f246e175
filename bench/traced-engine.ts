/**
 * The svc engine for bench/tracing.ts, with tracing on or off (engine option `tracing`), and with
 * its spans exported over OTLP (http/protobuf) to `endpoint` when one is given.
 *
 *   node dist/bench/traced-engine.js on|off [endpoint]   → prints `READY ws://127.0.0.1:<port>`
 */
import { Engine } from '../src/engine/server.js';

const mode = process.argv[2];
if (mode !== 'on' && mode !== 'off') {
  process.stderr.write('usage: traced-engine.js on|off\n');
  process.exit(2);
}
const endpoint = process.argv[3];
const telemetry = endpoint ? { endpoint, protocol: 'http/protobuf' as const, serviceName: 'svc-bench', samplingRatio: 1, maxBatchSpans: 512, exportIntervalMs: 1000, logs: true, metrics: false, metricsIntervalMs: 60_000 } : null;
const engine = new Engine({ host: '127.0.0.1', port: 0, printEvents: false, tracing: mode === 'on', telemetry });
const { url } = await engine.start();
process.stdout.write(`READY ${url}\n`);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
