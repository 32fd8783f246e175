/**
 * Durable topics: the `durable:subscriber` trigger type. A binding {topic, queue?} of a function
 * makes a subscription (topic, function, queue) in the store; queue::publish stores one copy per
 * live subscription, each an ordinary job of the subscription's queue with its own retries and DLQ.
 *
 * Subscriptions outlive their bindings for `subscriber_retention_ms` (docs/queues.md): a worker that
 * restarts or loses its connection re-binds the same (topic, function, queue) and gets what was
 * published while it was away, the copies having waited as jobs of a function without a provider.
 * The svc-queue holding the bindings (the engine gives them to one provider) refreshes their
 * `seen_at` every HEARTBEAT_MS, so the store, shared by every replica, knows which are live. A new
 * subscription, or one whose retention ran out, gets only what is published after it was made.
 */
import type { TriggerBinding } from 'svc-sdk';
import { DEFAULT_QUEUE, type QueueWorkerConfig } from './config.js';
import { MAX_NAME_BYTES, QueueError, type QueueStore } from './store.js';

export const HEARTBEAT_MS = 10_000;

/** Subscriptions seen since then get copies: the retention, plus a few heartbeats' slack. */
export function liveSince(config: QueueWorkerConfig, now: number): number {
  return now - config.subscriberRetentionMs - 3 * HEARTBEAT_MS;
}

interface Bound {
  topic: string;
  function_id: string;
  queue: string;
  binding: string;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;
const CONFIG_KEYS = ['topic', 'queue', 'queue_config'];

/** Validate a binding's config: {topic, queue?}; iii's `queue_config` is accepted and ignored (settings come from svc-queue's config). */
export function parseSubscriberBinding(b: TriggerBinding, config: QueueWorkerConfig): Bound {
  const refuse = (code: 'invalid_payload' | 'unknown_queue', msg: string) => new QueueError(code, `durable:subscriber trigger ${b.id} for ${b.function_id}: ${msg}`);
  const c = b.config;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) throw refuse('invalid_payload', 'config must be an object {topic, queue?}');
  const o = c as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!CONFIG_KEYS.includes(k)) throw refuse('invalid_payload', `unknown config key ${JSON.stringify(k)}; known keys: topic, queue`);
  }
  const topic = o.topic;
  if (typeof topic !== 'string' || topic === '' || Buffer.byteLength(topic) > MAX_NAME_BYTES || CONTROL.test(topic)) {
    throw refuse('invalid_payload', `config.topic must be a non-empty string of at most ${MAX_NAME_BYTES} bytes without control characters, got ${JSON.stringify(topic)}`);
  }
  const queue = o.queue ?? DEFAULT_QUEUE;
  if (typeof queue !== 'string' || !config.queues.has(queue)) {
    throw refuse('unknown_queue', `config.queue ${JSON.stringify(queue)} is not configured; configured queues: ${[...config.queues.keys()].join(', ')}`);
  }
  return { topic, function_id: b.function_id, queue, binding: b.id };
}

export class Subscriptions {
  private readonly bound = new Map<string, Bound>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly config: QueueWorkerConfig,
    private readonly warn: (message: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.bound.size === 0) return;
      this.store.subscribe([...this.bound.values()], this.now()).catch((e: Error) => this.warn(`svc-queue: could not refresh ${this.bound.size} subscriptions: ${e.message}`));
    }, HEARTBEAT_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Accept a binding (the subscription is stored before the binding is acknowledged), or throw to refuse it. */
  async register(b: TriggerBinding): Promise<void> {
    const sub = parseSubscriberBinding(b, this.config);
    await this.store.subscribe([sub], this.now());
    this.bound.set(b.id, sub);
  }

  /** The binding left (its worker disconnected, or unbound it): the subscription ages out after the retention. */
  async unregister(b: TriggerBinding): Promise<void> {
    const sub = this.bound.get(b.id);
    if (!sub) return;
    this.bound.delete(b.id);
    await this.store.subscribe([sub], this.now());
  }
}
