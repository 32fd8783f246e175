import { SvcError } from 'svc-sdk';
import { functionIdProblem, type ErrorBody } from 'svc-sdk/protocol';
import { printableJson } from './printable.js';

/** The engine's own error bodies, in one place so codes and wording stay stable (docs/errors.md). */
export const engineErrors = {
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
  resultTooLarge: (id: string, size: number, limit: number): ErrorBody => ({
    code: 'result_too_large',
    message: `Result of ${id}: frame of ${size} bytes exceeds the engine's max_frame_bytes of ${limit}`,
  }),
  invalidTimeout: (v: number, max: number): ErrorBody => ({
    code: 'invalid_frame',
    message: `"timeout_ms" must be a positive number of milliseconds up to ${max}, got ${v}`,
  }),
  // The id as JSON, with what it must not hold shown as escapes: the refusal names the character.
  invalidFunctionId: (id: string, why: string): ErrorBody => ({ code: 'invalid_function_id', message: `Function id ${printableJson(JSON.stringify(id.slice(0, 200)))} ${why}` }),
  forbiddenCall: (token: string, id: string): ErrorBody => ({ code: 'forbidden', message: `Token "${token}" may not call ${id}` }),
  forbiddenRegister: (token: string, what: string, id: string): ErrorBody => ({ code: 'forbidden', message: `Token "${token}" may not register ${what} ${id}` }),
  forbiddenBind: (token: string, type: string, needed: string): ErrorBody => ({
    code: 'forbidden',
    message: `Token "${token}" may not bind a "${type}" trigger: binding one needs the right to call ${needed}`,
  }),
  forbiddenBindingCall: (token: string, id: string, bound: string): ErrorBody => ({
    code: 'forbidden',
    message: `Token "${token}" may not call ${id}, so its trigger binding of ${bound} may not either`,
  }),
  notBindingProvider: (bindingId: string, worker: string): ErrorBody => ({
    code: 'forbidden',
    message: `Worker ${worker} is not the provider of trigger binding ${bindingId}: only that provider may call for it`,
  }),
  bindingNotFound: (bindingId: string): ErrorBody => ({
    code: 'binding_not_found',
    message: `Trigger binding ${bindingId} does not exist (its owner unregistered it or left)`,
  }),
  overloaded: (why: string): ErrorBody => ({ code: 'overloaded', message: why }),
  /** The engine holds as many calls, or as many bytes of them, as it may. */
  engineOverloaded: (calls: number, bytes: number, limits: { maxInFlightTotal: number; maxInFlightBytes: number }): ErrorBody =>
    calls >= limits.maxInFlightTotal
      ? { code: 'overloaded', message: `The engine has ${calls} calls in flight (engine.limits.max_in_flight_total); retry later` }
      : { code: 'overloaded', message: `The calls in flight carry ${bytes} bytes, the engine's limit (engine.limits.max_in_flight_bytes = ${limits.maxInFlightBytes}); retry later` },
  /** A client's connections together hold as many calls, or bytes, as one client may (client-budgets.ts). */
  clientOverloaded: (client: { label: string; calls: number; bytes: number }, limits: { maxInFlightPerClient: number; maxInFlightBytesPerClient: number }): ErrorBody =>
    client.calls >= limits.maxInFlightPerClient
      ? { code: 'overloaded', message: `The connections of ${client.label} have ${client.calls} calls in flight (engine.limits.max_in_flight_per_client = ${limits.maxInFlightPerClient}); retry later` }
      : { code: 'overloaded', message: `The calls the connections of ${client.label} have in flight carry ${client.bytes} bytes (engine.limits.max_in_flight_bytes_per_client = ${limits.maxInFlightBytesPerClient}); retry later` },
  idTooLong: (type: string, field: string, length: number): ErrorBody => ({
    code: 'invalid_frame',
    message: `"${type}" frame: field "${field}" must be at most ${MAX_ID_CHARS} characters, got ${length}`,
  }),
  tooManyRegistrations: (limit: number, id: string): ErrorBody => ({
    code: 'too_many_registrations',
    message: `Cannot register ${id}: this connection already holds ${limit} registrations (engine.limits.max_registrations_per_worker)`,
  }),
  builtinResultTooLarge: (id: string, size: number, limit: number): ErrorBody => ({
    code: 'result_too_large',
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
    message: `Cannot enqueue on queue "${queue}": no queue provider is registered (function engine::queue::enqueue); start one with \`svc worker add svc-queue\``,
  }),
  enqueueInNamespace: (queue: string, namespace: string): ErrorBody => ({
    code: 'enqueue_error',
    message: `Cannot enqueue on queue "${queue}" in namespace ${namespace.slice(0, 200)}: svc-queue runs jobs in the default namespace only (docs/iii-compatibility.md)`,
  }),
};

/** A builtin handler throws this to answer with a specific code (its `body()` is the answer). */
export class EngineError extends SvcError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'EngineError';
  }
}

/**
 * The longest binding id, trigger type and bound function id a registration may name. The engine
 * keeps them for the life of the registration, outside max_stored_bytes_per_worker (which counts
 * configs, descriptions and metadata): unbounded, 10,000 registrations of a connection could each
 * hold an id of max_frame_bytes. iii's SDKs send UUIDs and short names.
 */
export const MAX_ID_CHARS = 1024;

/** The first of `fields` of frame `m` longer than MAX_ID_CHARS, as the refusal naming it; else null. */
export function idTooLong(type: string, fields: Record<string, string | null | undefined>): ErrorBody | null {
  for (const [field, v] of Object.entries(fields)) if (typeof v === 'string' && v.length > MAX_ID_CHARS) return engineErrors.idTooLong(type, field, v.length);
  return null;
}

/** Ids are free-form (`math::add`, `http::users/get`) but must be printable, unambiguous and bounded (svc-sdk's rule). */
export function checkFunctionId(id: string): ErrorBody | null {
  const problem = functionIdProblem(id);
  return problem === null ? null : engineErrors.invalidFunctionId(id, problem);
}
