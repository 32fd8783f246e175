/**
 * The `state::*` functions as plain handlers over a StateStore: payload validation, the calls, and
 * change events for the `state` trigger type. worker.ts puts them on the wire; the conformance suite
 * calls them directly against every store, so what a caller sees is tested once for all stores.
 */
import { DEFAULT_MAX_FRAME_BYTES, type CallRequest } from 'svc-sdk';
import type { StateCounters } from 'svc-sdk/protocol';
import { describe } from '../shared/describe.js';
import {
  StateError,
  checkKey,
  checkScope,
  encodeValue,
  MAX_KEY_BYTES,
  normalizeOps,
  payloadObject,
  quote,
  type Change,
  type Entry,
  type JsonValue,
  type OpError,
  type StateStore,
  type StoreLimits,
} from './store.js';

/** iii's names (npm iii-sdk `StateEventType`, PyPI `iii.state.StateEventType`, which validates them). */
export type StateEventType = 'state:created' | 'state:updated' | 'state:deleted';

/** Payload delivered to functions bound with a `state` trigger. */
export interface StateEvent {
  type: 'state';
  event_type: StateEventType;
  scope: string;
  key: string;
  old_value: JsonValue;
  new_value: JsonValue;
}

/**
 * The call a write was made in (the handler's ctx): events it fires are its children in the trace.
 * What svc-sdk's `trigger({parent})` takes.
 */
export type CallParent = NonNullable<CallRequest['parent']>;

export interface StateFunctions {
  'state::get'(data: unknown): Promise<JsonValue>;
  'state::set'(data: unknown, parent?: CallParent): Promise<{ old_value: JsonValue; new_value: JsonValue }>;
  'state::delete'(data: unknown, parent?: CallParent): Promise<JsonValue>;
  'state::update'(data: unknown, parent?: CallParent): Promise<UpdateResult>;
  'state::list'(data: unknown): Promise<JsonValue[] | { entries: Entry[]; next_cursor: string | null }>;
  'state::list_groups'(data: unknown): Promise<{ groups: string[] }>;
}

export const FUNCTION_DESCRIPTIONS: Record<keyof StateFunctions, string> = {
  'state::get': 'Read {scope, key}: the stored value, or null when nothing is stored.',
  'state::set': 'Store {scope, key, value}; returns {old_value, new_value}.',
  'state::delete': 'Delete {scope, key}; returns the deleted value or null.',
  'state::update':
    'Apply {scope, key, ops, atomic?} in one write (set, merge, increment, decrement, append, remove; each with an optional path: a field name, or an array of segments); returns {old_value, new_value, errors?}. An op that fails is skipped and listed in errors; with atomic: true, it fails the call and nothing is written.',
  'state::list':
    'The values of {scope}, ordered by key, as a flat array. With {limit?, cursor?}: one page of entries with their keys, {entries: [{key, value}], next_cursor}; pass next_cursor back as cursor for the next (null on the last page).',
  'state::list_groups': 'The scopes that hold at least one key: {groups}.',
};

/** `state::update`'s answer: iii's StateUpdateResult. `errors` is left out when no op failed. */
export interface UpdateResult {
  old_value: JsonValue;
  new_value: JsonValue;
  errors?: OpError[];
}

/** `deleting`: a delete is an event even when the key was absent (iii fires it with old_value null). */
function eventOf(scope: string, key: string, c: Change, deleting: boolean): StateEvent | undefined {
  const event_type: StateEventType | undefined = c.exists ? (c.existed ? 'state:updated' : 'state:created') : c.existed || deleting ? 'state:deleted' : undefined;
  if (!event_type) return undefined;
  return { type: 'state', event_type, scope, key, old_value: c.old_value, new_value: c.new_value };
}

/** Entries per page when a paged `state::list` gives no `limit`, and the most it may ask for. */
export const DEFAULT_LIST_LIMIT = 1000;
export const MAX_LIST_LIMIT = 10_000;

export interface ServiceLimits extends StoreLimits {
  /**
   * How many bytes of entries one `state::list` answer may hold: what fits in a frame the engine
   * accepts (its `max_frame_bytes`, less room for the frame around them). Default: 16 MiB less 16 KiB.
   */
  answerBytes?: () => number;
}

/**
 * Operations served since start, and the JSON characters of the values `state::set` stored: sent
 * with the worker's process reports (engine::workers::report `state`), which /metrics exports. A
 * counter increment per call; no value is measured that the call did not measure already.
 */
export type StateCounts = StateCounters;

