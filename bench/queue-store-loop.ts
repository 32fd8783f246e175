/**
 * `npm run bench:queue -- --store [steps]`: the Redis queue store alone, without the engine or any
 * socket to a worker: steps as svc-queue makes them at 64 outstanding (16 enqueues, the 16 oldest
 * claimed jobs completed, claims up to the concurrency), back to back. Prints redis-server's CPU
 * per job (the Lua script and its commands) and Redis' own time per command (INFO commandstats),
 * which shows what of a step is the commands and what is the script around them.
 */
import { spawnSync } from 'node:child_process';
import { jobId } from '../src/workers/queue/job-id.js';
import { openRedisQueueStore } from '../src/workers/queue/redis-store.js';
import type { ClaimedJob, NewJob } from '../src/workers/queue/store.js';
import { cpuMicros, fmt } from './harness.js';

const LIMITS = { bench: { concurrency: 64, leaseMs: 40_000, maxJobs: 10_000_000, maxBytes: 1e12 } };
const PER_STEP = 16;
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

export async function storeLoop(redisPort: number, redisPid: number, steps: number): Promise<string> {
  const store = await openRedisQueueStore({ url: `redis://127.0.0.1:${redisPort}`, keyPrefix: `bench-store-${Date.now()}` });
  const running: ClaimedJob[] = [];
  let k = 0;
  const run = async (n: number): Promise<number> => {
    let jobs = 0;
    for (let s = 0; s < n; s++) {
      const enqueue: NewJob[] = [];
      for (let i = 0; i < PER_STEP; i++) {
        const data = JSON.stringify({ a: k, b: 1, k: k++ });
        enqueue.push({ id: jobId(), queue: 'bench', functionId: 'bench::add', data, bytes: data.length, group: null, runAt: 0, traceparent: TRACEPARENT, metadata: null, topic: null, binding: null });
      }
      const complete = running.splice(0, PER_STEP).map((j) => ({ id: j.id, attempt: j.attempt }));
      const out = await store.step({ now: Date.now(), limits: LIMITS, enqueue, publish: [], complete, fail: [], claim: { bench: 64 }, absent: [], maintain: false });
      running.push(...out.claimed);
      jobs += complete.length;
    }
    return jobs;
  };
  try {
    await run(Math.ceil(steps / 3));
    spawnSync('redis-cli', ['-p', String(redisPort), 'config', 'resetstat']);
    const cpu0 = cpuMicros(redisPid);
    const t0 = performance.now();
    const jobs = await run(steps);
    const secs = (performance.now() - t0) / 1000;
    const cpu = (cpuMicros(redisPid) - cpu0) / jobs;
    const stats = spawnSync('redis-cli', ['-p', String(redisPort), 'info', 'commandstats'], { encoding: 'utf8' }).stdout ?? '';
    const rows = [...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)]
      .map((m) => ({ cmd: m[1]!, calls: Number(m[2]), us: Number(m[3]) }))
      .sort((a, b) => b.us - a.us)
      .map((r) => `  ${r.cmd.padEnd(10)} ${(r.calls / jobs).toFixed(2).padStart(6)} per job  ${(r.us / jobs).toFixed(2).padStart(6)} µs per job`);
    return [`Redis store alone, ${PER_STEP} enqueues + ${PER_STEP} completions per step, ${fmt(steps)} steps: ${fmt(jobs / secs)} jobs/s; redis-server CPU ${cpu.toFixed(2)} µs per job`, '  Redis time per command (evalsha: the whole step, script included):', ...rows].join('\n');
  } finally {
    await store.close();
  }
}
