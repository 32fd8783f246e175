/**
 * The Redis queue store: queues shared by several svc-queue replicas (and engines). Every change is
 * one run of QUEUE_SCRIPT (redis-scripts.ts), atomic on the server; a step (the changes of one
 * event-loop turn, dispatcher.ts) is one EVALSHA. The script's claims keep to each queue's
 * concurrency across all replicas, since they count the running jobs in Redis itself.
 */
import { redactAddress } from 'svc-sdk';
import { connectRedis, RedisScript, type RedisClient } from '../shared/redis.js';
import { QUEUE_SCRIPT } from './redis-scripts.js';
import {
  QueueError,
  queueFullMessage,
  type AttemptRecord,
  type ClaimedJob,
  type JobState,
  type JobView,
  type QueueCounts,
  type QueueErrorBody,
  type QueueLimits,
  type QueueStore,
  type StepInput,
  type StepOutput,
  type Subscription,
} from './store.js';

export interface RedisQueueStoreOptions {
  url: string;
  /** Prefix of every Redis key this store uses (default `svc:queue`). */
  keyPrefix?: string;
  /** How long opening may take before it fails with store_unavailable (shared/redis.ts). */
  connectTimeoutMs?: number;
}

/** No per-command timer (see the state store's redis-store.ts): calls are bounded by the engine's deadlines. */
const COMMAND_OPTIONS = { timeout: 0 };

export async function openRedisQueueStore(opts: RedisQueueStoreOptions): Promise<QueueStore> {
  const client = await connectRedis(opts.url, {
    what: 'redis queue store',
    unavailable: (m) => new QueueError('store_unavailable', m),
    ...(opts.connectTimeoutMs !== undefined ? { timeoutMs: opts.connectTimeoutMs } : {}),
  });
  const store = new RedisQueueStore(client, opts);
  try {
    await store.loadScript();
  } catch (e) {
    client.destroy();
    throw new QueueError('store_unavailable', `redis queue store at ${redactAddress(opts.url)}: cannot load its script: ${(e as Error).message}`);
  }
  return store;
}

/** cjson writes an empty Lua table as `{}`: an empty list here. */
function arr<T>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}
const opt = (v: unknown): string | null => (typeof v === 'string' ? v : null);

type ClaimedRow = [string, string, string, string, number, number, string | false, number, string | false, string | false, string | false, string | false];

function claimedOf(r: ClaimedRow): ClaimedJob {
  return {
    id: r[0],
    queue: r[1],
    functionId: r[2],
    data: r[3],
    attempt: r[4],
    failures: r[5],
    group: opt(r[6]),
    enqueuedAt: r[7],
    traceparent: opt(r[8]),
    metadata: opt(r[9]),
    topic: opt(r[10]),
    binding: opt(r[11]),
  };
}

function historyOf(text: string | undefined): AttemptRecord[] {
  return text ? text.split('\n').map((line) => JSON.parse(line) as AttemptRecord) : [];
}

const STATE_OF: Record<string, JobState> = { w: 'waiting', d: 'delayed', r: 'running', x: 'dlq' };

function viewOf(flat: string[]): JobView {
  const h: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) h[flat[i]!] = flat[i + 1]!;
  const history = historyOf(h.hist);
  const last = history[history.length - 1];
  const state = STATE_OF[h.st ?? ''] ?? 'waiting';
  return {
    id: h.id!,
    queue: h.q!,
    state,
    function_id: h.fn!,
    data: JSON.parse(h.data ?? 'null') as unknown,
    attempts: Number(h.att ?? 0),
    failures: Number(h.fails ?? 0),
    group: h.grp ?? null,
    topic: h.topic ?? null,
    enqueued_at: Number(h.enq ?? 0),
    at: state === 'delayed' ? Number(h.run) : state === 'running' ? Number(h.lease) : state === 'dlq' ? Number(h.dead) : null,
    error: last ? { code: last.code, message: last.message } : null,
    history,
  };
}

