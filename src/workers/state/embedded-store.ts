/**
 * The default store: LMDB through the `lmdb` package (docs/design.md, "State store: embedded
 * database choice", has the measurement behind the choice).
 *
 * Durability: `overlappingSync: false` makes every commit fdatasync before its promise resolves,
 * so a write acknowledged to a caller survives kill -9 and a machine crash. Throughput comes from
 * lmdb's group commit: every write issued in one event-loop turn shares one transaction and one
 * sync, off the main thread.
 *
 * Layout: one LMDB environment in `dataDir`; key = u16 length of scope + scope + key (UTF-8), so
 * a scope's keys are one contiguous range and scopes can be listed by seeking past each one.
 * Values are their JSON text.
 */
import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import { applyOps } from './ops.js';
import { StateError, checkSize, type Change, type Entry, type JsonValue, type StateStore, type StoreLimits, type UpdateOp } from './store.js';

export interface EmbeddedStoreOptions extends StoreLimits {
  dataDir: string;
}

export async function openEmbeddedStore(opts: EmbeddedStoreOptions): Promise<StateStore> {
  mkdirSync(opts.dataDir, { recursive: true });
  let db: RootDatabase<string, Buffer>;
  try {
    db = open<string, Buffer>({
      path: opts.dataDir,
      keyEncoding: 'binary',
      encoding: 'string',
      overlappingSync: false,
      // Values are read once per call and parsed; a cache would only hold duplicate strings.
      cache: false,
    });
  } catch (e) {
    throw new StateError('store_unavailable', `embedded store: cannot open ${JSON.stringify(opts.dataDir)}: ${(e as Error).message}`);
  }
  return new EmbeddedStore(db, opts);
}

function scopePrefix(scope: string): Buffer {
  const s = Buffer.from(scope, 'utf8');
  const b = Buffer.allocUnsafe(2 + s.length);
  b.writeUInt16BE(s.length, 0);
  s.copy(b, 2);
  return b;
}

function dbKey(scope: string, key: string): Buffer {
  return Buffer.concat([scopePrefix(scope), Buffer.from(key, 'utf8')]);
}

/** The smallest buffer greater than every buffer that starts with `prefix`. */
function afterPrefix(prefix: Buffer): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      b[i]! += 1;
      return b.subarray(0, i + 1);
    }
  }
  return Buffer.concat([b, Buffer.from([0xff])]); // unreachable for our prefixes (length < 0xffff)
}

class EmbeddedStore implements StateStore {
  constructor(
    private readonly db: Database<string, Buffer>,
    private readonly limits: StoreLimits,
  ) {}

  async get(scope: string, key: string): Promise<JsonValue> {
    const raw = this.db.get(dbKey(scope, key));
    return raw === undefined ? null : (JSON.parse(raw) as JsonValue);
  }

  set(scope: string, key: string, json: string): Promise<Change> {
    const k = dbKey(scope, key);
    const value = JSON.parse(json) as JsonValue;
    return this.db.transaction(() => {
      const old = this.db.get(k);
      this.db.put(k, json);
      return { old_value: old === undefined ? null : (JSON.parse(old) as JsonValue), new_value: value, existed: old !== undefined, exists: true };
    });
  }

  delete(scope: string, key: string): Promise<Change> {
    const k = dbKey(scope, key);
    return this.db.transaction(() => {
      const old = this.db.get(k);
      if (old === undefined) return { old_value: null, new_value: null, existed: false, exists: false };
      this.db.remove(k);
      return { old_value: JSON.parse(old) as JsonValue, new_value: null, existed: true, exists: false };
    });
  }

  update(scope: string, key: string, ops: UpdateOp[]): Promise<Change> {
    const k = dbKey(scope, key);
    // Everything that can throw happens before the put: lmdb does not roll back a callback's
    // writes when it throws, so the write is the last step.
    return this.db.transaction(() => {
      const old = this.db.get(k);
      const oldValue = old === undefined ? undefined : (JSON.parse(old) as JsonValue);
      const working = old === undefined ? undefined : (JSON.parse(old) as JsonValue);
      const next = applyOps(working, ops, `state::update scope ${JSON.stringify(scope)} key ${JSON.stringify(key)}`);
      if (next === undefined) {
        if (old !== undefined) this.db.remove(k);
        return { old_value: oldValue ?? null, new_value: null, existed: old !== undefined, exists: false };
      }
      const json = JSON.stringify(next);
      checkSize('state::update', scope, key, json, this.limits);
      if (json !== old) this.db.put(k, json);
      return { old_value: oldValue ?? null, new_value: next, existed: old !== undefined, exists: true };
    });
  }

  async list(scope: string): Promise<Entry[]> {
    const prefix = scopePrefix(scope);
    const out: Entry[] = [];
    for (const { key, value } of this.db.getRange({ start: prefix, end: afterPrefix(prefix) })) {
      out.push({ key: (key as Buffer).subarray(prefix.length).toString('utf8'), value: JSON.parse(value) as JsonValue });
    }
    return out;
  }

  async listGroups(): Promise<string[]> {
    const groups: string[] = [];
    let start: Buffer = Buffer.alloc(0);
    // One seek per scope: jump past each scope's key range instead of reading every key.
    for (;;) {
      let found: Buffer | undefined;
      for (const k of this.db.getKeys({ start, limit: 1 })) found = k as Buffer;
      if (!found) return groups;
      const len = found.readUInt16BE(0);
      const prefix = found.subarray(0, 2 + len);
      groups.push(prefix.subarray(2).toString('utf8'));
      start = afterPrefix(prefix);
    }
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
