/**
 * The Redis store: state shared by several engines and machines. Every write is one Lua script
 * (redis-scripts.ts), so it is atomic on the server; the client never reads-then-writes.
 *
 * Layout: `<prefix>:scope:<scope>` is a hash of key → JSON text; `<prefix>:scopes` is the set of
 * non-empty scopes (kept by the scripts, so list_groups does not scan the keyspace).
 */
import { createClient, type RedisClientType } from 'redis';
import { DELETE_SCRIPT, SET_SCRIPT, UPDATE_SCRIPT } from './redis-scripts.js';
import { StateError, pathText, type Change, type Entry, type JsonValue, type StateStore, type StoreLimits, type UpdateOp, type StateErrorCode } from './store.js';

export interface RedisStoreOptions extends StoreLimits {
  url: string;
  /** Prefix of every Redis key this store uses (default `svc:state`). */
  keyPrefix?: string;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type Client = RedisClientType<{}, {}, {}, 3, {}>;
const SCRIPT_CODES = new Set<StateErrorCode>(['type_error', 'invalid_path', 'invalid_op', 'value_too_large']);

export async function openRedisStore(opts: RedisStoreOptions): Promise<StateStore> {
  // Fail calls at once while Redis is unreachable (store_unavailable) instead of queueing them.
  const client = createClient({ url: opts.url, disableOfflineQueue: true });
  let lastError = '';
  client.on('error', (e: Error) => {
    lastError = e.message; // reconnects on its own; calls meanwhile fail with store_unavailable
  });
  try {
    await client.connect();
  } catch (e) {
    await client.destroy?.();
    throw new StateError('store_unavailable', `redis store: cannot connect to ${opts.url}: ${(e as Error).message || lastError}`);
  }
  const store = new RedisStore(client, opts);
  await store.loadScripts();
  return store;
}

const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

class RedisStore implements StateStore {
  private readonly prefix: string;
  private sha = { set: '', del: '', update: '' };

  constructor(
    private readonly client: Client,
    private readonly opts: RedisStoreOptions,
  ) {
    this.prefix = opts.keyPrefix ?? 'svc:state';
  }

  async loadScripts(): Promise<void> {
    const [set, del, update] = await Promise.all([SET_SCRIPT, DELETE_SCRIPT, UPDATE_SCRIPT].map((s) => this.client.scriptLoad(s)));
    this.sha = { set: set!, del: del!, update: update! };
  }

  private hash(scope: string): string {
    return `${this.prefix}:scope:${scope}`;
  }
  private scopes(): string {
    return `${this.prefix}:scopes`;
  }

  /** EVALSHA, reloading the scripts once if Redis lost them (restart, SCRIPT FLUSH). */
  private async run(which: keyof RedisStore['sha'], scope: string, args: string[]): Promise<unknown> {
    const call = () => this.client.evalSha(this.sha[which], { keys: [this.hash(scope), this.scopes()], arguments: args });
    try {
      return await call();
    } catch (e) {
      if (!String((e as Error).message).startsWith('NOSCRIPT')) throw e;
      await this.loadScripts();
      return await call();
    }
  }

  private async guard<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      if (e instanceof StateError) throw e;
      throw new StateError('store_unavailable', `${what}: redis store at ${this.opts.url} failed: ${(e as Error).message}`);
    }
  }

  get(scope: string, key: string): Promise<JsonValue> {
    return this.guard('state::get', async () => {
      const raw = await this.client.hGet(this.hash(scope), key);
      return raw == null ? null : (JSON.parse(raw) as JsonValue);
    });
  }

  set(scope: string, key: string, json: string): Promise<Change> {
    return this.guard('state::set', async () => {
      const [old] = (await this.run('set', scope, [key, scope, json])) as [string, string];
      return { old_value: old === '' ? null : (JSON.parse(old) as JsonValue), new_value: JSON.parse(json) as JsonValue, existed: old !== '', exists: true };
    });
  }

  delete(scope: string, key: string): Promise<Change> {
    return this.guard('state::delete', async () => {
      const old = (await this.run('del', scope, [key, scope])) as string;
      return { old_value: old === '' ? null : (JSON.parse(old) as JsonValue), new_value: null, existed: old !== '', exists: false };
    });
  }

  update(scope: string, key: string, ops: UpdateOp[]): Promise<Change> {
    const where = `state::update scope ${JSON.stringify(scope)} key ${JSON.stringify(key)}`;
    return this.guard(where, async () => {
      const args = [key, scope, String(this.opts.maxValueBytes)];
      for (const op of ops) {
        const operand = op.type === 'increment' || op.type === 'decrement' ? String(op.by) : op.type === 'remove' ? '' : JSON.stringify(op.value);
        args.push(op.type, JSON.stringify(op.path), operand);
      }
      let reply: [string, string];
      try {
        reply = (await this.run('update', scope, args)) as [string, string];
      } catch (e) {
        throw scriptError(e as Error, where, ops, this.opts.maxValueBytes);
      }
      const [old, next] = reply;
      return {
        old_value: old === '' ? null : (JSON.parse(old) as JsonValue),
        new_value: next === '' ? null : (JSON.parse(next) as JsonValue),
        existed: old !== '',
        exists: next !== '',
      };
    });
  }

  list(scope: string): Promise<Entry[]> {
    return this.guard('state::list', async () => {
      const all = await this.client.hGetAll(this.hash(scope));
      return Object.keys(all)
        .sort(byUtf8)
        .map((key) => ({ key, value: JSON.parse(all[key]!) as JsonValue }));
    });
  }

  listGroups(): Promise<string[]> {
    return this.guard('state::list_groups', async () => (await this.client.sMembers(this.scopes())).sort(byUtf8));
  }

  async close(): Promise<void> {
    try {
      await this.client.close();
    } catch {
      this.client.destroy();
    }
  }
}

/** Turn the script's "<code> <op index> <detail>" error into the same StateError ops.ts throws. */
function scriptError(e: Error, where: string, ops: UpdateOp[], max: number): Error {
  const m = /^(\w+) (-?\d+) ([\s\S]*)$/.exec(e.message);
  if (!m || !SCRIPT_CODES.has(m[1] as StateErrorCode)) return e;
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
