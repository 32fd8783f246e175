/**
 * The svc wire protocol: JSON text frames over one WebSocket per worker, keyed by a lowercase `type`.
 *
 * The message set is a superset of iii-sdk 0.22's, so unmodified iii clients work. Messages marked
 * "svc extension" are only ever sent to a peer that asked for them in its `hello` frame, so iii
 * clients never see them. docs/protocol.md documents every message with an example.
 *
 * This module is the single place a frame is validated: `decodeFrame` turns text into a typed
 * message or a precise error, and everything downstream trusts the types.
 */
import { deeperThan, jsonDepthOver, openingsAtLeast } from './nesting.js';

export const PROTOCOL_VERSION = 1;
export const DEFAULT_ENGINE_PORT = 49134;
export const DEFAULT_ENGINE_URL = `ws://localhost:${DEFAULT_ENGINE_PORT}`;
/** Largest frame the engine accepts by default; SDKs refuse to send larger ones. */
export const DEFAULT_MAX_FRAME_BYTES = 8 * 1024 * 1024;
export const DEFAULT_INVOCATION_TIMEOUT_MS = 30_000;
/**
 * Deepest nesting of arrays and objects a frame may have, its own object counted: `{"data":[1]}`
 * is 2 deep. serde_json's default recursion limit, which iii's engine parses frames with, refuses
 * the 128th level, so every frame an iii peer can exchange with iii is accepted here. It bounds the
 * recursion of everything that walks a frame's values: JSON.stringify in the engine (which throws
 * at a few thousand levels), Python's json module in Python workers (at about 1,000).
 */
export const MAX_FRAME_DEPTH = 128;

/** Features a peer can ask for in `hello`. The engine answers with the subset it grants. */
export type Feature =
  /** engine → callee `cancel` when a call times out or its caller leaves; caller → engine `cancel`. */
  | 'cancel'
  /** positive `triggerregistrationresult` (with `status`) for every `registertrigger`, not only errors. */
  | 'ack';
export const FEATURES: readonly Feature[] = ['cancel', 'ack'];

export interface ErrorBody {
  code: string;
  message: string;
  stacktrace?: string;
}

export type InvocationAction = { type: 'void' } | { type: 'enqueue'; queue: string };

// ---- iii 0.22 message set -------------------------------------------------------------------

export interface WorkerRegisteredMsg {
  type: 'workerregistered';
  worker_id: string;
  reattach_token?: string;
}
export interface ReattachMsg {
  type: 'reattach';
  previous_worker_id: string;
  reattach_token?: string;
}
export interface RegisterFunctionMsg {
  type: 'registerfunction';
  id: string;
  description?: string;
  request_format?: unknown;
  response_format?: unknown;
  metadata?: Record<string, unknown>;
  /** iii: an externally HTTP-invoked function. Accepted and listed; svc does not call out over HTTP. */
  invocation?: unknown;
}
export interface UnregisterFunctionMsg {
  type: 'unregisterfunction';
  id: string;
}
export interface InvokeFunctionMsg {
  type: 'invokefunction';
  /** Absent or null: fire-and-forget. */
  invocation_id?: string | null;
  function_id: string;
  data?: unknown;
  traceparent?: string;
  baggage?: string;
  action?: InvocationAction;
  metadata?: unknown;
  /** svc extension: engine-side deadline for this call (default from config). iii clients omit it. */
  timeout_ms?: number;
  /**
   * svc extension: the trigger binding this call is made for (a trigger type's provider firing a
   * binding or checking its condition). The engine accepts it only from the binding's provider and
   * authorizes the call with the rights of the binding's owner (docs/security.md).
   */
  binding_id?: string;
}
export interface InvocationResultMsg {
  type: 'invocationresult';
  invocation_id: string;
  function_id?: string;
  result?: unknown;
  error?: ErrorBody;
  traceparent?: string;
  baggage?: string;
}
export interface RegisterTriggerTypeMsg {
  type: 'registertriggertype';
  id: string;
  description?: string;
  trigger_request_format?: unknown;
  call_request_format?: unknown;
  /**
   * svc extension: functions a worker must be allowed to call to bind this type, because a binding
   * lets it observe what they would show it (svc-state's `state` type: `state::get`).
   */
  binding_requires_call?: string[];
}
export interface UnregisterTriggerTypeMsg {
  type: 'unregistertriggertype';
  id: string;
}
export interface RegisterTriggerMsg {
  type: 'registertrigger';
  id: string;
  trigger_type: string;
  function_id: string;
  config?: unknown;
  metadata?: unknown;
}
export interface UnregisterTriggerMsg {
  type: 'unregistertrigger';
  id: string;
  trigger_type?: string;
}
export interface TriggerRegistrationResultMsg {
  type: 'triggerregistrationresult';
  id: string;
  trigger_type: string;
  function_id: string;
  error?: ErrorBody;
  /** svc extension (feature `ack`): `active` once the provider accepted it, `parked` while no provider exists. */
  status?: 'active' | 'parked';
}
/** Legacy iii frame; accepted and ignored. */
export interface RegisterServiceMsg {
  type: 'registerservice';
  id: string;
  name?: string;
  description?: string;
  parent_service_id?: string;
}
export interface PingMsg {
  type: 'ping';
}
export interface PongMsg {
  type: 'pong';
}
/** Engine → peer: a frame could not be accepted. `ref` names the frame it answers when known. */
export interface ErrorMsg {
  type: 'error';
  error: ErrorBody;
  ref?: { type?: string; id?: string };
}

