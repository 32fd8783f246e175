/**
 * The `state::*` functions as plain handlers over a StateStore: payload validation, the calls, and
 * change events for the `state` trigger type. worker.ts puts them on the wire; the conformance suite
 * calls them directly against every store, so what a caller sees is tested once for all stores.
 */
import type { CallRequest } from 'svc-sdk';
import {
  StateError,
  checkKey,
  checkScope,
  encodeValue,
  normalizeOps,
  payloadObject,
  type Change,
  type Entry,
  type JsonValue,
  type StateStore,
  type StoreLimits,
} from './store.js';

export type StateEventType = 'created' | 'updated' | 'deleted';

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
  'state::update'(data: unknown, parent?: CallParent): Promise<{ old_value: JsonValue; new_value: JsonValue }>;
  'state::list'(data: unknown): Promise<Entry[]>;
  'state::list_groups'(data: unknown): Promise<{ groups: string[] }>;
}

export const FUNCTION_DESCRIPTIONS: Record<keyof StateFunctions, string> = {
  'state::get': 'Read {scope, key}: the stored value, or null when nothing is stored.',
  'state::set': 'Store {scope, key, value}; returns {old_value, new_value}.',
  'state::delete': 'Delete {scope, key}; returns the deleted value or null.',
  'state::update':
    'Atomically apply {scope, key, ops} (set, merge, increment, decrement, append, remove; each with an optional path); returns {old_value, new_value}.',
  'state::list': 'The entries [{key, value}] of {scope}, ordered by key.',
  'state::list_groups': 'The scopes that hold at least one key: {groups}.',
};

function eventOf(scope: string, key: string, c: Change): StateEvent | undefined {
  const event_type: StateEventType | undefined = c.exists ? (c.existed ? 'updated' : 'created') : c.existed ? 'deleted' : undefined;
  if (!event_type) return undefined;
  return { type: 'state', event_type, scope, key, old_value: c.old_value, new_value: c.new_value };
}

/**
 * Build the handlers. `onChange` runs after a write is durable, once per write that changed
 * something (an update that leaves an absent key absent is not an event).
 */
export function stateFunctions(store: StateStore, limits: StoreLimits, onChange?: (e: StateEvent, parent: CallParent | undefined) => void): StateFunctions {
  const emit = (scope: string, key: string, c: Change, parent: CallParent | undefined) => {
    if (onChange) {
      const e = eventOf(scope, key, c);
      if (e) onChange(e, parent);
    }
    return { old_value: c.old_value, new_value: c.new_value };
  };
  return {
    async 'state::get'(data) {
      const p = payloadObject('state::get', data);
      return store.get(checkScope('state::get', p.scope), checkKey('state::get', p.key));
    },
    async 'state::set'(data, parent) {
      const p = payloadObject('state::set', data);
      const scope = checkScope('state::set', p.scope);
      const key = checkKey('state::set', p.key);
      const json = encodeValue('state::set', scope, key, p.value, limits);
      return emit(scope, key, await store.set(scope, key, json), parent);
    },
    async 'state::delete'(data, parent) {
      const p = payloadObject('state::delete', data);
      const scope = checkScope('state::delete', p.scope);
      const key = checkKey('state::delete', p.key);
      const c = await store.delete(scope, key);
      emit(scope, key, c, parent);
      return c.old_value;
    },
    async 'state::update'(data, parent) {
      const p = payloadObject('state::update', data);
      const scope = checkScope('state::update', p.scope);
      const key = checkKey('state::update', p.key);
      const ops = normalizeOps('state::update', p.ops);
      return emit(scope, key, await store.update(scope, key, ops), parent);
    },
    async 'state::list'(data) {
      const p = payloadObject('state::list', data);
      return store.list(checkScope('state::list', p.scope));
    },
    async 'state::list_groups'(data) {
      if (data !== undefined && data !== null && (typeof data !== 'object' || Array.isArray(data))) {
        throw new StateError('invalid_payload', `state::list_groups: payload must be an object or absent, got ${typeof data}`);
      }
      return { groups: await store.listGroups() };
    },
  };
}
