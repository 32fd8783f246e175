import type { ErrorBody } from 'svc-sdk';

/** The engine's own error bodies, in one place so codes and wording stay stable (docs/errors.md). */
export const engineErrors = {
  functionNotFound: (id: string): ErrorBody => ({ code: 'function_not_found', message: `Function ${id} not found` }),
  invocationStopped: (id: string, why: string): ErrorBody => ({ code: 'invocation_stopped', message: `Invocation of ${id} stopped: ${why}` }),
  timeout: (id: string, ms: number): ErrorBody => ({ code: 'timeout', message: `Invocation of ${id} timed out after ${ms}ms` }),
  shuttingDown: (): ErrorBody => ({ code: 'shutting_down', message: 'The engine is shutting down and accepts no new calls' }),
  frameTooLarge: (size: number, limit: number): ErrorBody => ({
    code: 'frame_too_large',
    message: `Frame of ${size} bytes exceeds the engine's max_frame_bytes of ${limit}`,
  }),
  payloadTooLarge: (id: string, size: number, limit: number): ErrorBody => ({
    code: 'payload_too_large',
    message: `Call of ${id}: frame of ${size} bytes exceeds the engine's max_frame_bytes of ${limit}`,
  }),
  invalidTimeout: (v: number, max: number): ErrorBody => ({
    code: 'invalid_frame',
    message: `"timeout_ms" must be a positive number of milliseconds up to ${max}, got ${v}`,
  }),
  invalidFunctionId: (id: string, why: string): ErrorBody => ({ code: 'invalid_function_id', message: `Function id ${JSON.stringify(id.slice(0, 200))} ${why}` }),
  forbiddenCall: (token: string, id: string): ErrorBody => ({ code: 'forbidden', message: `Token "${token}" may not call ${id}` }),
  forbiddenRegister: (token: string, what: string, id: string): ErrorBody => ({ code: 'forbidden', message: `Token "${token}" may not register ${what} ${id}` }),
  overloaded: (why: string): ErrorBody => ({ code: 'overloaded', message: why }),
  tooManyRegistrations: (limit: number, id: string): ErrorBody => ({
    code: 'too_many_registrations',
    message: `Cannot register ${id}: this connection already holds ${limit} registrations (engine.limits.max_registrations_per_worker)`,
  }),
  resultTooLarge: (id: string, size: number, limit: number): ErrorBody => ({
    code: 'payload_too_large',
    message: `The result of ${id} is ${size} bytes, over the engine's max_frame_bytes of ${limit}: ask for less (a smaller limit or a filter)`,
  }),
  /** The engine could not write a frame (JSON cannot encode what it holds): a bug or a value from outside any frame. */
  unwritable: (id: string, what: string, err: unknown): ErrorBody => ({
    code: 'internal_error',
    message: `The engine could not write ${what} of ${id}: ${err instanceof Error ? err.message : String(err)}`,
  }),
  configTooLarge: (id: string, size: number, limits: { maxValue: number; maxPerWorker: number }): ErrorBody => ({
    code: 'payload_too_large',
    message: `Trigger ${id}: its config of ${size} characters is over engine.limits.max_stored_value_bytes (${limits.maxValue}) or what is left of this connection's engine.limits.max_stored_bytes_per_worker (${limits.maxPerWorker})`,
  }),
  enqueueUnavailable: (queue: string): ErrorBody => ({
    code: 'enqueue_error',
    message: `Cannot enqueue on queue "${queue}": no queue provider is registered (function engine::queue::enqueue)`,
  }),
};

/** A builtin handler throws this to answer with a specific code. */
export class EngineError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  body(): ErrorBody {
    return { code: this.code, message: this.message };
  }
}

const FUNCTION_ID_MAX = 256;
/** Ids are free-form (`math::add`, `http::users/get`) but must be printable and bounded. */
export function checkFunctionId(id: string): ErrorBody | null {
  if (id.length === 0) return engineErrors.invalidFunctionId(id, 'is empty');
  if (id.length > FUNCTION_ID_MAX) return engineErrors.invalidFunctionId(id, `is longer than ${FUNCTION_ID_MAX} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f]/.test(id)) return engineErrors.invalidFunctionId(id, 'contains whitespace or control characters');
  return null;
}
