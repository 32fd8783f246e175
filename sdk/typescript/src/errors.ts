import type { ErrorBody } from './protocol/messages.js';

/**
 * The one base of svc's errors, in the engine, the CLI, the built-in workers and the SDK: a stable
 * lowercase `code` to branch on (docs/errors.md lists every one) and a message that names the
 * offending input. Subclasses exist only where a caller needs to tell a kind apart.
 */
export class SvcError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SvcError';
    this.code = code;
  }

  /** The wire form of this error. */
  body(): ErrorBody {
    return { code: this.code, message: this.message };
  }
}

/** A call failed: carries the stable `code` from the engine or the callee, and the function id. */
export class InvocationError extends SvcError {
  readonly functionId: string | undefined;
  readonly stacktrace: string | undefined;

  constructor(code: string, message: string, functionId?: string, stacktrace?: string) {
    super(code, message);
    this.name = 'InvocationError';
    this.functionId = functionId;
    this.stacktrace = stacktrace;
  }

  static from(body: ErrorBody, functionId?: string): InvocationError {
    return new InvocationError(body.code, body.message, functionId, body.stacktrace);
  }

  toJSON(): ErrorBody {
    return { code: this.code, message: this.message };
  }
}

/** At most this much of a handler's stack trace travels with its error (a deep recursion's stack is megabytes). */
export const MAX_STACKTRACE_CHARS = 8192;

/** `stack` cut to MAX_STACKTRACE_CHARS, saying so. */
export function cappedStack(stack: string): string {
  return stack.length <= MAX_STACKTRACE_CHARS ? stack : `${stack.slice(0, MAX_STACKTRACE_CHARS)}\n… (${stack.length - MAX_STACKTRACE_CHARS} more characters)`;
}

/**
 * Turn anything a handler threw into a wire error. An error with a string `code` keeps it (so a
 * worker such as svc-state can answer `value_too_large`); everything else is `invocation_failed`.
 * An SvcError was raised on purpose (bad input, not found): it goes without a stack, which would
 * only tell the caller the callee's file paths; the engine then logs it at WARN, not ERROR. Any
 * other error was not expected (a Node ENOENT has a `code` too): its stack is what helps.
 * An InvocationError passed on keeps the stack its own callee sent, if any.
 */
export function toErrorBody(err: unknown): ErrorBody {
  if (err instanceof SvcError) {
    const stack = err instanceof InvocationError ? err.stacktrace : undefined;
    return { code: err.code || 'invocation_failed', message: err.message || err.name, ...(stack ? { stacktrace: stack } : {}) };
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      code: typeof code === 'string' && code.length > 0 ? code : 'invocation_failed',
      message: err.message || err.name,
      ...(err.stack ? { stacktrace: cappedStack(err.stack) } : {}),
    };
  }
  return { code: 'invocation_failed', message: typeof err === 'string' ? err : thrownValueText(err) };
}

/**
 * A thrown non-Error as text: its JSON, else its kind. JSON.stringify throws for a BigInt or a
 * cycle, and String() for an object without a prototype; a throw here would escape
 * Invoker.invoke and end the worker.
 */
function thrownValueText(err: unknown): string {
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return describeValue(err);
  }
}

/** A value for an error message: its kind, and itself when short. */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? v.slice(0, 60) + '…' : v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'function') return 'a function';
  let json: string | undefined;
  try {
    json = JSON.stringify(v);
  } catch {
    json = undefined;
  }
  const kind = Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
  return json !== undefined && json.length <= 60 ? `${kind} ${json}` : kind;
}
