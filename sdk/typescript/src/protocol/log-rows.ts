/**
 * Logger lines on the wire: the `lines` of an `engine::log::batch` call (LOG_BATCH_FUNCTION), each a
 * row `[level, message]` outside a handler, else `[level, message, data, function_id,
 * invocation_id, trace_id]` (null for what is absent). docs/protocol.md, engine::log::batch.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The call a line was logged in, as the SDK keeps it (InvocationScope). */
export interface LogRowScope {
  functionId: string;
  invocationId: string;
  traceparent?: string;
}

/** One line as a row of `engine::log::batch`. */
export function logRow(level: LogLevel, message: unknown, data: unknown, scope: LogRowScope | undefined): unknown[] {
  if (scope === undefined) return data === undefined ? [level, message] : [level, message, data];
  return [level, message, data === undefined ? null : data, scope.functionId || null, scope.invocationId || null, traceIdOfTraceparent(scope.traceparent) ?? null];
}

/**
 * The trace id of a W3C traceparent ("00-<32 hex trace id>-<16 hex span id>-<flags>"), or
 * undefined when it has not that shape. What log lines carry (the engine stores the trace id).
 */
export function traceIdOfTraceparent(tp: string | null | undefined): string | undefined {
  return tp != null && tp.length >= 35 && tp.charCodeAt(2) === 0x2d ? tp.slice(3, 35) : undefined;
}
