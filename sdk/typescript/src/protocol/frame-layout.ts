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
import { DEFAULT_NAMESPACE, type ErrorBody, type InvocationAction } from './messages.js';

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
 * A call frame in INVOKE_KEY_ORDER, with only the keys that are set, as text: what JSON.stringify
 * writes for the object with those keys in that order (a key whose value JSON cannot write, e.g. a
 * function, is left out as it would leave it out; test/sdk/frame-layout.test.ts holds the two
 * equal), written as one template: JSON.stringify of the envelope cost as much again as the
 * payload's (bench/RESULTS.md, thirteenth session). Throws what JSON.stringify throws.
 */
export function invokeFrameText(
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
): string {
  let t = '{"type":"invokefunction"' + member('function_id', functionId);
  if (invocationId !== undefined) t += member('invocation_id', invocationId);
  if (timeoutMs !== undefined) t += member('timeout_ms', timeoutMs);
  if (bindingId !== undefined) t += member('binding_id', bindingId);
  t += member('data', data);
  if (action !== undefined) t += member('action', action);
  if (metadata !== undefined) t += member('metadata', metadata);
  if (traceparent) t += member('traceparent', traceparent);
  if (baggage) t += member('baggage', baggage);
  if (namespace !== undefined && namespace !== DEFAULT_NAMESPACE) t += member('namespace', namespace);
  return t + '}';
}

/** A callee's answer in RESULT_KEY_ORDER, as text (as invokeFrameText): the result (undefined is null), or the error. */
export function resultFrameText(invocationId: string, functionId: string, result: unknown, error: ErrorBody | undefined): string {
  const head = '{"type":"invocationresult"' + member('invocation_id', invocationId) + member('function_id', functionId);
  return head + (error ? member('error', error) : result === undefined ? ',"result":null' : member('result', result)) + '}';
}

/** `,"key":<value as JSON>`, or nothing for a value JSON.stringify leaves out of an object. */
function member(key: string, value: unknown): string {
  if (typeof value === 'string') return ',"' + key + '":' + jsonString(value);
  // JSON.stringify of the whole object calls a value's toJSON with its key; so does this.
  if (hasToJSON(value)) {
    const pair = JSON.stringify({ [key]: value });
    return pair.length === 2 ? '' : ',' + pair.slice(1, -1);
  }
  const json = JSON.stringify(value);
  return json === undefined ? '' : ',"' + key + '":' + json;
}

function hasToJSON(value: unknown): boolean {
  return (typeof value === 'object' || typeof value === 'bigint') && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * JSON.stringify(s) for a string, quicker for one that needs no escape (ids, function ids,
 * traceparents): the test costs half of JSON.stringify. A string with any surrogate, even a
 * well-paired one, takes JSON.stringify, which decides what to escape. Shared with the engine,
 * which quotes ids on every call.
 */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : '"' + s + '"';
}
