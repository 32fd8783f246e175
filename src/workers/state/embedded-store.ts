/**
 * The default store: LMDB through the `lmdb` package (docs/design.md, "State store: embedded
 * database choice", has the measurement behind the choice).
 *
 * Durability: every commit is fdatasync'ed (`overlappingSync: false`; LMDB's meta page is written
 * O_DSYNC) before any write in it is answered, so a write acknowledged to a caller survives kill -9
 * and a machine crash.
 *
 * Group commit, synchronous: the writes that arrive together (batcher.ts decides which) are
 * committed in one `transactionSync`, which returns once the commit is on disk; then each write is
 * answered. lmdb's asynchronous
 * `transaction()` would run the same commit on a background thread, but its hand-offs (a thread
 * pool job, a call back into JS for the callbacks, a completion callback) cost more CPU per commit
 * than the commit itself, and svc-state is CPU-bound behind the engine: bench/RESULTS.md
 * (2026-11-22, session 2) measures both through the engine. The price is that the event loop
 * waits for the disk during a commit (a read arriving meanwhile is answered after it).
 *
 * Layout: one LMDB environment in `dataDir`; key = u16 length of scope + scope + key (UTF-8), so
 * a scope's keys are one contiguous range and scopes can be listed by seeking past each one.
 * Values are their JSON text.
 */
import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import { TurnBatcher } from '../shared/batcher.js';
import { applyOps, mutatesInput } from './ops.js';
import { StateError, checkSize, entryBytes, type Change, type Entry, type JsonValue, type ListPage, type StateStore, type StoreLimits, type UpdateChange, type UpdateOp } from './store.js';

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

/** scopePrefix(scope) + key, in one buffer written in place (this runs on every call). */
function dbKey(scope: string, key: string): Buffer {
  const sLen = Buffer.byteLength(scope, 'utf8');
  const b = Buffer.allocUnsafe(2 + sLen + Buffer.byteLength(key, 'utf8'));
  b.writeUInt16BE(sLen, 0);
  b.write(scope, 2, 'utf8');
  b.write(key, 2 + sLen, 'utf8');
  return b;
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

/** A write waiting for its batch (batcher.ts): `run` reads and writes inside the batch's transaction. */
interface Job {
  run(): Change;
  resolve(c: Change): void;
  reject(e: unknown): void;
}

/** Writes per transaction at most, so one huge burst is several commits rather than one giant one. */
const MAX_BATCH = 1024;

class EmbeddedStore implements StateStore {
  private readonly batcher = new TurnBatcher<Job>((jobs) => this.commit(jobs));

  constructor(
    private readonly db: Database<string, Buffer>,
    private readonly limits: StoreLimits,
  ) {}

  private write<C extends Change>(run: () => C): Promise<C> {
    return new Promise((resolve, reject) => this.batcher.push({ run, resolve: resolve as (c: Change) => void, reject }));
  }

  /**
   * Commit a batch of writes in one synchronous transaction (on disk when it returns), then answer
   * each in order. A write that throws writes nothing (everything that can throw comes before its
   * put) and the others still commit; if the commit itself fails, none of them is written.
   */
  private commit(queue: Job[]): void {
    for (let from = 0; from < queue.length; from += MAX_BATCH) {
      const jobs = from === 0 && queue.length <= MAX_BATCH ? queue : queue.slice(from, from + MAX_BATCH);
      const results: Array<{ ok: true; change: Change } | { ok: false; error: unknown }> = [];
      try {
        this.db.transactionSync(() => {
          for (const j of jobs) {
            try {
              results.push({ ok: true, change: j.run() });
            } catch (error) {
              results.push({ ok: false, error });
            }
          }
        });
      } catch (e) {
        const err = new StateError('store_unavailable', `embedded store: commit failed, nothing of it was written: ${(e as Error).message}`);
        for (const j of jobs) j.reject(err);
        continue;
      }
      for (let i = 0; i < jobs.length; i++) {
        const r = results[i]!;
        if (r.ok) jobs[i]!.resolve(r.change);
        else jobs[i]!.reject(r.error);
      }
    }
  }

  async get(scope: string, key: string): Promise<JsonValue> {
    const raw = this.db.get(dbKey(scope, key));
    return raw === undefined ? null : (JSON.parse(raw) as JsonValue);
  }

  set(scope: string, key: string, json: string): Promise<Change> {
    const k = dbKey(scope, key);
    const value = JSON.parse(json) as JsonValue;
    return this.write(() => {
      const old = this.db.get(k);
      this.db.put(k, json);
      return { old_value: old === undefined ? null : (JSON.parse(old) as JsonValue), new_value: value, existed: old !== undefined, exists: true };
    });
  }

  delete(scope: string, key: string): Promise<Change> {
    const k = dbKey(scope, key);
    return this.write(() => {
      const old = this.db.get(k);
      if (old === undefined) return { old_value: null, new_value: null, existed: false, exists: false };
      this.db.remove(k);
      return { old_value: JSON.parse(old) as JsonValue, new_value: null, existed: true, exists: false };
    });
  }

  update(scope: string, key: string, ops: UpdateOp[], atomic: boolean): Promise<UpdateChange> {
    const k = dbKey(scope, key);
    // Everything that can throw happens before the put: a write that throws is answered with its
    // error while the rest of the transaction commits, so it must not have written anything.
    const mutates = mutatesInput(ops);
    return this.write(() => {
      const old = this.db.get(k);
      const oldValue = old === undefined ? undefined : (JSON.parse(old) as JsonValue);
      // applyOps may change its input in place: then it works on a second copy of the old value.
      const working = old === undefined || !mutates ? oldValue : (JSON.parse(old) as JsonValue);
      const { value: next, errors } = applyOps(working, ops, () => `state::update scope ${JSON.stringify(scope)} key ${JSON.stringify(key)}`, atomic);
      if (next === undefined) {
        if (old !== undefined) this.db.remove(k);
        return { old_value: oldValue ?? null, new_value: null, existed: old !== undefined, exists: false, errors };
      }
      const json = JSON.stringify(next);
      checkSize('state::update', scope, key, json, this.limits);
      if (json !== old) this.db.put(k, json);
      return { old_value: oldValue ?? null, new_value: next, existed: old !== undefined, exists: true, errors };
    });
  }

  async listPage(scope: string, after: string | undefined, limit: number, maxBytes: number): Promise<ListPage> {
    const prefix = scopePrefix(scope);
    const out: Entry[] = [];
    let bytes = 0;
    // A scope is one key range: seek to the cursor (inclusive in lmdb, so `after` itself is skipped).
    for (const { key, value } of this.db.getRange({ start: after === undefined ? prefix : dbKey(scope, after), end: afterPrefix(prefix) })) {
      const k = (key as Buffer).subarray(prefix.length).toString('utf8');
      if (k === after) continue;
      const size = entryBytes(k, value);
      if (out.length >= limit || (out.length > 0 && bytes + size > maxBytes)) return { entries: out, next: out[out.length - 1]!.key };
      bytes += size;
      out.push({ key: k, value: JSON.parse(value) as JsonValue });
    }
    return { entries: out, next: null };
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
    this.batcher.flush();
    await this.db.close();
  }
}
