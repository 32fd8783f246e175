/**
 * Helpers of the svc-cron tests: a recording cron-bound function, svc-cron as a child process
 * (`node dist/src/workers/cron/main.js`, as `svc worker add svc-cron` runs it), waiting.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'svc-sdk';
import type { FirePayload } from '../../../src/workers/cron/fire.js';

export const CRON_MAIN = fileURLToPath(new URL('../../../src/workers/cron/main.js', import.meta.url));

/** What a bound function received (iii's alias fields left out), and when and where it ran. */
export interface Fired extends Omit<FirePayload, 'trigger' | 'job_id'> {
  /** When the handler started, ms since the epoch. */
  at: number;
  /** Which replica of the bound function ran it. */
  by: string;
}

/** Register `fn` on each worker, recording every call (and running `body` if given). */
export function recordFires(workers: Worker[], fn: string, body?: (f: Fired) => Promise<unknown> | unknown): Fired[] {
  const fired: Fired[] = [];
  for (const w of workers) {
    w.registerFunction(fn, async (data: Omit<Fired, 'at' | 'by'>) => {
      const f = { ...data, at: Date.now(), by: w.workerName };
      fired.push(f);
      return body ? await body(f) : { ok: true };
    });
  }
  return fired;
}

export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Sleep until `ms` past the start of a wall-clock second (0–999). */
export async function atMillisecond(ms: number): Promise<void> {
  const now = Date.now();
  await sleep((ms - (now % 1000) + 1000) % 1000);
}

export interface CronProcess {
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** svc-cron as its own process, as the supervisor starts it (CRON_ECHO=1 prints its log lines). */
export function spawnCron(url: string, config: Record<string, unknown>, name = 'svc-cron'): CronProcess {
  const child = spawn(process.execPath, [CRON_MAIN], {
    env: { ...process.env, SVC_URL: url, SVC_WORKER_NAME: name, SVC_WORKER_CONFIG: JSON.stringify(config), SVC_LOG_ECHO: process.env.CRON_ECHO ?? '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  process.on('exit', () => child.kill('SIGKILL'));
  return {
    child,
    output: () => out,
    kill: (signal = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}

/** Per scheduled time, how many times it ran. */
export function countByTime(fired: Fired[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const f of fired) if (!f.manual) m.set(f.scheduled_time, (m.get(f.scheduled_time) ?? 0) + 1);
  return m;
}

/**
 * How late a fire may run. A fire that waited for a killed replica's lease (3 s) would be seconds
 * late; 100 ms failed once in 31 fires (101 ms) with the 2-core machine at load average 7.
 */
const LATE_MS = 250;

/**
 * Every `periodMs` from the first fire to the last ran exactly once (nothing else ran), the fires
 * span at least `spanMs`, and each ran within LATE_MS of its scheduled time.
 */
export function assertEachOnceOnTime(fired: Fired[], periodMs: number, spanMs: number): void {
  const counts = countByTime(fired);
  const times = [...counts.keys()].map(Date.parse).sort((x, y) => x - y);
  const first = times[0]!;
  const last = times[times.length - 1]!;
  assert.ok(last - first >= spanMs, `fires span ${(last - first) / 1000} s`);
  for (let t = first; t <= last; t += periodMs) {
    const at = new Date(t).toISOString();
    assert.equal(counts.get(at), 1, `${at} fired ${counts.get(at) ?? 0} times`);
  }
  assert.equal(counts.size, (last - first) / periodMs + 1, 'fires at times off the schedule');
  const late = fired.map((f) => f.at - Date.parse(f.scheduled_time));
  assert.ok(Math.max(...late) <= LATE_MS, `latest fire ran ${Math.max(...late)} ms after its time (all: ${late.join(',')})`);
}