// ---- svc extensions ---------------------------------------------------------------------------

/**
 * svc extension. Peer → engine, first frame of an svc SDK: protocol version and wanted features.
 * Engine → peer: the answer, with the granted features and the engine's limits.
 */
export interface HelloMsg {
  type: 'hello';
  protocol: number;
  features: string[];
  /** peer → engine: `client` for short-lived callers (CLI, console), hidden from worker lists. */
  role?: 'worker' | 'client';
  /** engine → peer */
  engine?: { name: string; version: string; max_frame_bytes: number; invocation_timeout_ms: number };
}
/**
 * svc extension (feature `cancel`). Caller → engine: the caller gave up on its call `invocation_id`.
 * Engine → callee: stop working on `invocation_id`; no result is expected any more.
 */
export interface CancelMsg {
  type: 'cancel';
  invocation_id: string;
  reason?: string;
}

export type Message =
  | WorkerRegisteredMsg
  | ReattachMsg
  | RegisterFunctionMsg
  | UnregisterFunctionMsg
  | InvokeFunctionMsg
  | InvocationResultMsg
  | RegisterTriggerTypeMsg
  | UnregisterTriggerTypeMsg
  | RegisterTriggerMsg
  | UnregisterTriggerMsg
  | TriggerRegistrationResultMsg
  | RegisterServiceMsg
  | PingMsg
  | PongMsg
  | ErrorMsg
  | HelloMsg
  | CancelMsg;

export type MessageType = Message['type'];

// ---- validation -------------------------------------------------------------------------------

type FieldKind = 'string' | 'nullable-string' | 'number' | 'object' | 'array' | 'strings' | 'error' | 'action' | 'any';
/** Per type: required fields, then optional ones. Unknown extra fields are ignored, as in iii. */
const SCHEMA: Record<MessageType, { req: Record<string, FieldKind>; opt: Record<string, FieldKind> }> = {
  workerregistered: { req: { worker_id: 'string' }, opt: { reattach_token: 'string' } },
  reattach: { req: { previous_worker_id: 'string' }, opt: { reattach_token: 'string' } },
  registerfunction: {
    req: { id: 'string' },
    opt: { description: 'nullable-string', request_format: 'any', response_format: 'any', metadata: 'object', invocation: 'any' },
  },
  unregisterfunction: { req: { id: 'string' }, opt: {} },
  invokefunction: {
    req: { function_id: 'string' },
    opt: {
      invocation_id: 'nullable-string',
      data: 'any',
      traceparent: 'nullable-string',
      baggage: 'nullable-string',
      action: 'action',
      metadata: 'any',
      timeout_ms: 'number',
      binding_id: 'nullable-string',
    },
  },
  invocationresult: {
    req: { invocation_id: 'string' },
    opt: { function_id: 'nullable-string', result: 'any', error: 'error', traceparent: 'nullable-string', baggage: 'nullable-string' },
  },
  registertriggertype: {
    req: { id: 'string' },
    opt: { description: 'nullable-string', trigger_request_format: 'any', call_request_format: 'any', binding_requires_call: 'strings' },
  },
  unregistertriggertype: { req: { id: 'string' }, opt: {} },
  registertrigger: {
    req: { id: 'string', trigger_type: 'string', function_id: 'string' },
    opt: { config: 'any', metadata: 'any' },
  },
  unregistertrigger: { req: { id: 'string' }, opt: { trigger_type: 'nullable-string' } },
  triggerregistrationresult: {
    req: { id: 'string' },
    opt: { trigger_type: 'nullable-string', function_id: 'nullable-string', error: 'error', status: 'string' },
  },
  registerservice: { req: { id: 'string' }, opt: {} },
  ping: { req: {}, opt: {} },
  pong: { req: {}, opt: {} },
  error: { req: { error: 'error' }, opt: { ref: 'object' } },
  hello: { req: { protocol: 'number', features: 'array' }, opt: { role: 'string', engine: 'object' } },
  cancel: { req: { invocation_id: 'string' }, opt: { reason: 'string' } },
};

export const MESSAGE_TYPES = Object.keys(SCHEMA) as MessageType[];

