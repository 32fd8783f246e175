import { invocationScope, type InvocationScope } from './context.js';
import type { LogLevel } from './protocol/log-rows.js';

export type { LogLevel };

/** Where log lines go besides the local console; set by the most recently created worker. */
export interface LogSink {
  /** Shown in the local line, as the Python SDK shows it: `INFO  [math-worker] math::add …`. */
  readonly workerName?: string;
  log(level: LogLevel, message: string, data: unknown, scope: { function_id?: string; invocation_id?: string; traceparent?: string }): void;
  /**
   * Optional, preferred by Logger when present: the same line with the invocation scope as the SDK
   * keeps it (undefined outside a handler), so that no scope object is built per line.
   */
  logScoped?(level: LogLevel, message: string, data: unknown, scope: InvocationScope | undefined): void;
}

let defaultSink: LogSink | null = null;
export function setDefaultLogSink(sink: LogSink | null): void {
  defaultSink = sink;
}
export function getDefaultLogSink(): LogSink | null {
  return defaultSink;
}

/**
 * `new Logger().info('message', {some: 'data'})`. Lines are printed locally and sent to the engine,
 * which stores them with the worker name and, inside a handler, the function and invocation ids.
 */
export class Logger {
  constructor(
    private readonly sink?: LogSink,
    private readonly opts: { echo?: boolean } = {},
  ) {}

  debug(message: string, data?: unknown): void {
    this.log('debug', message, data);
  }
  info(message: string, data?: unknown): void {
    this.log('info', message, data);
  }
  warn(message: string, data?: unknown): void {
    this.log('warn', message, data);
  }
  error(message: string, data?: unknown): void {
    this.log('error', message, data);
  }

  log(level: LogLevel, message: string, data?: unknown): void {
    const scope = invocationScope.getStore();
    const sink = this.sink ?? defaultSink;
    if (this.opts.echo !== false && process.env.SVC_LOG_ECHO !== '0') {
      // The same shape as the Python SDK's line: which worker, and inside a handler which function.
      const line = `${level.toUpperCase().padEnd(5)} [${sink?.workerName ?? '-'}]${scope ? ' ' + scope.functionId : ''} ${message}${data === undefined ? '' : ' ' + safeJson(data)}`;
      (level === 'error' || level === 'warn' ? process.stderr : process.stdout).write(line + '\n');
    }
    if (!sink) return;
    // A Worker takes the line as it is (no per-line object); other sinks get the plain scope.
    if (sink.logScoped) sink.logScoped(level, message, data, scope);
    else if (!scope) sink.log(level, message, data, {});
    else if (scope.traceparent) sink.log(level, message, data, { function_id: scope.functionId, invocation_id: scope.invocationId, traceparent: scope.traceparent });
    else sink.log(level, message, data, { function_id: scope.functionId, invocation_id: scope.invocationId });
  }
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
