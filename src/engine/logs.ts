/**
 * Log lines: from workers' Loggers (engine::log::*) and the engine's own events. This file: what a
 * line is and how it is asked for. Where lines are kept: hot/log-ring.ts.
 */

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

/** A line as `engine::logs::list` returns it: one shape for every line, null for what it has not. */
export type ListedLogEntry = Pick<LogEntry, 'seq' | 'time' | 'level' | 'message' | 'source'> & {
  [K in 'worker_id' | 'worker_name' | 'function_id' | 'invocation_id' | 'trace_id']: string | null;
} & { data: unknown };

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

/** debug 0 … error 3; undefined for anything else (own properties only: "toString" is no level). */
export function levelIndex(level: unknown): number | undefined {
  switch (level) {
    case 'debug':
      return 0;
    case 'info':
      return 1;
    case 'warn':
      return 2;
    case 'error':
      return 3;
    default:
      return undefined;
  }
}

/** What `add` takes: a line without its seq and time, which the buffer assigns. */
export type LogInput = Omit<LogEntry, 'seq' | 'time'>;

export interface LogQuery {
  limit?: number;
  worker?: string;
  level?: string;
  since_seq?: number;
  text?: string;
}

/** What a line costs beyond its message and data (its ids, the slot): for lines measured one by one. */
export const LINE_OVERHEAD = 64;