class RedisQueueStore implements QueueStore {
  private readonly prefix: string;
  private readonly script: RedisScript;
  /** Commands sent and not answered yet, so close() can wait for them. */
  private pending = 0;
  private idle: (() => void) | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly opts: RedisQueueStoreOptions,
  ) {
    this.prefix = opts.keyPrefix ?? 'svc:queue';
    this.script = new RedisScript(client, QUEUE_SCRIPT);
  }

  loadScript(): Promise<void> {
    return this.script.load();
  }

  /** One script run. */
  private async run(op: string, input: unknown): Promise<unknown> {
    this.pending++;
    try {
      return await this.script.run<unknown>([], [op, this.prefix, JSON.stringify(input)], COMMAND_OPTIONS);
    } catch (e) {
      if (e instanceof QueueError) throw e;
      throw new QueueError('store_unavailable', `redis queue store at ${redactAddress(this.opts.url)}: ${op} failed: ${(e as Error).message}`);
    } finally {
      if (--this.pending === 0) this.idle?.();
    }
  }

  private async runJson<T>(op: string, input: unknown): Promise<T> {
    return JSON.parse(String(await this.run(op, input))) as T;
  }

  async step(input: StepInput): Promise<StepOutput> {
    const x = {
      now: input.now,
      limits: input.limits,
      enqueue: input.enqueue.map((e) => [e.id, e.queue, e.functionId, e.data, e.bytes, e.group ?? false, e.runAt, e.traceparent ?? false, e.metadata ?? false, e.topic ?? false, e.binding ?? false]),
      publish: input.publish.map((p) => [p.topic, p.id, p.data, p.bytes, p.traceparent ?? false, p.groups, p.delays, p.liveSince]),
      complete: input.complete.map((c) => [c.id, c.attempt]),
      fail: input.fail.map((f) => [f.id, f.attempt, f.outcome, f.runAt, f.record ? JSON.stringify(f.record) : false]),
      claim: input.claim,
      absent: input.absent,
      maintain: input.maintain,
    };
    const r = await this.runJson<{ enqueued: unknown; published: unknown; claimed: unknown; expired: unknown; due: number | false }>('step', x);
    const enqueued = arr<false | [string, string, number?, number?]>(r.enqueued);
    const published = Array.isArray(r.published) ? (r.published as Array<Record<string, number> | [string, string, number, number]>) : [];
    return {
      enqueued: input.enqueue.map((e, i) => refusal(enqueued[i] ?? false, input.limits, e.bytes)),
      published: input.publish.map((p, i) => {
        const v = published[i];
        if (v !== undefined && !Array.isArray(v)) return { copies: Object.values(v).reduce((a, n) => a + n, 0), queues: v };
        const body = refusal(v ?? false, input.limits, p.bytes);
        return body ? { code: body.code, message: `topic "${p.topic}": ${body.message}` } : { copies: 0, queues: {} };
      }),
      claimed: arr<ClaimedRow>(r.claimed).map(claimedOf),
      expired: arr<ClaimedRow>(r.expired).map(claimedOf),
      nextDueAt: typeof r.due === 'number' ? r.due : null,
    };
  }

  async counts(queues: string[]): Promise<QueueCounts[]> {
    const rows = arr<[string, number, number, number, number, number, number, number, number]>(await this.runJson('counts', queues));
    return rows.map(([queue, waiting, delayed, running, dlq, completed, failed, jobs, bytes]) => ({ queue, waiting, delayed, running, dlq, completed, failed, jobs, bytes }));
  }

  async list(queue: string, state: JobState, offset: number, limit: number): Promise<{ total: number; jobs: JobView[] }> {
    const r = await this.runJson<{ total: number; jobs: unknown }>('list', { queue, state, offset, limit });
    return { total: r.total, jobs: arr<string[]>(r.jobs).map(viewOf) };
  }

  async redrive(queue: string, ids: string[] | null, now: number): Promise<number> {
    return Number(await this.run('redrive', { queue, ids: ids ?? false, now }));
  }

  async deleteDead(queue: string, ids: string[] | null): Promise<number> {
    return Number(await this.run('delete', { queue, ids: ids ?? false }));
  }

  async purge(queue: string): Promise<number> {
    let total = 0;
    for (;;) {
      const [n, more] = await this.runJson<[number, boolean]>('purge', { queue });
      total += n;
      if (!more) return total;
    }
  }

  async subscribe(subs: Array<Omit<Subscription, 'created_at' | 'seen_at'>>, now: number): Promise<void> {
    if (subs.length > 0) await this.run('subscribe', { subs, now });
  }

  async subscriptions(): Promise<Subscription[]> {
    const rows = arr<[string, string, string]>(await this.runJson('subscriptions', {}));
    return rows.map(([topic, field, json]) => {
      const sep = field.indexOf('\u0000');
      const v = JSON.parse(json) as { binding: string; created_at: number; seen_at: number };
      return { topic, function_id: field.slice(0, sep), queue: field.slice(sep + 1), binding: v.binding, created_at: v.created_at, seen_at: v.seen_at };
    });
  }

  async close(): Promise<void> {
    if (this.pending > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    try {
      await this.client.close();
    } catch {
      this.client.destroy();
    }
  }
}

/** The script's refusal of an enqueue, as the error the caller gets (the same text as the embedded store's). */
function refusal(v: false | [string, string, number?, number?], limits: Record<string, QueueLimits>, bytes: number): QueueErrorBody | null {
  if (v === false) return null;
  const [code, queue, jobs, held] = v;
  if (code === 'queue_full') return { code: 'queue_full', message: queueFullMessage(queue, jobs ?? 0, held ?? 0, limits[queue]!, bytes) };
  return { code: 'enqueue_error', message: `queue "${queue}" is not configured` };
}
