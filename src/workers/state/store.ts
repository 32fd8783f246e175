/**
 * The state store interface behind `svc-state`, with the types, limits and errors every store
 * shares. Two implementations exist (embedded-store.ts on LMDB, redis-store.ts on Redis) and one
 * conformance suite (test/workers/state/conformance.ts) runs against both, so anything a caller can
 * observe is defined here or in ops.ts, never by a store.
 *
 * Validation happens once, in the functions below, before a store is touched: stores receive
 * well-formed scopes, keys and normalized ops.
 */
import { SvcError } from 'svc-sdk';
import { describe, hasLoneSurrogate } from '../shared/describe.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** A path into a value: object property names and array indexes. `[]` is the whole value. */
export type PathSegment = string | number;
export type Path = PathSegment[];

/** An update op after validation (see normalizeOps for the accepted input forms). */
export type UpdateOp =
  | { type: 'set'; path: Path; value: JsonValue }
  | { type: 'merge'; path: Path; value: { [k: string]: JsonValue } }
  | { type: 'increment'; path: Path; by: number }
  | { type: 'decrement'; path: Path; by: number }
  /** `field`: the path was a field name (a string), on which iii starts a string from nothing. */
  | { type: 'append'; path: Path; value: JsonValue; field: boolean }
  | { type: 'remove'; path: Path };

export const OP_TYPES = ['set', 'merge', 'increment', 'decrement', 'append', 'remove'] as const;

/**
 * What a write did. `old_value`/`new_value` are null when the key was absent before/after;
 * `existed`/`exists` tell an absent key from a stored null (the trigger event type needs it).
 */
export interface Change {
  old_value: JsonValue;
  new_value: JsonValue;
  existed: boolean;
  exists: boolean;
}

/** An op that failed in a best-effort `state::update` (iii's `UpdateOpError`). */
export interface OpError {
  /** Index of the op in the call's `ops`. */
  op_index: number;
  code: StateErrorCode;
  message: string;
}

/** What an update did: the change, and the ops that failed (always empty for an atomic update). */
export interface UpdateChange extends Change {
  errors: OpError[];
}

export interface Entry {
  key: string;
  value: JsonValue;
}

/** One page of a scope's entries. */
export interface ListPage {
  entries: Entry[];
  /** The last key of this page when more entries follow (pass it back as `after`), else null. */
  next: string | null;
}

export interface StateStore {
  /** The stored value, or null when nothing is stored. */
  get(scope: string, key: string): Promise<JsonValue>;
  /** Store `json` (the JSON text of a value already checked against the size limit). */
  set(scope: string, key: string, json: string): Promise<Change>;
  delete(scope: string, key: string): Promise<Change>;
  /**
   * Apply ops in order, in one write (ops.ts). `atomic`: either every op applies or the value is
   * unchanged and this throws; otherwise an op that fails is skipped and listed in `errors`.
   */
  update(scope: string, key: string, ops: UpdateOp[], atomic: boolean): Promise<UpdateChange>;
  /**
   * Entries of a scope, ordered by key (UTF-8 byte order), from the first key after `after`
   * (undefined: from the start): at most `limit` of them, and only as many as fit in `maxBytes` of
   * answer (entryBytes), but always at least one.
   */
  listPage(scope: string, after: string | undefined, limit: number, maxBytes: number): Promise<ListPage>;
  /** Scopes holding at least one key, ordered (UTF-8 byte order). */
  listGroups(): Promise<string[]>;
  /** Let every operation already issued finish (acknowledged writes stay written), then close. */
  close(): Promise<void>;
}

export interface StoreLimits {
  /** Largest value, measured as the UTF-8 bytes of its JSON text. */
  maxValueBytes: number;
}

export const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;
/** LMDB keys are at most 1978 bytes; these limits keep scope + key inside that in every store. */
export const MAX_SCOPE_BYTES = 256;
export const MAX_KEY_BYTES = 1024;
/** Deepest path an op may name; deeper paths are almost certainly a bug in the caller. */
export const MAX_PATH_DEPTH = 64;

