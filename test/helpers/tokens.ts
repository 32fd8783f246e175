/** Tokens for the tests of rights (engine.auth.tokens entries) and what a trigger type asks of binders. */
import type { Worker } from 'svc-sdk';
import type { TokenSpec } from '../../src/engine/auth.js';

export function adminToken(secret: string): TokenSpec {
  return { name: 'admin', token: secret, admin: true, call: [], register: [], trigger_types: [] };
}

/** A non-admin token with the given rights (none by default). */
export function token(name: string, secret: string, rights: { call?: string[]; register?: string[]; trigger_types?: string[]; names?: string[] }): TokenSpec {
  return {
    name,
    token: secret,
    admin: false,
    call: rights.call ?? [],
    register: rights.register ?? [],
    trigger_types: rights.trigger_types ?? [],
    ...(rights.names ? { names: rights.names } : {}),
  };
}

/** What binding a trigger of `type` needs its binder to be allowed to call (engine::triggers::list). */
export async function bindingRequires(w: Worker, type: string): Promise<string[] | undefined> {
  const { trigger_types } = await w.trigger<{ trigger_types: Array<{ id: string; binding_requires_call: string[] }> }>({ function_id: 'engine::triggers::list' });
  return trigger_types.find((t) => t.id === type)?.binding_requires_call;
}
