/**
 * svc-cron on the wire: an ordinary worker, written on svc-sdk, that provides the `cron` trigger
 * type and registers the `cron::*` operations. Schedules and claims are in scheduler.ts,
 * runner.ts and the stores; this file only connects them.
 */
import { registerWorker, Logger, type ReconnectOptions, type TriggerBinding, type Worker } from 'svc-sdk';
import { parseCronConfig, type CronConfig } from './config.js';
import { cronOperations, OPERATION_DESCRIPTIONS, RUN_HERE_DESCRIPTION, runHereId, type RunNowResult } from './operations.js';
import { MAX_TIMEOUT_MS } from './schedule.js';
import { Scheduler } from './scheduler.js';
import type { CronStore } from './store.js';

export interface CronWorkerOptions {
  /** Engine address (or addresses); default env SVC_URL, else ws://localhost:49134. */
  url?: string | string[];
  /** Parsed config, or the raw config.yaml object (snake_case keys). Default: all defaults. */
  config?: CronConfig | Record<string, unknown>;
  workerName?: string;
  /** Resolve only once the functions are callable through the engine (default true). */
  waitReady?: boolean;
  /** Deadline of that first call; default: the engine's invocation_timeout_ms. */
  readyTimeoutMs?: number;
  /** Print Logger lines locally too (default true: they go to `svc worker logs`). */
  echoLogs?: boolean;
  /** Reconnection backoff (svc-sdk's defaults otherwise). */
  reconnect?: Partial<ReconnectOptions>;
}

export interface RunningCronWorker {
  worker: Worker;
  config: CronConfig;
  store: CronStore;
  scheduler: Scheduler;
  /** Stop timers, let runs in flight finish (up to graceMs), disconnect, close the store. */
  shutdown(graceMs?: number): Promise<void>;
}

function isParsed(c: CronWorkerOptions['config']): c is CronConfig {
  return typeof c === 'object' && c !== null && 'dataDir' in c && 'maxTriggers' in c;
}

export async function openCronStore(config: CronConfig): Promise<CronStore> {
  // Only the configured store's module is loaded: the Redis client costs a start ~0.15 s of CPU.
  return config.store === 'redis'
    ? (await import('./redis-store.js')).openRedisCronStore(config.redisUrl, config.redisKeyPrefix)
    : (await import('./embedded-store.js')).openEmbeddedCronStore(config.dataDir);
}

/** A run passed on to the process holding its binding gets its own deadline plus this. */
const FORWARD_SLACK_MS = 5_000;

export const TRIGGER_DESCRIPTION =
  'Runs the bound function on a schedule. Config {expression (5 fields, 6 with seconds first, 7 with a year, or @hourly/@daily/…), timezone? (IANA, default UTC), overlap? (skip|allow), catch_up? (none|last|all), queue?, payload?, timeout_ms?}; ' +
  'payload {trigger_id, schedule_id, scheduled_time, actual_time, manual, payload}. Each scheduled time fires once however many svc-cron replicas or engines run.';

export async function startCronWorker(opts: CronWorkerOptions = {}): Promise<RunningCronWorker> {
  const config = isParsed(opts.config) ? opts.config : parseCronConfig(opts.config);
  const store = await openCronStore(config);
  const workerName = opts.workerName ?? process.env.SVC_WORKER_NAME ?? 'svc-cron';
  // No implicit AsyncLocalStorage scope: fires start from timers and must not become children of
  // whatever call happened to arm them. cron::run_now passes its parent explicitly.
  const worker = registerWorker(opts.url, { workerName, metadata: { store: config.store }, implicitContext: false, ...(opts.echoLogs === false ? { echoLogs: false } : {}), ...(opts.reconnect ? { reconnect: opts.reconnect } : {}) });
  const log = new Logger(worker, opts.echoLogs === false ? { echo: false } : {});
  const scheduler = new Scheduler(store, worker, workerName, config, log);
  try {
    await scheduler.begin();
  } catch (e) {
    await worker.shutdown().catch(() => {});
    await store.close().catch(() => {});
    throw e;
  }

  const { ops, runHere } = cronOperations(store, scheduler.firer, {
    holds: (triggerId) => scheduler.holds(triggerId),
    // With svc-cron's own rights: the caller of cron::run_now was allowed that, and the run itself
    // is made for the binding by the process holding it.
    forward: (holderId, req, parent, timeoutMs) =>
      worker.trigger<RunNowResult>({ function_id: runHereId(holderId), payload: req, timeoutMs: Math.min(timeoutMs + FORWARD_SLACK_MS, MAX_TIMEOUT_MS), ...(parent ? { parent } : {}) }),
  });
  for (const id of Object.keys(ops) as (keyof typeof ops)[]) {
    worker.registerFunction(id, ops[id], { description: OPERATION_DESCRIPTIONS[id] });
  }
  // `internal`: svc-cron's own plumbing, not a function for users to call (the console and
  // `svc status` leave such functions out of their lists unless asked; docs/cron.md).
  worker.registerFunction(runHereId(scheduler.holderId), runHere, { description: RUN_HERE_DESCRIPTION, metadata: { internal: true } });
  await worker.registerTriggerType(
    // A schedule observes nothing but time and the payload its binder wrote: binding one needs no
    // right beyond the bound function (docs/cron.md, "Rights").
    { id: 'cron', description: TRIGGER_DESCRIPTION, binding_requires_call: [] },
    {
      registerTrigger: (b: TriggerBinding) => scheduler.add(b),
      unregisterTrigger: (b: TriggerBinding) => scheduler.remove(b.id),
    },
  );

  let closing: Promise<void> | undefined;
  const shutdown = (graceMs = 5000): Promise<void> =>
    (closing ??= (async () => {
      await scheduler.close(graceMs);
      await worker.shutdown();
      await store.close();
    })());

  if (opts.waitReady !== false) {
    try {
      // A call to ourselves through the engine: once it answers, our registrations were processed.
      await worker.trigger({ function_id: 'cron::list', payload: {}, timeoutMs: opts.readyTimeoutMs });
    } catch (e) {
      await shutdown().catch(() => {});
      throw e;
    }
  }
  return { worker, config, store, scheduler, shutdown };
}
