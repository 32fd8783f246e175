import type { Connection } from './connection.js';
import type { InvocationScope } from './context.js';
import type { InvocationError } from './errors.js';
import { LOG_BATCH_FUNCTION } from './protocol/constants.js';
import { logRow, type LogLevel } from './protocol/log-rows.js';
import type { InvokeFunctionMsg } from './protocol/messages.js';

/**
 * Logger lines to the engine. The lines of one event-loop turn leave together in one
 * fire-and-forget `engine::log::batch` call, each as a row [level, message, data, function_id,
 * invocation_id, trace_id]: a line costs a push of four values here and its share of one
 * JSON.stringify at the end of the turn. The data is serialised then, not when logged. Lines are
 * dropped while the worker is not connected (they were printed locally).
 */
export class LogBatcher {
  /** Pending lines, four slots each: level, message, data, scope. */
  private queue: unknown[] = [];

  constructor(
    private readonly conn: Connection,
    /** The engine accepted the connection (lines are dropped otherwise). */
    private readonly connected: () => boolean,
  ) {}

  add(level: LogLevel, message: string, data: unknown, scope: InvocationScope | undefined): void {
    if (!this.connected()) return;
    const q = this.queue;
    q.push(level, message, data, scope);
    if (q.length === 4) setImmediate(this.flush);
  }

  /** Send what is pending now (the end of the turn, or shutdown). */
  readonly flush = (): void => {
    const q = this.queue;
    this.queue = [];
    if (q.length === 0 || !this.connected()) return;
    const rows: unknown[][] = new Array(q.length / 4);
    for (let i = 0, j = 0; i < q.length; i += 4, j++) rows[j] = logRow(q[i] as LogLevel, q[i + 1], q[i + 2], q[i + 3] as InvocationScope | undefined);
    this.send(rows, false);
  };

  private send(rows: unknown[][], safe: boolean): void {
    const msg: InvokeFunctionMsg = { type: 'invokefunction', function_id: LOG_BATCH_FUNCTION, data: { lines: rows }, action: { type: 'void' } };
    let text: string;
    try {
      text = this.conn.encode(msg);
    } catch (e) {
      // Never thrown into user code. Data that JSON cannot encode (a cycle, a BigInt) becomes its
      // String(); a batch over the frame limit goes in halves; a single line over it is dropped.
      if ((e as InvocationError).code === 'payload_too_large') {
        if (rows.length > 1) {
          const half = rows.length >> 1;
          this.send(rows.slice(0, half), safe);
          this.send(rows.slice(half), safe);
        }
      } else if (!safe) {
        for (const row of rows) if (row.length > 2) row[2] = jsonSafe(row[2]);
        this.send(rows, true);
      }
      return;
    }
    this.conn.sendText(text);
  }
}

/**
 * `v` if JSON can encode it; else a copy where BigInts are strings and repeated objects (cycles)
 * "[Circular]"; else its String(). A log line's data is changed rather than lost.
 */
function jsonSafe(v: unknown): unknown {
  try {
    JSON.stringify(v);
    return v;
  } catch {
    /* below */
  }
  const seen = new WeakSet<object>();
  try {
    return JSON.parse(
      JSON.stringify(v, (_key, x: unknown) => {
        if (typeof x === 'bigint') return x.toString();
        if (typeof x === 'object' && x !== null) {
          if (seen.has(x)) return '[Circular]';
          seen.add(x);
        }
        return x;
      }),
    ) as unknown;
  } catch {
    try {
      return String(v);
    } catch {
      return '[unserializable]';
    }
  }
}
