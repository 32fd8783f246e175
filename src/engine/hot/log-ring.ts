import { LINE_OVERHEAD, LOG_LEVELS, levelIndex, type ListedLogEntry, type LogEntry, type LogInput, type LogQuery } from '../logs.js';

/** Set in a slot's level byte for the engine's own lines. */
const ENGINE_SOURCE = 4;

/**
 * A bounded ring of log lines: memory stays flat however much workers log. It holds at most
 * `capacity` lines and at most `maxBytes` of them (each line's size is given when it is added; the
 * oldest lines go first when the sum is over). Subscribers see each line as it is added
 * (`subscribe`; nobody subscribed costs nothing per line).
 *
 * Stored column-wise: line `seq` lives in slot `(seq - 1) % capacity` of parallel arrays (level
 * and source in a byte, time as epoch ms, the rest as references to the strings and data the
 * caller already has). Adding a line allocates nothing: no entry object, no time string, no
 * trace-id slice. Workers log at the call rate, so a line that allocated would keep the young
 * generation busy and, living as long as the ring holds it, be promoted to the old one. The
 * `LogEntry` objects and ISO times are made in `list`, for the lines asked for.
 */
export class LogRing {
  readonly capacity: number;
  /** Seq of the newest line (0: none yet). */
  private seq = 0;
  /** Slot of the next line. */
  private next = 0;
  private readonly levels: Uint8Array;
  private readonly times: Float64Array;
  private readonly messages: string[];
  private readonly workerIds: Array<string | undefined>;
  private readonly workerNames: Array<string | undefined>;
  private readonly functionIds: Array<string | undefined>;
  private readonly invocationIds: Array<string | undefined>;
  private readonly traceIds: Array<string | undefined>;
  private readonly data: unknown[];
  /** What each held line was charged (0: its slot is empty or was given up for bytes). */
  private readonly sizes: Float64Array;
  /** The charges of the lines held, together. */
  private bytes = 0;
  /** The oldest seq still held after lines were given up for bytes. */
  private first = 1;
  /** The columns of LogEntry's optional fields, by field name: `entry` leaves out what is absent. */
  private readonly optional: ReadonlyArray<readonly [keyof LogEntry, readonly unknown[]]>;
  private readonly listeners = new Set<(e: LogEntry) => void>();

  constructor(
    capacity: number,
    readonly maxBytes = Infinity,
  ) {
    this.capacity = Math.max(1, Math.floor(capacity));
    const n = this.capacity;
    this.levels = new Uint8Array(n);
    this.times = new Float64Array(n);
    this.sizes = new Float64Array(n);
    // Filled by push, not `new Array(n)`: a large `new Array(n)` starts in slow (dictionary) mode.
    const column = <T>(v: T): T[] => {
      const a: T[] = [];
      for (let i = 0; i < n; i++) a.push(v);
      return a;
    };
    this.messages = column('');
    this.workerIds = column<string | undefined>(undefined);
    this.workerNames = column<string | undefined>(undefined);
    this.functionIds = column<string | undefined>(undefined);
    this.invocationIds = column<string | undefined>(undefined);
    this.traceIds = column<string | undefined>(undefined);
    this.data = column<unknown>(undefined);
    this.optional = [
      ['worker_id', this.workerIds],
      ['worker_name', this.workerNames],
      ['function_id', this.functionIds],
      ['invocation_id', this.invocationIds],
      ['trace_id', this.traceIds],
      ['data', this.data],
    ];
  }

  /** Lines stored so far (including those the ring has since dropped): the newest line's seq. */
  get lastSeq(): number {
    return this.seq;
  }

  /** Lines stored so far: the position after the newest (the OTLP export reads from a position of its own). */
  get recorded(): number {
    return this.seq;
  }

  /**
   * Up to `max` lines after position `from` (seqs from+1 on), oldest first, and the position after
   * them; lines the ring no longer holds (overwritten, or given up for bytes) are `missed`.
   */
  readFrom(from: number, max: number): { items: LogEntry[]; next: number; missed: number } {
    const oldest = Math.max(1, this.first, this.seq - this.capacity + 1);
    const start = Math.max(from + 1, oldest);
    const end = Math.min(this.seq, start + max - 1);
    const items: LogEntry[] = [];
    for (let seq = start; seq <= end; seq++) items.push(this.entry(seq, this.slotOf(seq)));
    return { items, next: Math.max(from, end), missed: Math.max(0, start - from - 1) };
  }

  /** The charges of the lines held, together. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Store one line, measured here; returns its seq. The engine's own events. */
  add(e: LogInput): number {
    return this.addLine(
      levelIndex(e.level) ?? 1,
      e.source === 'engine',
      e.message,
      e.worker_id,
      e.worker_name,
      e.function_id,
      e.invocation_id,
      e.trace_id,
      e.data,
      Date.now(),
      e.message.length + (e.data === undefined ? 0 : (JSON.stringify(e.data) ?? '').length) + LINE_OVERHEAD,
    );
  }

