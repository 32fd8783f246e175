/**
 * `npm run bench:queue -- --store [steps]`: each queue store alone, without the engine or any
 * socket to a worker: steps as svc-queue makes them at 64 outstanding (16 enqueues, the 16 oldest
 * claimed jobs completed, claims up to the concurrency), back to back. Prints, for the Redis store,
 * redis-server's CPU per job (the Lua script and its commands) and Redis' own time per command
 * (INFO commandstats: what of a step is the commands and what the script around them); for the
 * embedded store, this process's CPU per job (the step in LMDB, its fsync, and the loop itself).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedQueueStore } from '../src/workers/queue/embedded-store.js';
import { jobId } from '../src/workers/queue/job-id.js';
import { openRedisQueueStore } from '../src/workers/queue/redis-store.js';
import type { ClaimedJob, NewJob, QueueStore } from '../src/workers/queue/store.js';
import { cpuMicros, fmt } from './harness.js';

const LIMITS = { bench: { concurrency: 64, leaseMs: 40_000, maxJobs: 10_000_000, maxBytes: 1e12 } };
const PER_STEP = 16;
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** `steps` steps on `store`; CPU per job from `cpu` (µs, cumulative). */
async function loop(store: QueueStore, cpu: () => number, steps: number): Promise<{ jobsPerSec: number; cpuPerJob: number; jobs: number }> {
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
  await run(Math.ceil(steps / 3));
  const cpu0 = cpu();
  const t0 = performance.now();
  const jobs = await run(steps);
  const secs = (performance.now() - t0) / 1000;
  return { jobsPerSec: jobs / secs, cpuPerJob: (cpu() - cpu0) / jobs, jobs };
}

export async function embeddedStoreLoop(steps: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-queue-store-'));
  const store = await openEmbeddedQueueStore({ dataDir: join(dir, 'q') });
  try {
    const self = (): number => {
      const u = process.cpuUsage();
      return u.user + u.system;
    };
    const r = await loop(store, self, steps);
    return `embedded store alone (${dir}), ${PER_STEP} enqueues + ${PER_STEP} completions per step, ${fmt(steps)} steps: ${fmt(r.jobsPerSec)} jobs/s; CPU of this process ${r.cpuPerJob.toFixed(2)} µs per job`;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function redisStoreLoop(redisPort: number, redisPid: number, steps: number): Promise<string> {
  const store = await openRedisQueueStore({ url: `redis://127.0.0.1:${redisPort}`, keyPrefix: `bench-store-${Date.now()}` });
  try {
    spawnSync('redis-cli', ['-p', String(redisPort), 'config', 'resetstat']);
    const { jobsPerSec, cpuPerJob: cpu, jobs } = await loop(store, () => cpuMicros(redisPid), steps);
    const stats = spawnSync('redis-cli', ['-p', String(redisPort), 'info', 'commandstats'], { encoding: 'utf8' }).stdout ?? '';
    const rows = [...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)]
      .map((m) => ({ cmd: m[1]!, calls: Number(m[2]), us: Number(m[3]) }))
      .sort((a, b) => b.us - a.us)
      .map((r) => `  ${r.cmd.padEnd(10)} ${(r.calls / jobs).toFixed(2).padStart(6)} per job  ${(r.us / jobs).toFixed(2).padStart(6)} µs per job`);
    return [`Redis store alone, ${PER_STEP} enqueues + ${PER_STEP} completions per step, ${fmt(steps)} steps: ${fmt(jobsPerSec)} jobs/s; redis-server CPU ${cpu.toFixed(2)} µs per job`, '  Redis time per command (evalsha: the whole step, script included):', ...rows].join('\n');
  } finally {
    await store.close();
  }
}
