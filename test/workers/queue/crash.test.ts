/**
 * Crash tests, every process real: with jobs in flight, kill -9 svc-queue, then the engine, then the
 * worker running the jobs, restarting each. Every acknowledged enqueue must have run at least once
 * (the handler records each run in a file before it answers): the count of missing runs is 0. Run
 * against both stores. Also: a second svc-queue on one embedded data directory is refused.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerWorker, TriggerAction, type Worker } from 'svc-sdk';
import { EngineProcess } from '../../../e2e/helpers/cli.js';
import { freePort } from '../../helpers/util.js';
import { startRedis, type RedisServer } from '../state/redis-server.js';
import { until } from './helpers.js';

const QUEUE_MAIN = fileURLToPath(new URL('../../../src/workers/queue/main.js', import.meta.url));
const RECORD_WORKER = fileURLToPath(new URL('./fixtures/record-worker.js', import.meta.url));
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

class Proc {
  out = '';
  readonly child: ChildProcess;
  constructor(args: string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, args, { env: { ...process.env, SVC_LOG_ECHO: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(this.child);
    this.child.stdout!.on('data', (d: Buffer) => (this.out += d));
    this.child.stderr!.on('data', (d: Buffer) => (this.out += d));
  }
  exited(): Promise<number | string | null> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return resolve(this.child.signalCode ?? this.child.exitCode);
      this.child.once('exit', (code, signal) => resolve(signal ?? code));
    });
  }
  async kill9(): Promise<void> {
    this.child.kill('SIGKILL');
    assert.equal(await this.exited(), 'SIGKILL');
    children.delete(this.child);
  }
}

const QUEUES = { jobs: { concurrency: 10, max_attempts: 10, backoff_ms: 100, backoff_max_ms: 500, timeout_ms: 2000 } };

function crashSuite(storeName: 'embedded' | 'redis'): void {
  describe(`kill -9 of svc-queue, the engine and the worker loses no acknowledged job (${storeName} store)`, { timeout: 120_000 }, () => {
    let dir: string;
    let redis: RedisServer | undefined;
    let engine: EngineProcess;
    let port: number;
    let queue: Proc;
    let worker: Proc;
    let client: Worker;
    let queueConfig: string;
    const recordFile = (): string => join(dir, 'runs.txt');
    const startQueue = () => new Proc([QUEUE_MAIN], { SVC_URL: `ws://127.0.0.1:${port}`, SVC_WORKER_CONFIG: queueConfig });
    const startWorker = () => new Proc([RECORD_WORKER, `ws://127.0.0.1:${port}`, recordFile(), '20']);
    const startEngineAt = async () => {
      engine = await EngineProcess.start(['--config', join(dir, 'config.yaml')], { cwd: dir });
      assert.equal(engine.port, port);
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), `svc-queue-crash-${storeName}-`));
      port = await freePort();
      writeFileSync(join(dir, 'config.yaml'), `engine:\n  host: 127.0.0.1\n  port: ${port}\n  print_events: false\n`);
      if (storeName === 'redis') redis = await startRedis();
      queueConfig = JSON.stringify(storeName === 'redis' ? { store: 'redis', redis_url: redis!.url, queues: QUEUES } : { data_dir: join(dir, 'queue'), queues: QUEUES });
      await startEngineAt();
      queue = startQueue();
      worker = startWorker();
      client = registerWorker(`ws://127.0.0.1:${port}`, { workerName: 'crash-client', echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
      await client.ready();
      await serving();
    });
    after(async () => {
      await client?.shutdown(0);
      for (const p of [queue, worker]) if (p) await p.kill9().catch(() => {});
      await engine?.stop('SIGKILL');
      await redis?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const serving = () => until('svc-queue to serve', () => client.trigger({ function_id: 'queue::list', payload: {}, timeoutMs: 1000 }).then(() => true, () => false), 15_000);
    const acked = new Set<string>();
    /** Enqueue `n` jobs, 20 at a time; only those answered with a receipt count. */
    const enqueue = async (n: number): Promise<void> => {
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < n) {
          next++;
          try {
            const r = await client.trigger({ function_id: 'job::record', payload: { n: next }, action: TriggerAction.Enqueue({ queue: 'jobs' }), timeoutMs: 5000 });
            acked.add(r.messageReceiptId);
          } catch {
            /* not acknowledged: not counted */
          }
        }
      };
      await Promise.all(Array.from({ length: 20 }, lane));
    };
    const runs = (): Set<string> => new Set(existsSync(recordFile()) ? readFileSync(recordFile(), 'utf8').split('\n').filter(Boolean) : []);
    const running = () => client.trigger<{ running: number }>({ function_id: 'queue::stats', payload: { queue: 'jobs' }, timeoutMs: 2000 }).then((s) => s.running, () => 0);

    test('every acknowledged job runs at least once', async () => {
      // 1. svc-queue dies with jobs running and waiting; a new one takes over the same store.
      await enqueue(300);
      await until('jobs in flight', async () => (await running()) > 0);
      await queue.kill9();
      queue = startQueue();
      await serving();
      // 2. The engine dies; svc-queue, the worker and the client reconnect to the new one.
      await enqueue(300);
      await until('jobs in flight', async () => (await running()) > 0);
      await engine.stop('SIGKILL');
      await startEngineAt();
      await client.ready(10_000);
      await serving();
      // 3. The worker dies in the middle of jobs.
      await enqueue(300);
      await until('jobs in flight', async () => (await running()) > 0);
      await worker.kill9();
      worker = startWorker();
      assert.ok(acked.size > 800, `most enqueues were acknowledged (${acked.size} of 900)`);
      await until('every acknowledged job to have run', () => [...acked].every((id) => runs().has(id)), 60_000);
      const missing = [...acked].filter((id) => !runs().has(id));
      assert.equal(missing.length, 0, `jobs whose run is missing: ${missing.length}`);
      const stats = await client.trigger<{ dlq: number; completed: number }>({ function_id: 'queue::stats', payload: { queue: 'jobs' } });
      assert.equal(stats.dlq, 0);
      await until('every run to be recorded as completed', async () => {
        const s = await client.trigger<{ jobs: number }>({ function_id: 'queue::stats', payload: { queue: 'jobs' } });
        return s.jobs === 0;
      }, 30_000);
    });
  });
}

crashSuite('embedded');
crashSuite('redis');

test('a second svc-queue on the same embedded data directory is refused with store_locked', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-queue-lock-'));
  const config = JSON.stringify({ data_dir: dir });
  const first = new Proc([QUEUE_MAIN], { SVC_URL: 'ws://127.0.0.1:1', SVC_WORKER_CONFIG: config });
  try {
    await until('the first to open the store', () => first.out.includes('embedded store at'));
    const second = new Proc([QUEUE_MAIN], { SVC_URL: 'ws://127.0.0.1:1', SVC_WORKER_CONFIG: config });
    assert.equal(await second.exited(), 1);
    assert.match(second.out, /\[store_locked\] embedded queue store ".*" is in use by svc-queue pid \d+: the embedded store serves one svc-queue per data_dir; use store: redis/);
    // kill -9 leaves the lock file behind; the next svc-queue takes it over.
    await first.kill9();
    const third = new Proc([QUEUE_MAIN], { SVC_URL: 'ws://127.0.0.1:1', SVC_WORKER_CONFIG: config });
    await until('a new svc-queue to open the store after kill -9', () => third.out.includes('embedded store at'));
    await third.kill9();
  } finally {
    if (first.child.exitCode === null && first.child.signalCode === null) await first.kill9();
    rmSync(dir, { recursive: true, force: true });
  }
});
