/**
 * The svc engine as its own process for bench/run.ts: the same Engine class `svc --config` runs,
 * with its default options, on a free loopback port, without event printing (the CLI's config
 * loading and oclif start-up are not on the call path).
 *
 *   node dist/bench/engine.js   → prints `READY ws://127.0.0.1:<port>`
 *
 * SVC_BENCH_ENGINE_OPTIONS='{"tracing":false}' overrides engine options, to measure what a
 * feature costs (inherited through `npm run bench`).
 */
import { Engine } from '../src/engine/server.js';

const overrides = JSON.parse(process.env.SVC_BENCH_ENGINE_OPTIONS ?? '{}') as Record<string, unknown>;
const engine = new Engine({ ...overrides, host: '127.0.0.1', port: 0, printEvents: false });
const { url } = await engine.start();
process.stdout.write(`READY ${url}\n`);
// Exit through process.exit so that `node --cpu-prof` writes its profile.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