  /**
   * The allocation-free form of `add`, for `engine::log::batch`: fields as arguments, `level` a
   * `levelIndex`, `ms` the time (one `Date.now()` per batch), `size` what the line is charged
   * against maxBytes. Strings are stored as given.
   */
  addLine(
    level: number,
    engine: boolean,
    message: string,
    workerId: string | undefined,
    workerName: string | undefined,
    functionId: string | undefined,
    invocationId: string | undefined,
    traceId: string | undefined,
    data: unknown,
    ms: number,
    size: number,
  ): number {
    const i = this.next;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    const seq = ++this.seq;
    // The line overwritten in this slot (if any is still held) gives up its charge.
    this.bytes += size - this.sizes[i]!;
    this.sizes[i] = size;
    this.levels[i] = engine ? level | ENGINE_SOURCE : level;
    this.times[i] = ms;
    this.messages[i] = message;
    this.workerIds[i] = workerId;
    this.workerNames[i] = workerName;
    this.functionIds[i] = functionId;
    this.invocationIds[i] = invocationId;
    this.traceIds[i] = traceId;
    this.data[i] = data;
    if (this.bytes > this.maxBytes) this.giveUpOldest();
    if (this.listeners.size !== 0) {
      const entry = this.entry(seq, i);
      for (const l of this.listeners) l(entry);
    }
    return seq;
  }

  /** Over maxBytes: the oldest lines go (their slots emptied), the newest line always stays. */
  private giveUpOldest(): void {
    let seq = Math.max(this.first, this.seq - this.capacity + 1);
    while (this.bytes > this.maxBytes && seq < this.seq) {
      const j = this.slotOf(seq);
      this.bytes -= this.sizes[j]!;
      this.sizes[j] = 0;
      this.messages[j] = '';
      this.data[j] = undefined;
      this.functionIds[j] = undefined;
      this.invocationIds[j] = undefined;
      this.traceIds[j] = undefined;
      seq++;
    }
    this.first = seq;
  }

  /** `fn` gets every line added from now on, as a fresh `LogEntry`. Returns the unsubscribe function. */
  subscribe(fn: (e: LogEntry) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Oldest first, filtered, the newest `limit` matches (default 1000) whose charges together stay
   * within `maxBytes` (at least one line): an answer must fit in a frame.
   */
  list(q: LogQuery = {}, maxBytes = Infinity): ListedLogEntry[] {
    const minLevel = q.level ? (levelIndex(q.level) ?? 0) : 0;
    const limit = q.limit ?? 1000;
    const oldest = Math.max(1, this.first, this.seq - this.capacity + 1);
    const from = q.since_seq !== undefined ? Math.max(oldest, Math.floor(q.since_seq) + 1) : oldest;
    // Newest first until `limit` matches, so `limit: 1` reads one slot, not the whole ring.
    const seqs: number[] = [];
    let slot = this.slotOf(this.seq);
    let bytes = 0;
    for (let seq = this.seq; seq >= from && seqs.length < limit; seq--) {
      if (this.matches(slot, minLevel, q)) {
        bytes += this.sizes[slot]!;
        if (bytes > maxBytes && seqs.length > 0) break;
        seqs.push(seq);
      }
      slot = slot === 0 ? this.capacity - 1 : slot - 1;
    }
    const out: ListedLogEntry[] = new Array(seqs.length);
    for (let k = seqs.length - 1, j = 0; k >= 0; k--, j++) out[j] = this.listed(seqs[k]!, this.slotOf(seqs[k]!));
    return out;
  }

  private slotOf(seq: number): number {
    return (seq - 1) % this.capacity;
  }

  private matches(i: number, minLevel: number, q: LogQuery): boolean {
    if ((this.levels[i]! & 3) < minLevel) return false;
    if (q.worker && this.workerNames[i] !== q.worker && this.workerIds[i] !== q.worker) return false;
    if (q.text && !this.messages[i]!.includes(q.text)) return false;
    return true;
  }

  /**
   * The line in slot `i` as `engine::logs::list` returns it: every field there, null where the line
   * has none, so the engine's own lines (no worker, function or trace) have the shape workers' do
   * (docs/protocol.md) and a reader of the list need not tell absent from null.
   */
  private listed(seq: number, i: number): ListedLogEntry {
    const code = this.levels[i]!;
    return {
      seq,
      time: isoTime(this.times[i]!),
      level: LOG_LEVELS[code & 3]!,
      message: this.messages[i]!,
      source: code & ENGINE_SOURCE ? 'engine' : 'worker',
      worker_id: this.workerIds[i] ?? null,
      worker_name: this.workerNames[i] ?? null,
      function_id: this.functionIds[i] ?? null,
      invocation_id: this.invocationIds[i] ?? null,
      trace_id: this.traceIds[i] ?? null,
      data: this.data[i] ?? null,
    };
  }

  /** The line in slot `i` for subscribers and readFrom (the engine's own readers); absent fields left out. */
  private entry(seq: number, i: number): LogEntry {
    const code = this.levels[i]!;
    const e: LogEntry = {
      seq,
      time: isoTime(this.times[i]!),
      level: LOG_LEVELS[code & 3]!,
      message: this.messages[i]!,
      source: code & ENGINE_SOURCE ? 'engine' : 'worker',
    };
    const fields = e as unknown as Record<string, unknown>;
    for (const [key, column] of this.optional) {
      const v = column[i];
      if (v !== undefined) fields[key] = v;
    }
    return e;
  }
}

/**
 * Run giveUpOldest once at load with type feedback: a busy engine whose lines fill max_log_bytes
 * would otherwise first reach it in optimised code with no feedback for it and deoptimise the log
 * path, as ChurnMap's renewal did (README.md in this directory). V8 records feedback only after a
 * few runs.
 */
function primeLogRing(): void {
  const b = new LogRing(4, 100);
  for (let i = 0; i < 64; i++) b.addLine(1, false, 'prime', undefined, undefined, undefined, undefined, undefined, undefined, 0, 60);
}
primeLogRing();

// Lines listed together mostly share their millisecond: one ISO string per millisecond.
let lastMs = NaN;
let lastIso = '';
function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
