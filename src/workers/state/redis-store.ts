/**
 * The Redis store: state shared by several engines and machines. Every write runs inside a Lua
 * script (redis-scripts.ts), so it is atomic on the server; the client never reads-then-writes.
 *
 * Writes are batched: the sets, deletes and updates that arrive together (batcher.ts decides
 * which) leave as one EVALSHA of WRITE_SCRIPT (at most MAX_BATCH writes or about MAX_BATCH_CHARS
 * of arguments each), in the order they were issued, and each write gets its own answer. A read
 * first sends the writes queued before it, so commands reach Redis in the order they were issued.
 * One command per burst instead of one per write is what makes this store cheap per call
 * (bench/RESULTS.md).
 *
 * Layout: `<prefix>:scope:<scope>` is a hash of key → JSON text; `<prefix>:scopes` is the set of
 * non-empty scopes (kept by the script, so list_groups does not scan the keyspace).
 */
import { redactAddress } from 'svc-sdk';
import { TurnBatcher } from '../shared/batcher.js';
import { connectRedis, RedisScript, type RedisClient } from '../shared/redis.js';
import { WRITE_SCRIPT } from './redis-scripts.js';
import {
  StateError,
  entryBytes,
  pathText,
  type Change,
  type Entry,
  type JsonValue,
  type ListPage,
  type OpError,
  type StateErrorCode,
  type StateStore,
  type StoreLimits,
  type UpdateChange,
  type UpdateOp,
} from './store.js';

export interface RedisStoreOptions extends StoreLimits {
  url: string;
  /** Prefix of every Redis key this store uses (default `svc:state`). */
  keyPrefix?: string;
  /** How long opening may take before it fails with store_unavailable (shared/redis.ts). */
  connectTimeoutMs?: number;
}
const SCRIPT_CODES = new Set<StateErrorCode>(['type_error', 'invalid_path', 'invalid_op', 'value_too_large']);
/** Bounds of one script run, so one burst never holds Redis (a single-threaded server) for long. */
const MAX_BATCH = 128;
const MAX_BATCH_CHARS = 1 << 20;
/**
 * No per-command timer: node-redis arms an AbortSignal.timeout (5 s by default) for every command
 * (about 6 % of svc-state's CPU in the benchmark, even with batches), and it only covers the wait
 * before the command is written (the timer is dropped once it is on the socket). With
 * disableOfflineQueue a command is refused at once while Redis is unreachable, and the engine's
 * invocation deadline bounds every call.
 */
const WRITE_OPTIONS = { timeout: 0 };

export async function openRedisStore(opts: RedisStoreOptions): Promise<StateStore> {
  const client = await connectRedis(opts.url, {
    what: 'redis store',
    unavailable: (m) => new StateError('store_unavailable', m),
    ...(opts.connectTimeoutMs !== undefined ? { timeoutMs: opts.connectTimeoutMs } : {}),
  });
  const store = new RedisStore(client, opts);
  try {
    await store.loadScript();
  } catch (e) {
    client.destroy();
    throw new StateError('store_unavailable', `redis store at ${redactAddress(opts.url)}: cannot load its script: ${(e as Error).message}`);
  }
  return store;
}

const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
/** Values fetched per HMGET while listing. */
const LIST_CHUNK = 256;

/** Keys in UTF-8 byte order (the embedded store's), each encoded once. */
function sortedUtf8(keys: string[]): Array<{ key: string; utf8: Buffer }> {
  return keys.map((key) => ({ key, utf8: Buffer.from(key, 'utf8') })).sort((a, b) => Buffer.compare(a.utf8, b.utf8));
}

