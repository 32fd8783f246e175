/** One stored log line: from a worker's Logger, or the engine's own events (`source: "engine"`). */
export interface LogEntry {
  seq: number;
  time: string;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  source: 'worker' | 'engine';
  worker_id?: string;
  worker_name?: string;
  function_id?: string;
  invocation_id?: string;
  trace_id?: string;
  data?: unknown;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

export interface LogQuery {
  limit?: number;
  worker?: string;
  level?: string;
  since_seq?: number;
  text?: string;
}

/**
 * A bounded ring of log lines: memory stays flat however much workers log. Subscribers see each
 * line as it is added (for `svc logs -f` and the console).
 */
export class LogBuffer {
  private readonly ring: (LogEntry | undefined)[];
  private next = 0;
  private seq = 0;
  private readonly listeners = new Set<(e: LogEntry) => void>();

  constructor(readonly capacity: number) {
    this.ring = new Array(Math.max(1, capacity));
  }

  /**
   * Stores `e` itself (no copy: callers hand over a fresh object). Called once per Logger line of
   * every worker, so it stays allocation-free apart from the time string.
   */
  add(e: Omit<LogEntry, 'seq' | 'time'> & { time?: string }): LogEntry {
    const entry = e as LogEntry;
    entry.seq = ++this.seq;
    if (entry.time === undefined) entry.time = isoNow();
    this.ring[this.next] = entry;
    this.next = (this.next + 1) % this.ring.length;
    for (const l of this.listeners) l(entry);
    return entry;
  }

  subscribe(fn: (e: LogEntry) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Oldest first, filtered, the newest `limit` matches. */
  list(q: LogQuery = {}): LogEntry[] {
    const minLevel = q.level ? LOG_LEVELS.indexOf(q.level as LogEntry['level']) : 0;
    const out: LogEntry[] = [];
    for (let i = 0; i < this.ring.length; i++) {
      const e = this.ring[(this.next + i) % this.ring.length];
      if (!e) continue;
      if (q.since_seq !== undefined && e.seq <= q.since_seq) continue;
      if (LOG_LEVELS.indexOf(e.level) < minLevel) continue;
      if (q.worker && e.worker_name !== q.worker && e.worker_id !== q.worker) continue;
      if (q.text && !e.message.includes(q.text)) continue;
      out.push(e);
    }
    const limit = q.limit ?? 1000;
    return out.length > limit ? out.slice(out.length - limit) : out;
  }
}

// Formatting a date costs more than storing the line: lines of the same millisecond share one string.
let lastMs = 0;
let lastIso = '';
function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
