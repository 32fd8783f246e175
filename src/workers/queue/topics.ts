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
 *
 * A copy is delivered for a binding (docs/security.md, "Trigger bindings"): with the id of a live
 * binding of its subscription that this process holds now (`bindingFor`), whichever binding was
 * current when the copy was made, so the call runs with a subscriber's rights. A copy whose
 * subscription has no such binding waits (dispatcher.ts).
 */
import type { TriggerBinding } from 'svc-sdk';
import { DEFAULT_QUEUE, unconfiguredQueueHint, type QueueWorkerConfig } from './config.js';
import { UndeliverableCopyError } from './policy.js';
import { MAX_NAME_BYTES, QueueError, type ClaimedJob, type QueueStore, type Subscription } from './store.js';
import { describe, hasLoneSurrogate } from '../shared/describe.js';

export const HEARTBEAT_MS = 10_000;
/** How long the store's subscription list is reused while deciding about copies without a binding. */
const SUBSCRIPTIONS_READ_MS = 1000;

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
  const fid = b.function_id;
  const badFid = Buffer.byteLength(fid) > MAX_NAME_BYTES || CONTROL.test(fid) || hasLoneSurrogate(fid);
  const refuse = (code: 'invalid_payload' | 'unknown_queue', msg: string) => new QueueError(code, `durable:subscriber trigger ${b.id} for ${badFid ? describe(fid) : fid}: ${msg}`);
  // The function id is part of the subscription's key in the store, as a job's function_id is:
  // held to the same bound (the embedded store failed a longer key's commit, as store_unavailable).
  if (badFid) throw refuse('invalid_payload', `function_id must be at most ${MAX_NAME_BYTES} bytes without control characters or lone surrogates`);
  const c = b.config;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) throw refuse('invalid_payload', 'config must be an object {topic, queue?}');
  const o = c as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!CONFIG_KEYS.includes(k)) throw refuse('invalid_payload', `unknown config key ${JSON.stringify(k)}; known keys: topic, queue`);
  }
  const topic = o.topic;
  if (typeof topic !== 'string' || topic === '' || Buffer.byteLength(topic) > MAX_NAME_BYTES || CONTROL.test(topic) || hasLoneSurrogate(topic)) {
    throw refuse('invalid_payload', `config.topic must be a non-empty string of at most ${MAX_NAME_BYTES} bytes without control characters or lone surrogates, got ${JSON.stringify(topic)}`);
  }
  const queue = o.queue ?? DEFAULT_QUEUE;
  if (typeof queue !== 'string' || !config.queues.has(queue)) {
    // How to configure it, as an enqueue on an unconfigured queue says (service.ts).
    const hint = typeof queue === 'string' ? unconfiguredQueueHint(config, queue) : `configured queues: ${[...config.queues.keys()].join(', ')}`;
    throw refuse('unknown_queue', `config.queue ${JSON.stringify(queue)} is not configured; ${hint}`);
  }
  return { topic, function_id: b.function_id, queue, binding: b.id };
}

/** The key of a subscription: (topic, function, queue). Names hold no control characters. */
export function subscriptionKey(topic: string, functionId: string, queue: string): string {
  return topic + '\u0000' + functionId + '\u0000' + queue;
}

