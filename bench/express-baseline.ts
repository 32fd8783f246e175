/**
 * The baseline of bench/http.ts: a plain express app doing the addition in-process, what a user
 * would write without svc: `POST /add {a, b}` → `{c: a + b}`, JSON body parser, nothing else.
 *
 *   node dist/bench/express-baseline.js   → prints `READY http://127.0.0.1:<port>`
 */
import express from 'express';

const app = express();
app.post('/add', express.json(), (req, res) => {
  const { a, b } = req.body as { a: number; b: number };
  res.json({ c: a + b });
});
const server = app.listen(0, '127.0.0.1', () => {
  const a = server.address();
  if (a === null || typeof a === 'string') throw new Error(`unexpected address ${String(a)}`);
  process.stdout.write(`READY http://127.0.0.1:${a.port}\n`);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
