/**
 * The two frames the engine writes for every routed call: the callee's `invokefunction` and the
 * caller's `invocationresult`. They are the hottest text the engine builds, so they are written as
 * templates rather than spread-and-stringified objects, and the payload is passed on as the text it
 * arrived in whenever the frame has the layout svc's SDKs write: re-serialising a payload that was
 * just parsed costs as much as parsing it, and grows with its size.
 *
 * Passing text on is exact because of one JSON rule every client we know follows (JavaScript,
 * Python, serde): of duplicate keys the last one wins. The frame was parsed (and validated) whole
 * where it entered; the part passed on is cut from the same text, and every key the engine must
 * decide (the invocation_id, the traceparent) is written after it, so a receiver reads the values
 * the engine read and the engine's own. Any other layout takes the general path.
 */
import type { InvocationResultMsg, InvokeFunctionMsg } from 'svc-sdk/protocol';
import { jsonString } from './shared-with-sdk.js';

/**
 * Below this many characters a frame's payload is serialised again rather than passed on: checking
 * the layout costs about what re-serialising a payload of a few hundred bytes does, and above it
 * re-serialising costs more the bigger the payload (README.md in this directory).
 */
export const PASS_ON_MIN_CHARS = 512;

/**
 * For a call frame that begins `{"type":"invokefunction","function_id":<fidJson>,"invocation_id":
 * <callerId as JSON>,"timeout_ms":<timeoutMs>,"binding_id":<bindingId as JSON>,"data":` (svc's
 * SDKs write that order, sdk/typescript/src/protocol/frame-layout.ts; `timeout_ms` only when the caller set a
 * deadline, `binding_id` only for a provider's call for a binding, which so never reaches the
 * callee): the text from
 * the data value to the closing brace (exclusive), which holds the data and whatever keys the
 * caller wrote after it. null for any other layout, or a small frame. The head expected is built
 * from the parsed values, so a match means the text holds exactly those values, with no escape
 * that would make the same string read differently, and no key the parse did not see.
 */
export function callDataTail(
  text: string,
  fidJson: string,
  callerId: string,
  timeoutMs: number | null | undefined,
  bindingId: string | null | undefined,
): string | null {
  if (text.length < PASS_ON_MIN_CHARS || text.charCodeAt(text.length - 1) !== 0x7d) return null;
  let head = '{"type":"invokefunction","function_id":' + fidJson + ',"invocation_id":' + jsonString(callerId);
  if (timeoutMs !== undefined) head += ',"timeout_ms":' + timeoutMs;
  if (bindingId != null) head += ',"binding_id":' + jsonString(bindingId);
  head += ',"data":';
  return text.startsWith(head) ? text.slice(head.length, -1) : null;
}

/**
 * The frame to the callee. `dataTail` (from callDataTail) stands for the data and the caller's
 * later keys; without it, data, baggage and metadata are serialised from the parsed frame.
 * `traceparent` is written last, so that it replaces one the caller's tail may hold.
 */
export function invokeText(
  engineId: string,
  fidJson: string,
  msg: InvokeFunctionMsg,
  data: unknown,
  dataTail: string | null,
  traceparent: string | undefined,
  /** Tracing is on: `traceparent` is the engine's own (hex and dashes, nothing to escape). */
  engineTraceparent: boolean,
  /** JSON members (`,"k":v…`) the engine adds to a frame of its own (an observer's activation). */
  extraFields?: string,
): string {
  let t: string;
  if (dataTail !== null) {
    t = '{"type":"invokefunction","function_id":' + fidJson + ',"data":' + dataTail + ',"invocation_id":"' + engineId + '"';
    // Without tracing the caller's traceparent is passed on unchanged, and it is in the tail.
    if (engineTraceparent && traceparent) t += ',"traceparent":"' + traceparent + '"';
    return t + '}';
  }
  // `engineId` is UUID-shaped: nothing to escape.
  t = '{"type":"invokefunction","invocation_id":"' + engineId + '","function_id":' + fidJson + ',"data":' + (JSON.stringify(data) ?? 'null');
  if (traceparent) t += ',"traceparent":' + (engineTraceparent ? '"' + traceparent + '"' : JSON.stringify(traceparent));
  if (msg.baggage) t += ',"baggage":' + JSON.stringify(msg.baggage);
  if (msg.metadata !== undefined) t += ',"metadata":' + JSON.stringify(msg.metadata);
  if (extraFields !== undefined) t += extraFields;
  return t + '}';
}

/**
 * The caller's answer made from the callee's result frame, when that begins `{"type":
 * "invocationresult","invocation_id":"<engineId>","function_id":<fidJson>,"result":` (svc's SDKs
 * write that order), carries no error, and its function_id (the last, should there be two) is
 * `fid`: the callee's text with the caller's invocation_id written last. null for any other
 * layout, or a small frame.
 */
export function forwardedResult(text: string, msg: InvocationResultMsg, engineId: string, fid: string, fidJson: string, callerIdJson: string): string | null {
  if (text.length < PASS_ON_MIN_CHARS || msg.error !== undefined || msg.function_id !== fid || text.charCodeAt(text.length - 1) !== 0x7d) return null;
  const head = '{"type":"invocationresult","invocation_id":"' + engineId + '","function_id":' + fidJson + ',"result":';
  if (text.slice(0, head.length) !== head) return null;
  // From the function_id on: `,"function_id":` is 15 characters before fidJson and `,"result":` 10 after it.
  return '{"type":"invocationresult"' + text.slice(head.length - fidJson.length - 25, -1) + ',"invocation_id":' + callerIdJson + '}';
}

/** The caller's answer from parsed parts (errors, builtins, other layouts). */
export function resultText(callerIdJson: string, fidJson: string, result: unknown, error: unknown, traceparent: string | null | undefined, baggage: string | null | undefined): string {
  let t = '{"type":"invocationresult","invocation_id":' + callerIdJson + ',"function_id":' + fidJson;
  t += error ? ',"error":' + JSON.stringify(error) : ',"result":' + (result === undefined ? 'null' : (JSON.stringify(result) ?? 'null'));
  if (traceparent) t += ',"traceparent":' + JSON.stringify(traceparent);
  if (baggage) t += ',"baggage":' + JSON.stringify(baggage);
  return t + '}';
}
