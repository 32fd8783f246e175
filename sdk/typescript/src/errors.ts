import type { ErrorBody } from './protocol.js';

/** A call failed: carries the stable `code` from the engine or the callee, and the function id. */
export class InvocationError extends Error {
  readonly code: string;
  readonly functionId: string | undefined;
  readonly stacktrace: string | undefined;

  constructor(code: string, message: string, functionId?: string, stacktrace?: string) {
    super(message);
    this.name = 'InvocationError';
    this.code = code;
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

/**
 * Turn anything a handler threw into a wire error. An error with a string `code` keeps it (so a
 * worker such as svc-state can answer `value_too_large`); everything else is `invocation_failed`.
 */
export function toErrorBody(err: unknown): ErrorBody {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      code: typeof code === 'string' && code.length > 0 ? code : 'invocation_failed',
      message: err.message || err.name,
      ...(err.stack ? { stacktrace: err.stack } : {}),
    };
  }
  return { code: 'invocation_failed', message: typeof err === 'string' ? err : JSON.stringify(err) ?? String(err) };
}
