/**
 * The worker of bench/http.ts: an ordinary svc-sdk worker serving `bench::http_add` and binding it
 * to `POST /add` through svc-http's `http` trigger type, as docs/http.md shows a user doing it.
 * The function gets the request payload and answers the envelope `{status_code: 200, body: {c}}`.
 *
 *   node dist/bench/http-worker.js <ws-url>   → prints `READY` once the trigger is registered
 */
import { registerWorker } from 'svc-sdk';

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: http-worker.js <ws-url>\n');
  process.exit(2);
}
const w = registerWorker(url, { workerName: 'bench-http-worker', echoLogs: false });
w.registerFunction('bench::http_add', (req: { body: { a: number; b: number } }) => ({
  status_code: 200,
  body: { c: req.body.a + req.body.b },
}));
await w.ready(10_000);
await w.registerTrigger({ type: 'http', function_id: 'bench::http_add', config: { api_path: '/add', http_method: 'POST' } });
process.stdout.write('READY\n');
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
