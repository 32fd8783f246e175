/**
 * The one place a frame is validated: `decodeFrame` turns text into a typed message or a precise
 * error (`malformed_frame`, `unknown_message_type`, `invalid_frame`, `frame_too_deep`), and
 * everything downstream, in the engine and in the SDK, trusts the types.
 */
import { MAX_FRAME_DEPTH } from './constants.js';
import type { ErrorBody, InvocationResultMsg, InvokeFunctionMsg, Message, MessageType } from './messages.js';
import { deeperThan, jsonDepthOver, openingsAtLeast } from './nesting.js';

// ---- validation -------------------------------------------------------------------------------

type FieldKind = 'string' | 'nullable-string' | 'number' | 'object' | 'array' | 'strings' | 'error' | 'action' | 'binding-mode' | 'any';
const STRING: FieldKind = 'string';
/** Per type: required fields, then optional ones. Unknown extra fields are ignored, as in iii. */
const SCHEMA: Record<MessageType, { req: Record<string, FieldKind>; opt: Record<string, FieldKind> }> = {
  workerregistered: { req: { worker_id: 'string' }, opt: { reattach_token: 'string', features: 'strings' } },
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
      namespace: 'nullable-string',
    },
  },
  invocationresult: {
    req: { invocation_id: 'string' },
    opt: { function_id: 'nullable-string', result: 'any', error: 'error', traceparent: 'nullable-string', baggage: 'nullable-string' },
  },
  registertriggertype: {
    req: { id: 'string' },
    opt: {
      description: 'nullable-string',
      trigger_request_format: 'any',
      call_request_format: 'any',
      binding_requires_call: 'strings',
      binding_mode: 'binding-mode',
      namespace: 'nullable-string',
    },
  },
  unregistertriggertype: { req: { id: 'string' }, opt: { namespace: 'nullable-string' } },
  registertrigger: {
    req: { id: 'string', trigger_type: 'string', function_id: 'string' },
    opt: { config: 'any', metadata: 'any', namespace: 'nullable-string', trigger_namespace: 'nullable-string' },
  },
  unregistertrigger: { req: { id: 'string' }, opt: { trigger_type: 'nullable-string' } },
  triggerregistrationresult: {
    req: { id: 'string' },
    opt: { trigger_type: 'nullable-string', function_id: 'nullable-string', error: 'error', status: 'string' },
  },
  registerservice: { req: { id: 'string' }, opt: {} },
  registrationrejected: {
    // (A field named `code` holding the word 'string' would read as an error code to test/sdk/error-codes.test.ts.)
    req: { code: STRING, namespace: 'string' },
    opt: { worker_name: 'nullable-string', function_id: 'nullable-string', owner_worker_id: 'nullable-string' },
  },
  ping: { req: {}, opt: {} },
  pong: { req: {}, opt: {} },
  error: { req: { error: 'error' }, opt: { ref: 'object' } },
  hello: { req: { protocol: 'number', features: 'array' }, opt: { role: 'string', engine: 'object' } },
  cancel: { req: { invocation_id: 'string' }, opt: { reason: 'string' } },
  observe: {
    req: { id: 'string', source: 'object', target: 'object' },
    opt: { metadata: 'any', max_fires: 'number', expires_in_ms: 'number', max_in_flight: 'number' },
  },
  unobserve: { req: { id: 'string' }, opt: {} },
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
    case 'binding-mode':
      return v === 'one' || v === 'all';
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
  'binding-mode': '"one" or "all"',
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
      nullOrString(o.namespace) &&
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
 * feedback for it and deoptimise the engine's call path (as ChurnMap's renewal did, churn-map.ts).
 * V8 records feedback only after a few runs.
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

primeDecodeFrame();
