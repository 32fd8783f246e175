/**
 * The layout svc's SDKs write the two frames of every call in, and which the engine's fast path
 * relies on (src/engine/call-frames.ts). The protocol itself does not care about key order: a peer
 * may write keys in any order, and the engine reads them as JSON readers do. But a call whose frame
 * begins with INVOKE_KEY_ORDER's keys, in that order, has its payload passed on to the callee as the
 * text it came in (from `data` on), instead of being serialised again; a result that begins with
 * RESULT_KEY_ORDER's keys likewise (docs/protocol.md, "Key order and payloads passed on as text").
 * Re-serialising costs as much as parsing did and grows with the payload, so both SDKs write these
 * layouts: TypeScript through the two builders below, Python in calls.py and handlers.py
 * (sdk/python/tests/test_protocol_constants.py checks its order against this one).
 */
import { DEFAULT_NAMESPACE, type ErrorBody, type InvocationAction, type InvocationResultMsg, type InvokeFunctionMsg } from './messages.js';

/**
 * The leading keys of an `invokefunction` frame as the SDKs write them; `invocation_id` is absent
 * for a fire-and-forget call, `timeout_ms` without a deadline of the caller's, `binding_id` unless a
 * provider calls for a binding. Keys after `data` (action, metadata, traceparent, baggage) are
 * passed on with it.
 */
export const INVOKE_KEY_ORDER = ['type', 'function_id', 'invocation_id', 'timeout_ms', 'binding_id', 'data'] as const;

/** The leading keys of an `invocationresult` frame that answers with a result (not an error). */
export const RESULT_KEY_ORDER = ['type', 'invocation_id', 'function_id', 'result'] as const;

/**
 * A call frame in INVOKE_KEY_ORDER. Keys are added one by one, in order (JSON.stringify writes
 * them in insertion order), and only those that are set.
 */
export function invokeFrame(
  functionId: string,
  invocationId: string | undefined,
  timeoutMs: number | undefined,
  bindingId: string | undefined,
  data: unknown,
  action: InvocationAction | undefined,
  metadata: unknown,
  traceparent: string | undefined,
  baggage: string | undefined,
  namespace?: string,
): InvokeFunctionMsg {
  const msg: InvokeFunctionMsg = { type: 'invokefunction', function_id: functionId };
  if (invocationId !== undefined) msg.invocation_id = invocationId;
  if (timeoutMs !== undefined) msg.timeout_ms = timeoutMs;
  if (bindingId !== undefined) msg.binding_id = bindingId;
  msg.data = data;
  if (action !== undefined) msg.action = action;
  if (metadata !== undefined) msg.metadata = metadata;
  if (traceparent) msg.traceparent = traceparent;
  if (baggage) msg.baggage = baggage;
  // After data: the engine's fast path passes it on with the payload. Absent means `default`.
  if (namespace !== undefined && namespace !== DEFAULT_NAMESPACE) msg.namespace = namespace;
  return msg;
}

/** A callee's answer in RESULT_KEY_ORDER: the result (undefined becomes null), or the error. */
export function resultFrame(invocationId: string, functionId: string, result: unknown, error: ErrorBody | undefined): InvocationResultMsg {
  return error
    ? { type: 'invocationresult', invocation_id: invocationId, function_id: functionId, error }
    : { type: 'invocationresult', invocation_id: invocationId, function_id: functionId, result: result === undefined ? null : result };
}