/**
 * SCHEMA as arrays, made once: every frame is checked against these, and a for-of over an array
 * is cheaper than a for-in over an object on the path every call takes twice.
 */
type Field = readonly [name: string, kind: FieldKind];
const FIELDS = new Map<string, { req: Field[]; opt: Field[] }>(
  MESSAGE_TYPES.map((t) => [t, { req: Object.entries(SCHEMA[t].req), opt: Object.entries(SCHEMA[t].opt) }]),
);

function kindOk(kind: FieldKind, v: unknown): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'nullable-string':
      return v === null || typeof v === 'string';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'array':
      return Array.isArray(v);
    case 'strings':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'error':
      return (
        typeof v === 'object' &&
        v !== null &&
        typeof (v as ErrorBody).code === 'string' &&
        typeof (v as ErrorBody).message === 'string'
      );
    case 'action': {
      if (typeof v !== 'object' || v === null) return false;
      const t = (v as { type?: unknown }).type;
      return t === 'void' || (t === 'enqueue' && typeof (v as { queue?: unknown }).queue === 'string');
    }
    case 'any':
      return true;
  }
}

const KIND_TEXT: Record<FieldKind, string> = {
  string: 'a string',
  'nullable-string': 'a string or null',
  number: 'a finite number',
  object: 'an object',
  array: 'an array',
  strings: 'an array of strings',
  error: 'an object {code: string, message: string}',
  action: '{"type":"void"} or {"type":"enqueue","queue":string}',
  any: 'any JSON value',
};

export type DecodeResult = { ok: true; msg: Message } | { ok: false; error: ErrorBody; ref?: { type?: string; id?: string } };

/**
 * Validate one parsed JSON value as a protocol message. Optional fields that are present with
 * `null` are treated as absent where null is not meaningful, as iii's serde does with Option.
 */
export function validateMessage(value: unknown): DecodeResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: { code: 'malformed_frame', message: 'Frame must be a JSON object with a "type" field' } };
  }
  const obj = value as Record<string, unknown>;
  const type = obj.type;
  if (typeof type !== 'string') {
    return { ok: false, error: { code: 'malformed_frame', message: 'Frame has no string "type" field' } };
  }
  // A Map, not SCHEMA[type]: "toString" or "__proto__" must not find Object.prototype's members.
  const fields = FIELDS.get(type);
  if (!fields) {
    return {
      ok: false,
      error: { code: 'unknown_message_type', message: `Unknown message type "${type.slice(0, 64)}"` },
      ref: { type: type.slice(0, 64) },
    };
  }
  for (const [field, kind] of fields.req) {
    const v = obj[field];
    if (!kindOk(kind, v)) {
      const got = v === undefined ? 'it is missing' : `got ${describe(v)}`;
      return {
        ok: false,
        error: { code: 'invalid_frame', message: `"${type}" frame: field "${field}" must be ${KIND_TEXT[kind]}, ${got}` },
        ref: { type, id: refId(obj) },
      };
    }
  }
  for (const [field, kind] of fields.opt) {
    const v = obj[field];
    if (v === undefined || v === null) continue;
    if (!kindOk(kind, v)) {
      return {
        ok: false,
        error: { code: 'invalid_frame', message: `"${type}" frame: field "${field}" must be ${KIND_TEXT[kind]}, got ${describe(v)}` },
        ref: { type, id: refId(obj) },
      };
    }
  }
  return { ok: true, msg: obj as unknown as Message };
}

/**
 * The two frames every call brings, `invokefunction` and `invocationresult`, checked field by field
 * by the rules of SCHEMA (a test holds the two equal) without its generic loop: they are most of
 * what the engine and the SDKs receive. Returns the frame, or null: another type, or not valid
 * (validateMessage then says why).
 */
export function asCallFrame(value: unknown): InvokeFunctionMsg | InvocationResultMsg | null {
  if (typeof value !== 'object' || value === null) return null;
  const o = value as Record<string, unknown>;
  const type = o.type;
  if (type === 'invokefunction') {
    const t = o.timeout_ms;
    const action = o.action;
    return typeof o.function_id === 'string' &&
      nullOrString(o.invocation_id) &&
      nullOrString(o.traceparent) &&
      nullOrString(o.baggage) &&
      nullOrString(o.binding_id) &&
      (t == null || (typeof t === 'number' && Number.isFinite(t))) &&
      (action == null || kindOk('action', action))
      ? (o as unknown as InvokeFunctionMsg)
      : null;
  }
  if (type === 'invocationresult') {
    const error = o.error;
    return typeof o.invocation_id === 'string' &&
      nullOrString(o.function_id) &&
      nullOrString(o.traceparent) &&
      nullOrString(o.baggage) &&
      (error == null || kindOk('error', error))
      ? (o as unknown as InvocationResultMsg)
      : null;
  }
  return null;
}

