/**
 * svc-queue's functions as plain handlers: payload validation and the calls into the dispatcher
 * and the store. worker.ts puts them on the wire; tests call them directly too. Names follow
 * docs/queues.md; iii's names (iii-protocol.md §4) are aliases of the same handlers.
 */
import { describe, hasLoneSurrogate } from '../shared/describe.js';
import { DEFAULT_QUEUE, settingsView, unconfiguredQueueHint, type QueueSettings, type QueueWorkerConfig } from './config.js';
import type { Dispatcher } from './dispatcher.js';
import { jobId } from './job-id.js';
import { liveSince } from './topics.js';
import { MAX_NAME_BYTES, QueueError, type JobState, type JobView, type QueueCounts, type QueueStore, type Subscription } from './store.js';

/** The part of a handler's context svc-queue reads (svc-sdk's InvocationContext has it). */
export interface CallInfo {
  traceparent?: string | undefined;
  metadata?: unknown;
}

export interface QueueView extends QueueCounts {
  configured: boolean;
  config: Record<string, unknown> | null;
}

type Handler = (data: unknown, ctx?: CallInfo) => Promise<unknown>;

export const FUNCTION_DESCRIPTIONS: Record<string, string> = {
  'engine::queue::enqueue':
    'Store a job {queue, function_id, data} durably; the function runs later. What invokefunction with action {type: "enqueue", queue} calls. Returns {messageReceiptId}: the job id.',
  'queue::publish': 'Publish {topic, data}: every function subscribed through a durable:subscriber trigger gets its own copy as a job. Returns {topic, message_id, copies}.',
  'queue::list': 'Every queue with its counts (waiting, delayed, running, dlq, completed, failed) and settings; topics and their subscribers.',
  'queue::stats': 'One queue {queue}: counts and settings.',
  'queue::jobs': 'Jobs of {queue, state: waiting|delayed|running|dlq, offset?, limit? (at most 100)}, with the count of that state, read together.',
  'queue::dlq::list': 'Dead-lettered jobs of {queue, offset?, limit?}: payload, last error, attempt history; with the DLQ size, read together.',
  'queue::dlq::redrive': 'Move dead-lettered jobs of {queue, id? | ids?} (none given: all) back to the queue with their attempts reset. Returns {queue, redriven}.',
  'queue::dlq::delete': 'Delete dead-lettered jobs of {queue, id? | ids?} (none given: all). Returns {queue, deleted}.',
  'queue::purge': 'Delete the waiting and delayed jobs of {queue} (running jobs finish, the DLQ stays). Returns {queue, purged}.',
  'iii::durable::publish': "iii's name for queue::publish {topic, data}.",
  'iii::queue::redrive': "iii's name for redriving all of a queue's DLQ {queue}. Returns {queue, redriven}.",
  'iii::queue::redrive_message': "iii's name for redriving one dead-lettered job {queue, message_id}. Returns {queue, message_id, redriven}.",
  'iii::queue::discard_message': "iii's name for deleting one dead-lettered job {queue, message_id}. Returns {queue, message_id, discarded}.",
};

const LIST_LIMIT = 100;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;

function payloadObject(fn: string, data: unknown): Record<string, unknown> {
  if (data === undefined || data === null) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new QueueError('invalid_payload', `${fn}: payload must be an object, got ${describe(data)}`);
  return data as Record<string, unknown>;
}

function name(fn: string, field: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0) throw new QueueError('invalid_payload', `${fn}: "${field}" must be a non-empty string, got ${describe(v)}`);
  if (v.length > MAX_NAME_BYTES || Buffer.byteLength(v) > MAX_NAME_BYTES || CONTROL.test(v)) {
    throw new QueueError('invalid_payload', `${fn}: "${field}" must be at most ${MAX_NAME_BYTES} bytes without control characters, got ${describe(v)}`);
  }
  if (hasLoneSurrogate(v)) throw new QueueError('invalid_payload', `${fn}: "${field}" ${describe(v)} is not valid Unicode (lone surrogate)`);
  return v;
}

/** A payload's JSON text and size, or payload_too_large naming the limit. */
function encode(fn: string, what: string, data: unknown, max: number): { text: string; bytes: number } {
  const text = JSON.stringify(data === undefined ? null : data);
  const bytes = text.length * 3 <= max ? text.length : Buffer.byteLength(text);
  if (bytes > max) throw new QueueError('payload_too_large', `${fn}: ${what} is ${bytes} bytes of JSON; the limit (max_payload_bytes) is ${max}`);
  return { text, bytes };
}