export class Subscriptions {
  private readonly bound = new Map<string, Bound>();
  /** Subscription key → the ids of its bindings this process holds, the latest last. */
  private readonly held = new Map<string, string[]>();
  private timer: NodeJS.Timeout | undefined;
  /** The store's subscriptions as last read, for copies without a binding here. */
  private subscriptionsRead: { at: number; subs: Promise<Subscription[]> } | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly config: QueueWorkerConfig,
    private readonly warn: (message: string) => void,
    private readonly now: () => number = Date.now,
    /** A binding of `functionId` was accepted: copies waiting for one may go. */
    private readonly onBound: (functionId: string) => void = () => {},
  ) {}

  /** The id of a live binding of the subscription (topic, function, queue) held here, the latest, or undefined. */
  bindingFor(topic: string, functionId: string, queue: string): string | undefined {
    const ids = this.held.get(subscriptionKey(topic, functionId, queue));
    return ids?.[ids.length - 1];
  }

  /**
   * The binding a topic's copy is delivered for, or why it cannot be: `unbound` (wait: the
   * subscription is live, its binding is away or held by another replica) or `ended` (no binding
   * of the subscription was seen within the retention: dead-letter it).
   */
  async bindingForCopy(job: ClaimedJob & { topic: string }): Promise<string> {
    const id = this.bindingFor(job.topic, job.functionId, job.queue);
    if (id !== undefined) return id;
    const what = `copy of topic ${JSON.stringify(job.topic)} for ${job.functionId} (queue ${job.queue})`;
    let ended = false;
    try {
      const sub = (await this.readSubscriptions()).find((x) => x.topic === job.topic && x.function_id === job.functionId && x.queue === job.queue);
      ended = sub === undefined || sub.seen_at < liveSince(this.config, this.now());
    } catch {
      // The store cannot tell now: the copy waits, as for a live subscription.
    }
    if (ended) {
      throw new UndeliverableCopyError(
        'subscription_ended',
        `${what}: its subscription ended (no durable:subscriber binding of it for subscriber_retention_ms), so no one may receive it; redrive it once the function is subscribed again`,
        'ended',
      );
    }
    throw new UndeliverableCopyError('binding_not_found', `${what}: no durable:subscriber binding of it is live on this svc-queue; it waits for one`, 'unbound');
  }

  /**
   * The error of a copy's call made for binding `id`, as the dispatcher should see it: the
   * engine's refusal of the binding (it is gone, or held by another provider now: the call did not
   * start) means the copy waits, and the binding is forgotten here; any other error is the call's.
   */
  callError(e: unknown, id: string): unknown {
    const err = e as { code?: unknown; message?: unknown };
    const message = typeof err?.message === 'string' ? err.message : '';
    const refused =
      (err?.code === 'binding_not_found' && message.startsWith(`Trigger binding ${id} `)) ||
      (err?.code === 'forbidden' && message.includes(`not the provider of trigger binding ${id}:`));
    if (!refused) return e;
    this.drop(id);
    return new UndeliverableCopyError(err.code as string, message, 'unbound');
  }

  private readSubscriptions(): Promise<Subscription[]> {
    const now = this.now();
    if (this.subscriptionsRead === undefined || now - this.subscriptionsRead.at > SUBSCRIPTIONS_READ_MS) {
      this.subscriptionsRead = { at: now, subs: this.store.subscriptions() };
      this.subscriptionsRead.subs.catch(() => (this.subscriptionsRead = undefined));
    }
    return this.subscriptionsRead.subs;
  }

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
    this.drop(b.id); // a replayed binding may name another subscription now
    this.bound.set(b.id, sub);
    const key = subscriptionKey(sub.topic, sub.function_id, sub.queue);
    const ids = this.held.get(key);
    if (ids) ids.push(b.id);
    else this.held.set(key, [b.id]);
    this.onBound(sub.function_id);
  }

  /** The binding left (its worker disconnected, or unbound it): the subscription ages out after the retention. */
  async unregister(b: TriggerBinding): Promise<void> {
    const sub = this.drop(b.id);
    if (sub) await this.store.subscribe([sub], this.now());
  }

  private drop(id: string): Bound | undefined {
    const sub = this.bound.get(id);
    if (!sub) return undefined;
    this.bound.delete(id);
    const key = subscriptionKey(sub.topic, sub.function_id, sub.queue);
    const ids = this.held.get(key)?.filter((x) => x !== id) ?? [];
    if (ids.length > 0) this.held.set(key, ids);
    else this.held.delete(key);
    return sub;
  }
}