export const newStateCounts = (): StateCounts => ({ gets: 0, sets: 0, updates: 0, deletes: 0, lists: 0, set_bytes: 0 });

/** Room for the rest of an answer's frame: the ids, `next_cursor` (a key of up to 1 KiB, escaped). */
export const ANSWER_FRAME_ROOM = 16 * 1024;

/**
 * Build the handlers. `onChange` runs after a write is durable, once per write that changed
 * something, and once per delete (of an absent key too, as iii does); an update that leaves an
 * absent key absent is not an event.
 */
export function stateFunctions(
  store: StateStore,
  limits: ServiceLimits,
  onChange?: (e: StateEvent, parent: CallParent | undefined) => void,
  counts: StateCounts = newStateCounts(),
): StateFunctions {
  const answerBytes = limits.answerBytes ?? (() => DEFAULT_MAX_FRAME_BYTES - ANSWER_FRAME_ROOM);
  const emit = (scope: string, key: string, c: Change, parent: CallParent | undefined, deleting = false) => {
    if (onChange) {
      const e = eventOf(scope, key, c, deleting);
      if (e) onChange(e, parent);
    }
    return { old_value: c.old_value, new_value: c.new_value };
  };
  return {
    async 'state::get'(data) {
      counts.gets++;
      const p = payloadObject('state::get', data);
      return store.get(checkScope('state::get', p.scope), checkKey('state::get', p.key));
    },
    async 'state::set'(data, parent) {
      counts.sets++;
      const p = payloadObject('state::set', data);
      const scope = checkScope('state::set', p.scope);
      const key = checkKey('state::set', p.key);
      const json = encodeValue('state::set', scope, key, p.value, limits);
      counts.set_bytes += json.length;
      return emit(scope, key, await store.set(scope, key, json), parent);
    },
    async 'state::delete'(data, parent) {
      counts.deletes++;
      const p = payloadObject('state::delete', data);
      const scope = checkScope('state::delete', p.scope);
      const key = checkKey('state::delete', p.key);
      const c = await store.delete(scope, key);
      emit(scope, key, c, parent, true);
      return c.old_value;
    },
    async 'state::update'(data, parent) {
      counts.updates++;
      const p = payloadObject('state::update', data);
      const scope = checkScope('state::update', p.scope);
      const key = checkKey('state::update', p.key);
      const ops = normalizeOps('state::update', p.ops);
      const atomic = p.atomic ?? false;
      if (typeof atomic !== 'boolean') throw new StateError('invalid_payload', `state::update: "atomic" must be true or false, got ${describe(atomic)}`);
      const c = await store.update(scope, key, ops, atomic);
      const result: UpdateResult = emit(scope, key, c, parent);
      if (c.errors.length > 0) result.errors = c.errors;
      return result;
    },
    async 'state::list'(data) {
      counts.lists++;
      const p = payloadObject('state::list', data);
      const scope = checkScope('state::list', p.scope);
      if (p.limit == null && p.cursor == null) {
        // Unpaged, as iii answers it: the values alone, the whole scope, when it fits in one answer.
        const all = await store.listPage(scope, undefined, Infinity, answerBytes());
        if (all.next !== null) {
          throw new StateError(
            'result_too_large',
            `state::list: scope ${quote(scope)} holds more than fits in one answer (${answerBytes()} bytes); page through it with {"scope", "limit"} and then {"scope", "cursor": <next_cursor>}`,
          );
        }
        return all.entries.map((e) => e.value);
      }
      const limit = p.limit ?? DEFAULT_LIST_LIMIT;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
        throw new StateError('invalid_payload', `state::list: "limit" must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${describe(limit)}`);
      }
      const cursor = p.cursor ?? undefined;
      // A cursor is a key (next_cursor of the previous page): the stores seek to it.
      if (cursor !== undefined && (typeof cursor !== 'string' || cursor === '' || Buffer.byteLength(cursor, 'utf8') > MAX_KEY_BYTES)) {
        throw new StateError('invalid_payload', `state::list: "cursor" must be the next_cursor of the previous page (a key: a non-empty string of at most ${MAX_KEY_BYTES} bytes), got ${describe(cursor)}`);
      }
      const page = await store.listPage(scope, cursor, limit, answerBytes());
      return { entries: page.entries, next_cursor: page.next };
    },
    async 'state::list_groups'(data) {
      if (data !== undefined && data !== null && (typeof data !== 'object' || Array.isArray(data))) {
        throw new StateError('invalid_payload', `state::list_groups: payload must be an object or absent, got ${typeof data}`);
      }
      return { groups: await store.listGroups() };
    },
  };
}