/** The message group of a payload in a queue ordered by message_group_field. */
function groupOf(s: QueueSettings, data: unknown): string | null | undefined {
  const field = s.messageGroupField;
  if (field === null) return null;
  const v = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>)[field] : undefined;
  if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return undefined;
  const g = String(v);
  return Buffer.byteLength(g) <= MAX_NAME_BYTES ? g : undefined;
}

function ids(fn: string, p: Record<string, unknown>): string[] | null {
  if (p.id !== undefined && p.ids !== undefined) throw new QueueError('invalid_payload', `${fn}: give "id" or "ids", not both`);
  if (p.id !== undefined) return [name(fn, 'id', p.id)];
  if (p.ids === undefined) return null;
  if (!Array.isArray(p.ids) || p.ids.length === 0 || p.ids.length > 10_000) throw new QueueError('invalid_payload', `${fn}: "ids" must be a list of 1 to 10000 job ids, got ${describe(p.ids)}`);
  return p.ids.map((x, i) => name(fn, `ids[${i}]`, x));
}

function int(fn: string, field: string, v: unknown, def: number, max: number): number {
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) throw new QueueError('invalid_payload', `${fn}: "${field}" must be an integer from 0 to ${max}, got ${describe(v)}`);
  return v;
}

export function queueFunctions(dispatcher: Dispatcher, store: QueueStore, config: QueueWorkerConfig, now: () => number = Date.now): Record<string, Handler> {
  const configured = (fn: string, v: unknown, code: 'enqueue_error' | 'unknown_queue' = 'unknown_queue'): QueueSettings => {
    const q = name(fn, 'queue', v);
    const s = config.queues.get(q);
    if (!s) {
      throw new QueueError(code, `${fn}: queue ${JSON.stringify(q)} is not configured; ${unconfiguredQueueHint(config, q)}`);
    }
    return s;
  };
  /** A queue to read or clean up: configured, or still holding jobs in the store. */
  const known = async (fn: string, v: unknown): Promise<string> => {
    const q = name(fn, 'queue', v);
    if (config.queues.has(q)) return q;
    if ((await store.counts([])).some((c) => c.queue === q)) return q;
    configured(fn, q);
    return q;
  };
  const view = (c: QueueCounts): QueueView => {
    const s = config.queues.get(c.queue);
    return { ...c, configured: s !== undefined, config: s ? settingsView(s) : null };
  };

  const enqueue: Handler = async (data, ctx) => {
    const fn = 'engine::queue::enqueue';
    const p = payloadObject(fn, data);
    const s = configured(fn, p.queue ?? DEFAULT_QUEUE, 'enqueue_error');
    const functionId = name(fn, 'function_id', p.function_id);
    // svc-queue names its jobs itself (time-ordered ids, job-id.ts); the engine's suggestion is not used.
    const id = jobId();
    const { text, bytes } = encode(fn, `the job for ${functionId}`, p.data, config.maxPayloadBytes);
    const group = groupOf(s, p.data);
    if (group === undefined) {
      throw new QueueError('enqueue_error', `${fn}: queue "${s.name}" runs jobs in order per message group, by the payload field ${JSON.stringify(s.messageGroupField)}; this payload has no such field holding a string, number or boolean of at most ${MAX_NAME_BYTES} bytes`);
    }
    await dispatcher.enqueue({
      id,
      queue: s.name,
      functionId,
      data: text,
      bytes,
      group,
      runAt: s.delayMs > 0 ? now() + s.delayMs : 0,
      traceparent: ctx?.traceparent ?? null,
      metadata: ctx?.metadata === undefined || ctx.metadata === null ? null : JSON.stringify(ctx.metadata),
      topic: null,
      binding: null,
    });
    return { messageReceiptId: id };
  };

  const publish: Handler = async (data, ctx) => {
    const fn = 'queue::publish';
    const p = payloadObject(fn, data);
    const topic = name(fn, 'topic', p.topic);
    const { text, bytes } = encode(fn, `the message for topic ${JSON.stringify(topic)}`, p.data, config.maxPayloadBytes);
    const groups: Record<string, string> = {};
    const delays: Record<string, number> = {};
    for (const s of config.queues.values()) {
      // A copy whose data lacks the queue's group field runs ungrouped there.
      const g = groupOf(s, p.data);
      if (typeof g === 'string') groups[s.name] = g;
      if (s.delayMs > 0) delays[s.name] = s.delayMs;
    }
    const t = now();
    const id = jobId(t);
    const copies = await dispatcher.publish({ topic, id, data: text, bytes, traceparent: ctx?.traceparent ?? null, groups, delays, liveSince: liveSince(config, t) });
    return { topic, message_id: id, copies };
  };

  const list = async (fn: string, q: string, state: JobState, p: Record<string, unknown>): Promise<{ queue: string; state: JobState; total: number; jobs: JobView[] }> => {
    const offset = int(fn, 'offset', p.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = int(fn, 'limit', p.limit, 50, LIST_LIMIT);
    const r = await store.list(q, state, offset, limit);
    return { queue: q, state, total: r.total, jobs: r.jobs };
  };

  const redrive = async (q: string, which: string[] | null): Promise<number> => {
    const n = await store.redrive(q, which, now());
    if (n > 0) dispatcher.kick(q);
    return n;
  };

  return {
    'engine::queue::enqueue': enqueue,
    'queue::publish': publish,
    'iii::durable::publish': publish,
    'queue::list': async (data) => {
      payloadObject('queue::list', data);
      const counts = await store.counts([...config.queues.keys()]);
      counts.sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
      const subs = await store.subscriptions();
      const since = liveSince(config, now());
      const topics = new Map<string, Array<Subscription & { live: boolean }>>();
      for (const s of subs) topics.set(s.topic, [...(topics.get(s.topic) ?? []), { ...s, live: s.seen_at >= since }]);
      return {
        queues: counts.map(view),
        topics: [...topics].map(([topic, subscribers]) => ({ topic, subscribers })),
        absent_functions: dispatcher.absentFunctions(),
        at: now(),
      };
    },
    'queue::stats': async (data) => {
      const q = await known('queue::stats', payloadObject('queue::stats', data).queue);
      const c = (await store.counts([q])).find((x) => x.queue === q)!;
      return { ...view(c), at: now() };
    },
    'queue::jobs': async (data) => {
      const fn = 'queue::jobs';
      const p = payloadObject(fn, data);
      const q = await known(fn, p.queue);
      const state = p.state ?? 'waiting';
      if (state !== 'waiting' && state !== 'delayed' && state !== 'running' && state !== 'dlq') {
        throw new QueueError('invalid_payload', `${fn}: "state" must be waiting, delayed, running or dlq, got ${describe(state)}`);
      }
      return list(fn, q, state, p);
    },
    'queue::dlq::list': async (data) => {
      const fn = 'queue::dlq::list';
      const p = payloadObject(fn, data);
      const { queue, total, jobs } = await list(fn, await known(fn, p.queue), 'dlq', p);
      return { queue, total, jobs };
    },
    'queue::dlq::redrive': async (data) => {
      const fn = 'queue::dlq::redrive';
      const p = payloadObject(fn, data);
      const q = await known(fn, p.queue);
      return { queue: q, redriven: await redrive(q, ids(fn, p)) };
    },
    'queue::dlq::delete': async (data) => {
      const fn = 'queue::dlq::delete';
      const p = payloadObject(fn, data);
      const q = await known(fn, p.queue);
      return { queue: q, deleted: await store.deleteDead(q, ids(fn, p)) };
    },
    'queue::purge': async (data) => {
      const fn = 'queue::purge';
      const q = await known(fn, payloadObject(fn, data).queue);
      const purged = await store.purge(q);
      dispatcher.recheckAbsent();
      return { queue: q, purged };
    },
    'iii::queue::redrive': async (data) => {
      const fn = 'iii::queue::redrive';
      const q = await known(fn, payloadObject(fn, data).queue);
      return { queue: q, redriven: await redrive(q, null) };
    },
    'iii::queue::redrive_message': async (data) => {
      const fn = 'iii::queue::redrive_message';
      const p = payloadObject(fn, data);
      const q = await known(fn, p.queue);
      const id = name(fn, 'message_id', p.message_id);
      return { queue: q, message_id: id, redriven: await redrive(q, [id]) };
    },
    'iii::queue::discard_message': async (data) => {
      const fn = 'iii::queue::discard_message';
      const p = payloadObject(fn, data);
      const q = await known(fn, p.queue);
      const id = name(fn, 'message_id', p.message_id);
      return { queue: q, message_id: id, discarded: await store.deleteDead(q, [id]) };
    },
  };
}