export type StateErrorCode =
  | 'invalid_payload'
  | 'result_too_large'
  | 'invalid_op'
  | 'invalid_path'
  | 'key_too_large'
  | 'value_too_large'
  | 'type_error'
  | 'store_unavailable'
  | 'invalid_config';

/** Every error svc-state returns: the SDK sends `code` and `message` to the caller. */
export class StateError extends SvcError {
  declare readonly code: StateErrorCode;
  constructor(code: StateErrorCode, message: string) {
    super(code, message);
    this.name = 'StateError';
  }
}

// ---- validation -------------------------------------------------------------------------------

export function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? s.slice(0, 80) + '…' : s);
}

export function payloadObject(fn: string, data: unknown): Record<string, unknown> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new StateError('invalid_payload', `${fn}: payload must be an object, got ${describe(data)}`);
  }
  return data as Record<string, unknown>;
}

function checkName(fn: string, field: 'scope' | 'key', v: unknown, max: number): string {
  if (typeof v !== 'string' || v.length === 0) {
    throw new StateError('invalid_payload', `${fn}: "${field}" must be a non-empty string, got ${describe(v)}`);
  }
  // A UTF-8 string has at most 3 bytes per UTF-16 unit: most names need no byte count.
  if (v.length * 3 > max) {
    const bytes = Buffer.byteLength(v, 'utf8');
    if (bytes > max) throw new StateError('key_too_large', `${fn}: ${field} ${quote(v)} is ${bytes} bytes; the limit is ${max}`);
  }
  // A lone surrogate cannot be encoded as UTF-8 and would come back as U+FFFD: refuse it.
  if (hasLoneSurrogate(v)) {
    throw new StateError('invalid_payload', `${fn}: ${field} ${quote(v)} is not valid Unicode (lone surrogate)`);
  }
  return v;
}

/** What one entry adds to an answer's JSON: `{"key":<key>,"value":<value text>},`, in bytes. */
export function entryBytes(key: string, valueJson: string): number {
  return 18 + Buffer.byteLength(JSON.stringify(key), 'utf8') + Buffer.byteLength(valueJson, 'utf8');
}

export function checkScope(fn: string, v: unknown): string {
  return checkName(fn, 'scope', v, MAX_SCOPE_BYTES);
}
export function checkKey(fn: string, v: unknown): string {
  return checkName(fn, 'key', v, MAX_KEY_BYTES);
}

/** JSON text of a value to store, or a clear error (too large, or not representable as JSON). */
export function encodeValue(fn: string, scope: string, key: string, value: unknown, limits: StoreLimits): string {
  if (value === undefined) {
    throw new StateError('invalid_payload', `${fn}: "value" is missing (scope ${quote(scope)}, key ${quote(key)}); use null to store null`);
  }
  const json = JSON.stringify(value);
  checkSize(fn, scope, key, json, limits);
  return json;
}

export function checkSize(fn: string, scope: string, key: string, json: string, limits: StoreLimits): void {
  // Cheap bound first: a UTF-8 string has at most 3 bytes per UTF-16 unit.
  if (json.length * 3 <= limits.maxValueBytes) return;
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > limits.maxValueBytes) {
    throw new StateError(
      'value_too_large',
      `${fn}: value for scope ${quote(scope)}, key ${quote(key)} is ${bytes} bytes of JSON; the limit (max_value_bytes) is ${limits.maxValueBytes}`,
    );
  }
}

/**
 * Parse a path, as iii defines it: a string names one first-level field literally ("a.b" is the
 * field named "a.b"); an array is a nested path of literal names and array indexes; absent, "" or
 * [] is the whole value.
 */