/** Index of the first of the sorted keys after `after`. */
function firstAfter(keys: Array<{ utf8: Buffer }>, after: string): number {
  const a = Buffer.from(after, 'utf8');
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (Buffer.compare(keys[mid]!.utf8, a) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
const parseOld = (old: string): JsonValue => (old === '' ? null : (JSON.parse(old) as JsonValue));

/** A write waiting to be sent (batcher.ts decides when). */
type Queued = { scope: string; key: string; reject(e: Error): void } & (
  | { kind: 's'; json: string; resolve(c: Change): void }
  | { kind: 'd'; resolve(c: Change): void }
  | { kind: 'u'; ops: UpdateOp[]; atomic: boolean; resolve(c: UpdateChange): void }
);

/**
 * WRITE_SCRIPT's answer: per write, old and new JSON text ("" when absent) and the failed ops of a
 * best-effort update (JSON, or ""), or null, the error and "".
 */
type Replies = Array<string | null>;

class RedisStore implements StateStore {
  private readonly prefix: string;
  private readonly scopesKey: string;
  /** Length of `<prefix>:scope:` as text: WRITE_SCRIPT recovers a hash's scope from its name. */
  private readonly hashPrefixLength: string;
  private readonly script: RedisScript;
  private readonly batcher = new TurnBatcher<Queued>((writes) => {
    for (let from = 0; from < writes.length; ) from = this.send(writes, from);
  });
  /** Commands sent and not answered yet (batches and reads), so close() can wait for them. */
  private pending = 0;
  private idle: (() => void) | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly opts: RedisStoreOptions,
  ) {
    this.script = new RedisScript(client, WRITE_SCRIPT);
    this.prefix = opts.keyPrefix ?? 'svc:state';
    this.scopesKey = `${this.prefix}:scopes`;
    this.hashPrefixLength = String(Buffer.byteLength(this.hash(''), 'utf8'));
  }

  loadScript(): Promise<void> {
    return this.script.load();
  }

  private hash(scope: string): string {
    return `${this.prefix}:scope:${scope}`;
  }

  /** One EVALSHA for queue[from..]; returns where the next batch starts. */
  private send(queue: Queued[], from: number): number {
    const keys = [this.scopesKey];
    const keyIndex = new Map<string, string>();
    const args = [String(this.opts.maxValueBytes), this.hashPrefixLength];
    let chars = 0;
    let to = from;
    for (; to < queue.length && to - from < MAX_BATCH && chars < MAX_BATCH_CHARS; to++) {
      const w = queue[to]!;
      let k = keyIndex.get(w.scope);
      if (k === undefined) {
        k = String(keys.push(this.hash(w.scope)));
        keyIndex.set(w.scope, k);
      }
      args.push(w.kind === 'u' && w.atomic ? 'a' : w.kind, k, w.key);
      chars += w.key.length;
      if (w.kind === 's') {
        args.push(w.json);
        chars += w.json.length;
      } else if (w.kind === 'u') {
        args.push(String(w.ops.length));
        for (const op of w.ops) {
          const operand = op.type === 'increment' || op.type === 'decrement' ? String(op.by) : op.type === 'remove' ? '' : JSON.stringify(op.value);
          // "appendf": an append on a field name (UpdateOp's `field`), which starts a string from nothing.
          args.push(op.type === 'append' && op.field ? 'appendf' : op.type, op.path.length === 0 ? '[]' : JSON.stringify(op.path), operand);
          chars += operand.length;
        }
      }
    }
    const batch = queue.slice(from, to);
    this.pending++;
    this.runWrite(keys, args).then(
      (replies) => {
        for (let i = 0; i < batch.length; i++) this.settle(batch[i]!, replies[3 * i], replies[3 * i + 1], replies[3 * i + 2]);
        this.done();
      },
      (e: Error) => {
        for (const w of batch) w.reject(unavailable(whereOf(w), this.opts.url, e));
        this.done();
      },
    );
    return to;
  }

  private done(): void {
    if (--this.pending === 0) this.idle?.();
  }

  private runWrite(keys: string[], args: string[]): Promise<Replies> {
    return this.script.run<Replies>(keys, args, WRITE_OPTIONS);
  }

  private settle(w: Queued, old: string | null | undefined, next: string | null | undefined, failed: string | null | undefined): void {
    try {
      if (typeof next !== 'string') throw new Error('no answer for this write in the script reply');
      if (old === null || old === undefined) {
        const e = new Error(next);
        throw w.kind === 'u' ? scriptError(e.message, whereOf(w), w.ops, this.opts.maxValueBytes) ?? e : e;
      }
      if (w.kind === 's') {
        w.resolve({ old_value: parseOld(old), new_value: JSON.parse(w.json) as JsonValue, existed: old !== '', exists: true });
      } else if (w.kind === 'd') {
        w.resolve({ old_value: parseOld(old), new_value: null, existed: old !== '', exists: false });
      } else {
        const errors = failed ? opErrors(failed, whereOf(w), w.ops, this.opts.maxValueBytes) : [];
        w.resolve({ old_value: parseOld(old), new_value: parseOld(next), existed: old !== '', exists: next !== '', errors });
      }
    } catch (e) {
      w.reject(e instanceof StateError ? e : unavailable(whereOf(w), this.opts.url, e as Error));
    }
  }

  /** A read: first send the writes queued before it, so it sees them. */
  private async read<T>(what: string, f: () => Promise<T>): Promise<T> {
    this.batcher.flush();
    this.pending++;
    try {
      return await f();
    } catch (e) {
      throw unavailable(what, this.opts.url, e as Error);
    } finally {
      this.done();
    }
  }

  get(scope: string, key: string): Promise<JsonValue> {
    return this.read('state::get', async () => {
      const raw = await this.client.hGet(this.hash(scope), key);
      return raw == null ? null : (JSON.parse(raw) as JsonValue);
    });
  }

  set(scope: string, key: string, json: string): Promise<Change> {
    return new Promise((resolve, reject) => this.batcher.push({ kind: 's', scope, key, json, resolve, reject }));
  }

  delete(scope: string, key: string): Promise<Change> {
    return new Promise((resolve, reject) => this.batcher.push({ kind: 'd', scope, key, resolve, reject }));
  }

  update(scope: string, key: string, ops: UpdateOp[], atomic: boolean): Promise<UpdateChange> {
    return new Promise((resolve, reject) => this.batcher.push({ kind: 'u', scope, key, ops, atomic, resolve, reject }));
  }

  /**
   * A hash has no key order: the keys are read (HKEYS, small next to the values), sorted, and
   * only the page's values fetched (HMGET, in chunks). A key deleted in between is left out.
   * Each page reads every key of the scope once: fine for the scopes a page is made for (values
   * that do not fit in one answer), costly for millions of keys.
   */
  listPage(scope: string, after: string | undefined, limit: number, maxBytes: number): Promise<ListPage> {
    return this.read('state::list', async () => {
      const hash = this.hash(scope);
      const keys = sortedUtf8(await this.client.hKeys(hash));
      const out: Entry[] = [];
      let bytes = 0;
      for (let i = after === undefined ? 0 : firstAfter(keys, after); i < keys.length; ) {
        const chunk = keys.slice(i, i + Math.min(LIST_CHUNK, limit - out.length + 1)).map((k) => k.key);
        i += chunk.length;
        const values = await this.client.hmGet(hash, chunk);
        for (let j = 0; j < chunk.length; j++) {
          const v = values[j];
          if (v == null) continue;
          const size = entryBytes(chunk[j]!, v);
          if (out.length >= limit || (out.length > 0 && bytes + size > maxBytes)) return { entries: out, next: out[out.length - 1]!.key };
          bytes += size;
          out.push({ key: chunk[j]!, value: JSON.parse(v) as JsonValue });
        }
      }
      return { entries: out, next: null };
    });
  }

  listGroups(): Promise<string[]> {
    return this.read('state::list_groups', async () => (await this.client.sMembers(this.scopesKey)).sort(byUtf8));
  }

  async close(): Promise<void> {
    this.batcher.flush();
    if (this.pending > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    try {
      await this.client.close();
    } catch {
      this.client.destroy();
    }
  }
}

/** The context a write's errors name: the function, and for an update its scope and key. */
function whereOf(w: Queued): string {
  return w.kind === 's' ? 'state::set' : w.kind === 'd' ? 'state::delete' : `state::update scope ${JSON.stringify(w.scope)} key ${JSON.stringify(w.key)}`;
}

function unavailable(what: string, url: string, e: Error): StateError {
  return new StateError('store_unavailable', `${what}: redis store at ${redactAddress(url)} failed: ${e.message}`);
}

/** Turn the script's "<code> <op index> <detail>" error into the same StateError ops.ts throws. */
function scriptError(text: string, where: string, ops: UpdateOp[], max: number): StateError | undefined {
  const m = /^(\w+) (-?\d+) ([\s\S]*)$/.exec(text);
  if (!m || !SCRIPT_CODES.has(m[1] as StateErrorCode)) return undefined;
  const code = m[1] as StateErrorCode;
  const i = Number(m[2]);
  // Redis may append " script: <sha>, on @user_script:<line>." to a raised error.
  const detail = m[3]!.replace(/ script: \w+, on @user_script:\d+\.$/, '');
  if (code === 'value_too_large') {
    return new StateError(code, `${where}: the updated value is ${detail} bytes of JSON; the limit (max_value_bytes) is ${max}; nothing was written`);
  }
  const op = ops[i];
  const ctx = op ? `${where}: ops[${i}] (${op.type} at ${pathText(op.path)})` : where;
  return new StateError(code, `${ctx}: ${detail}`);
}

/** The failed ops of a best-effort update: the script's JSON array of its error texts. */
function opErrors(json: string, where: string, ops: UpdateOp[], max: number): OpError[] {
  return (JSON.parse(json) as string[]).map((text) => {
    const e = scriptError(text, where, ops, max);
    if (!e) throw new Error(`unexpected op error from the script: ${text}`);
    return { op_index: Number(/^\w+ (\d+)/.exec(text)![1]), code: e.code, message: e.message };
  });
}