/**
 * The trace id of a W3C traceparent ("00-<32 hex trace id>-<16 hex span id>-<flags>"), or
 * undefined when it has not that shape. What log lines carry (the engine stores the trace id).
 */
export function traceIdOfTraceparent(tp: string | null | undefined): string | undefined {
  return tp != null && tp.length >= 35 && tp.charCodeAt(2) === 0x2d ? tp.slice(3, 35) : undefined;
}

/** Absent, null or a string: an optional nullable-string field. */
function nullOrString(v: unknown): boolean {
  return v == null || typeof v === 'string';
}

/**
 * Parse and validate one text frame. Never throws. `maxDepth`: the deepest nesting of arrays and
 * objects accepted (MAX_FRAME_DEPTH); a deeper frame is refused with `frame_too_deep`, with a `ref`
 * naming its type and id so that a call in it can still be answered.
 */
export function decodeFrame(text: string, maxDepth = MAX_FRAME_DEPTH): DecodeResult {
  let value: unknown;
  try {
    // V8's JSON.parse does not recurse: any depth parses, and is checked below.
    value = JSON.parse(text);
  } catch (e) {
    return {
      ok: false,
      error: { code: 'malformed_frame', message: `Frame is not valid JSON: ${(e as Error).message}` },
    };
  }
  // Nesting deeper than maxDepth takes more than maxDepth opening brackets, and twice as many
  // characters: most frames are too short, or have too few brackets, to need the walk.
  if (text.length > 2 * maxDepth && openingsAtLeast(text, maxDepth + 1) && deeperThan(value, maxDepth)) {
    return tooDeep(value, jsonDepthOver(text, maxDepth), maxDepth);
  }
  const call = asCallFrame(value);
  return call !== null ? { ok: true, msg: call } : validateMessage(value);
}

/**
 * Run decodeFrame's depth scan and its refusal once at load, with type feedback, before any call
 * path is hot: the first frame long enough for the scan would otherwise reach optimised code with no
 * feedback for it and deoptimise the engine's call path (as ChurnMap's renewal did, bench/RESULTS.md
 * session 5; test/engine/jit-stability.test.ts). V8 records feedback only after a few runs.
 */
function primeDecodeFrame(): void {
  const head = '{"type":"invokefunction","function_id":"prime::x","invocation_id":"p","data":';
  const frames = [
    // Long, few brackets: counted only.
    `${head}{"s":"${'x'.repeat(2 * MAX_FRAME_DEPTH)}","q":"\\"[{","a":[1,{"b":null}]}}`,
    // Many brackets, shallow: walked.
    `${head}[${'{"a":[1]},'.repeat(MAX_FRAME_DEPTH)}{}]}`,
    // Too deep: refused, its depth named.
    `${head}${'['.repeat(MAX_FRAME_DEPTH)}${']'.repeat(MAX_FRAME_DEPTH)}}`,
  ];
  for (let i = 0; i < 64; i++) for (const f of frames) decodeFrame(f);
}

function tooDeep(value: unknown, depth: number, limit: number): DecodeResult {
  const error = { code: 'frame_too_deep', message: `Frame nests arrays and objects ${depth} deep; the limit is ${limit} (its own object counted)` };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error };
  const obj = value as Record<string, unknown>;
  return typeof obj.type === 'string' ? { ok: false, error, ref: { type: obj.type.slice(0, 64), id: refId(obj) } } : { ok: false, error };
}

function refId(obj: Record<string, unknown>): string | undefined {
  const id = obj.invocation_id ?? obj.id;
  return typeof id === 'string' ? id.slice(0, 128) : undefined;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

/** Stable error codes produced by the engine and the SDKs (docs/errors.md lists them all). */
export const ErrorCode = {
  FunctionNotFound: 'function_not_found',
  InvocationStopped: 'invocation_stopped',
  InvocationFailed: 'invocation_failed',
  Timeout: 'timeout',
  Cancelled: 'cancelled',
  ConnectionLost: 'connection_lost',
  ShuttingDown: 'shutting_down',
  MalformedFrame: 'malformed_frame',
  InvalidFrame: 'invalid_frame',
  UnknownMessageType: 'unknown_message_type',
  FrameTooLarge: 'frame_too_large',
  FrameTooDeep: 'frame_too_deep',
  PayloadTooLarge: 'payload_too_large',
  ResultTooLarge: 'result_too_large',
  InvalidFunctionId: 'invalid_function_id',
  InvalidPayload: 'invalid_payload',
  EnqueueError: 'enqueue_error',
  TriggerRegistrationFailed: 'trigger_registration_failed',
  TriggerTypeNotFound: 'trigger_type_not_found',
  DuplicateFunction: 'duplicate_function',
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

primeDecodeFrame();