export function parsePath(fn: string, opIndex: number, raw: unknown): Path {
  if (raw === undefined || raw === null || raw === '') return [];
  let segs: unknown[];
  if (typeof raw === 'string') segs = [raw];
  else if (Array.isArray(raw)) segs = raw;
  else throw new StateError('invalid_path', `${fn}: ops[${opIndex}].path must be a field name or an array of segments, got ${describe(raw)}`);
  if (segs.length > MAX_PATH_DEPTH) {
    throw new StateError('invalid_path', `${fn}: ops[${opIndex}].path has ${segs.length} segments; the limit is ${MAX_PATH_DEPTH}`);
  }
  const path: Path = [];
  for (const s of segs) {
    const shown = typeof raw === 'string' ? quote(raw) : JSON.stringify(raw);
    if (typeof s === 'number') {
      if (!Number.isSafeInteger(s) || s < 0) {
        throw new StateError('invalid_path', `${fn}: ops[${opIndex}].path ${shown}: index ${s} must be a non-negative integer`);
      }
      path.push(s);
    } else if (typeof s === 'string') {
      if (s === '') throw new StateError('invalid_path', `${fn}: ops[${opIndex}].path ${shown} has an empty segment`);
      // Would reach Object.prototype through a plain object; never a legitimate field name here.
      if (s === '__proto__') throw new StateError('invalid_path', `${fn}: ops[${opIndex}].path ${shown}: segment "__proto__" is not allowed`);
      path.push(s);
    } else {
      throw new StateError('invalid_path', `${fn}: ops[${opIndex}].path ${shown}: segments must be strings or integers, got ${describe(s)}`);
    }
  }
  return path;
}

/** Validate `ops` from a `state::update` payload into UpdateOps, naming the first bad op. */
/**
 * Ops in one state::update. Each failing op is answered with an error naming the scope, key and
 * path (up to about 1.5 KB), so without a bound a 4 MB list of failing ops was answered with 144 MB
 * (and 16 MB with more than a string can hold); it also bounds the Redis script's run.
 */
export const MAX_UPDATE_OPS = 1000;

export function normalizeOps(fn: string, raw: unknown): UpdateOp[] {
  if (!Array.isArray(raw)) throw new StateError('invalid_payload', `${fn}: "ops" must be an array of ops, got ${describe(raw)}`);
  if (raw.length > MAX_UPDATE_OPS) throw new StateError('invalid_payload', `${fn}: "ops" may hold at most ${MAX_UPDATE_OPS} ops, got ${raw.length}`);
  return raw.map((op, i): UpdateOp => {
    if (typeof op !== 'object' || op === null || Array.isArray(op)) {
      throw new StateError('invalid_op', `${fn}: ops[${i}] must be an object like {"type":"set","path":"a.b","value":1}, got ${describe(op)}`);
    }
    const o = op as Record<string, unknown>;
    const path = parsePath(fn, i, o.path);
    switch (o.type) {
      case 'set':
      case 'append':
        if (o.value === undefined) throw new StateError('invalid_op', `${fn}: ops[${i}] (${o.type}) needs a "value"`);
        if (o.type === 'append') return { type: 'append', path, value: o.value as JsonValue, field: typeof o.path === 'string' && path.length === 1 };
        return { type: 'set', path, value: o.value as JsonValue };
      case 'merge':
        if (typeof o.value !== 'object' || o.value === null || Array.isArray(o.value)) {
          throw new StateError('invalid_op', `${fn}: ops[${i}] (merge) "value" must be an object, got ${describe(o.value)}`);
        }
        if (Object.hasOwn(o.value, '__proto__')) throw new StateError('invalid_op', `${fn}: ops[${i}] (merge) field "__proto__" is not allowed`);
        return { type: 'merge', path, value: o.value as { [k: string]: JsonValue } };
      case 'increment':
      case 'decrement': {
        const by = o.by ?? o.value ?? 1;
        if (typeof by !== 'number' || !Number.isFinite(by)) {
          throw new StateError('invalid_op', `${fn}: ops[${i}] (${o.type}) "by" must be a finite number, got ${describe(by)}`);
        }
        return { type: o.type, path, by };
      }
      case 'remove':
        return { type: 'remove', path };
      default:
        throw new StateError('invalid_op', `${fn}: ops[${i}].type must be one of ${OP_TYPES.join(', ')}; got ${describe(o.type)}`);
    }
  });
}

export function pathText(path: Path): string {
  if (path.length === 0) return '(root)';
  return path.length === 1 && typeof path[0] === 'string' ? JSON.stringify(path[0]) : JSON.stringify(path);
}
