/**
 * A Map for entries that come and go at the call rate (calls in flight: the engine's tables, a
 * worker's pending and running calls), which moves to a new Map every RENEW_AFTER writes.
 *
 * Why: V8 keeps a Map's entries in a table it replaces as entries are added and deleted, and a
 * replaced table keeps a pointer to its successor (for iterators still walking it). Once one
 * table has lived long enough to reach the old generation (a quiet moment is enough), it holds
 * every later table, and the values in them, alive through each young-generation collection until
 * the next full one, and each of those is promoted in turn: a chain that never ends. In the engine
 * that promoted ~500 KB per scavenge (nearly every Invocation and table), made scavenges 7× slower
 * than the relay's and added full collections; in a plain test a churned Map promoted 50–65 % of
 * all it allocated (bench/RESULTS.md, 2026-11-22 session 3). A fresh Map starts with a young table
 * that no old table points to, so the chain ends there. Copying the few live entries every 4096
 * writes costs well under a nanosecond per write.
 */
const RENEW_AFTER = 4096;

export class ChurnMap<K, V> {
  private m = new Map<K, V>();
  private writes = 0;

  get size(): number {
    return this.m.size;
  }

  get(key: K): V | undefined {
    return this.m.get(key);
  }

  has(key: K): boolean {
    return this.m.has(key);
  }

  set(key: K, value: V): this {
    this.m.set(key, value);
    if (++this.writes >= RENEW_AFTER) {
      this.writes = 0;
      this.m = new Map(this.m);
    }
    return this;
  }

  delete(key: K): boolean {
    return this.m.delete(key);
  }

  values(): IterableIterator<V> {
    return this.m.values();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.m[Symbol.iterator]();
  }
}
