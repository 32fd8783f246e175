/**
 * The baseline of bench/queue.ts: BullMQ driven by its own natural client, as its documentation
 * shows (a Queue and a Worker on ioredis connections, removeOnComplete so finished jobs do not pile
 * up, as svc-queue deletes them): the same job (`add` two numbers) and the same closed loop as
 * bench/queue-client.ts — each lane adds a job, waits until the worker's processor has run it, and
 * adds the next.
 *
 *   node dist/bench/bullmq-client.js <redis-port> <in-flight> <warmup-ms> <measure-ms>
 *
 * Prints the same lines as bench/queue-client.ts; `left` counts jobs not completed a moment after the end.
 */
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { closedLoop } from './closed-loop.js';
import { percentiles } from './queue-loop.js';

// Exit through process.exit so that `node --cpu-prof` writes its profile (bench:queue --profile).
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));

const [portArg, inFlightArg, warmupArg, measureArg] = process.argv.slice(2);
const inFlight = Number(inFlightArg);
if (!(Number(portArg) > 0) || !(inFlight >= 1)) {
  process.stderr.write('usage: bullmq-client.js <redis-port> <in-flight> <warmup-ms> <measure-ms>\n');
  process.exit(2);
}

const connection = { host: '127.0.0.1', port: Number(portArg), maxRetriesPerRequest: null };
const name = `bench-${randomUUID()}`;
const queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true, removeOnFail: true } });
const waiting = new Map<number, { started: bigint; done: () => void }>();
const worker = new Worker(
  name,
  async (job) => {
    const d = job.data as { a: number; b: number; k: number };
    const j = waiting.get(d.k);
    if (j) {
      j.started = process.hrtime.bigint();
      waiting.delete(d.k);
      j.done();
    }
    return { c: d.a + d.b };
  },
  { connection, concurrency: Math.max(1, inFlight) },
);
await worker.waitUntilReady();
await queue.waitUntilReady();

let next = 0;
let measuring = false;
const starts: number[] = [];
setTimeout(() => (measuring = true), Number(warmupArg));
const loop = await closedLoop(inFlight, Number(warmupArg), Number(measureArg), async () => {
  const k = next++;
  const t0 = process.hrtime.bigint();
  const ran = new Promise<void>((done) => waiting.set(k, { started: 0n, done }));
  const entry = waiting.get(k)!;
  await queue.add('add', { a: k, b: 1, k });
  await ran;
  if (measuring) starts.push(Number(entry.started - t0));
});

let left = -1;
for (let i = 0; i < 100 && left !== 0; i++) {
  const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
  left = Object.values(c).reduce((a, b) => a + b, 0);
  if (left !== 0) await new Promise((r) => setTimeout(r, 50));
}
const start = percentiles(starts);
process.stdout.write(`RESULT ${JSON.stringify({ ...loop, start_p50_us: start.p50_us, start_p99_us: start.p99_us, left })}\n`);
await worker.close();
await queue.obliterate({ force: true });
await queue.close();
process.exit(0);
