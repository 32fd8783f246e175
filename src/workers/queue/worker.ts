/**
 * svc-queue on the wire: an ordinary worker, written on svc-sdk, that registers the queue functions
 * (service.ts), provides the `durable:subscriber` trigger type (topics.ts) and runs jobs by calling
 * their functions through the engine (dispatcher.ts). This file only connects them.
 */
import { registerWorker, Logger, type TriggerBinding, type Worker } from 'svc-sdk';
import { parseQueueConfig, type QueueSettings, type QueueWorkerConfig } from './config.js';
import { Dispatcher } from './dispatcher.js';

/** The engine takes at most this many queues per report (src/engine/service-counters.ts). */
const MAX_REPORTED_QUEUES = 200;
import { FUNCTION_DESCRIPTIONS, queueFunctions } from './service.js';
import type { ClaimedJob, QueueStore } from './store.js';
import { Subscriptions } from './topics.js';

export interface QueueWorkerOptions {
  /** Engine address; default env SVC_URL, else ws://localhost:49134. */
  url?: string;
  /** Parsed config, or the raw config.yaml object (snake_case keys). Default: all defaults. */
  config?: QueueWorkerConfig | Record<string, unknown>;
  workerName?: string;
  /** Resolve only once the functions are callable through the engine (default true). */
  waitReady?: boolean;
  /** Deadline of that first call; default: the engine's invocation_timeout_ms. */
  readyTimeoutMs?: number;
}

export interface RunningQueueWorker {
  worker: Worker;
  config: QueueWorkerConfig;
  store: QueueStore;
  dispatcher: Dispatcher;
  /** The durable:subscriber bindings this process holds. */
  subscriptions: Subscriptions;
  shutdown(): Promise<void>;
}

function isParsed(c: QueueWorkerOptions['config']): c is QueueWorkerConfig {
  return typeof c === 'object' && c !== null && c.queues instanceof Map;
}

export async function openQueueStore(config: QueueWorkerConfig): Promise<QueueStore> {
  // Only the configured store's module is loaded: the Redis client costs a start ~0.15 s of CPU.
  return config.store === 'redis'
    ? (await import('./redis-store.js')).openRedisQueueStore({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix })
    : (await import('./embedded-store.js')).openEmbeddedQueueStore({ dataDir: config.dataDir });
}

/** What a job's handler finds in its call's metadata (ctx.metadata; iii handlers' second argument). */
export function deliveryMetadata(job: ClaimedJob, s: QueueSettings): Record<string, unknown> {
  return {
    message_id: job.id,
    attempt: job.attempt,
    max_attempts: s.maxAttempts,
    queue: job.queue,
    enqueued_at: job.enqueuedAt,
    ...(job.topic !== null ? { topic: job.topic } : {}),
    ...(job.metadata !== null ? { metadata: JSON.parse(job.metadata) as unknown } : {}),
  };
}

export async function startQueueWorker(opts: QueueWorkerOptions = {}): Promise<RunningQueueWorker> {
  const config = isParsed(opts.config) ? opts.config : parseQueueConfig(opts.config);
  const store = await openQueueStore(config);
  // No AsyncLocalStorage scope per call (as svc-state): deliveries name their parent explicitly.
  const worker = registerWorker(opts.url, { workerName: opts.workerName ?? 'svc-queue', metadata: { store: config.store }, implicitContext: false });
  const log = new Logger(worker);
  const warn = (m: string): void => log.warn(m);

  /**
   * Every call svc-queue makes to run a job goes through here. A plain job runs with svc-queue's
   * rights (the engine checked at enqueue that its caller may call the function). A topic's copy is
   * the delivery of a subscription: it is made for a live binding of it held here, so that the
   * engine runs it with the subscriber's rights (docs/security.md), never with svc-queue's.
   */
  const deliver = (job: ClaimedJob, s: QueueSettings): Promise<unknown> => {
    const call = {
      function_id: job.functionId,
      payload: JSON.parse(job.data) as unknown,
      timeoutMs: s.timeoutMs,
      metadata: deliveryMetadata(job, s),
      ...(job.traceparent !== null ? { parent: { traceparent: job.traceparent } } : {}),
    };
    if (job.topic === null) return worker.trigger(call);
    return subscriptions.bindingForCopy({ ...job, topic: job.topic }).then((bindingId) =>
      worker.trigger({ ...call, bindingId }).catch((e: unknown) => {
        throw subscriptions.callError(e, bindingId);
      }),
    );
  };
  const probe = async (functionId: string): Promise<boolean> => {
    try {
      await worker.trigger({ function_id: 'engine::functions::info', payload: { function_id: functionId }, timeoutMs: 5000 });
      return true;
    } catch (e) {
      if ((e as { code?: string }).code === 'function_not_found') return false;
      throw e;
    }
  };
  const dispatcher = new Dispatcher({ store, config, deliver, probe, warn });
  const subscriptions = new Subscriptions(store, config, warn, Date.now, (fn) => dispatcher.bindingArrived(fn));

  const fns = queueFunctions(dispatcher, store, config);
  for (const [id, handler] of Object.entries(fns)) {
    worker.registerFunction(id, handler, { description: FUNCTION_DESCRIPTIONS[id] ?? '' });
  }
  await worker.registerTriggerType(
    {
      id: 'durable:subscriber',
      // A subscriber receives every message of its topic, which queue::jobs would show it (it lists
      // the payloads of queued jobs, topics' copies included): binding one needs that right
      // (docs/queues.md, "Rights").
      binding_requires_call: ['queue::jobs'],
      description:
        'Subscribes the bound function to a durable topic. Config {topic, queue?}: every queue::publish to the topic becomes a job of the function in the queue (default "default"), with its retries and DLQ.',
    },
    {
      registerTrigger: (b: TriggerBinding) => subscriptions.register(b),
      unregisterTrigger: (b: TriggerBinding) => subscriptions.unregister(b),
    },
  );
  // The process reports carry each queue's depth (read from the store, so every instance of a
  // shared Redis store reports the same) and what this instance did (dispatcher.events).
  worker.reportAlso(async () => {
    const counts = await store.counts([...config.queues.keys()]);
    const queues = counts.slice(0, MAX_REPORTED_QUEUES).map((c) => {
      const e = dispatcher.events.get(c.queue);
      return { queue: c.queue, enqueued: e?.enqueued ?? 0, completed: e?.completed ?? 0, retried: e?.retried ?? 0, dead_lettered: e?.dead_lettered ?? 0, waiting: c.waiting, delayed: c.delayed, running: c.running, dlq: c.dlq };
    });
    return { queues };
  });
  worker.on('connected', () => dispatcher.setConnected(true));
  worker.on('disconnected', () => dispatcher.setConnected(false));
  if (worker.state === 'connected') dispatcher.setConnected(true);
  dispatcher.start();
  subscriptions.start();

  const shutdown = async (): Promise<void> => {
    subscriptions.stop();
    await dispatcher.stop();
    await worker.shutdown();
    await store.close();
  };

  if (opts.waitReady !== false) {
    try {
      // A call to ourselves through the engine: once it answers, our registrations were processed.
      await worker.trigger({ function_id: 'queue::list', payload: {}, timeoutMs: opts.readyTimeoutMs });
    } catch (e) {
      await shutdown().catch(() => {});
      throw e;
    }
  }
  return { worker, config, store, dispatcher, subscriptions, shutdown };
}
