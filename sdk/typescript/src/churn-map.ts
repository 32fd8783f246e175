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
 * all it allocated. A fresh Map starts with a young table
 * that no old table points to, so the chain ends there. Copying the few live entries every 4096
 * writes costs well under a nanosecond per write.
 */
const RENEW_AFTER = 4096;

export class ChurnMap<K, V> {
  private m = new Map<K, V>();
  private writes = 0;

  /** `renewAfter`: writes between moves (only primeChurnMap below sets it). */
  constructor(private readonly renewAfter = RENEW_AFTER) {}

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
    if (++this.writes >= this.renewAfter) {
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

/**
 * Run the renewal once, with type feedback recorded, before any ChurnMap is hot. Otherwise the
 * first renewal (at write 4096) reaches optimised code with no feedback for it and with `m` assumed
 * never to change, and deoptimises every hot function that inlined set(): at one call in flight that
 * put the engine's call path back on unoptimised code for seconds. V8 records feedback only once a function has run a few times, hence the loop.
 */
function primeChurnMap(): void {
  const m = new ChurnMap<number, number>(2);
  for (let i = 0; i < 64; i++) {
    m.set(i, i);
    if (m.has(i)) m.delete(m.get(i) ?? i);
  }
  for (const v of m.values()) void v;
}
primeChurnMap();
