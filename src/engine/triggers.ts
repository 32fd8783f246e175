import type {
  ErrorBody,
  RegisterTriggerMsg,
  RegisterTriggerTypeMsg,
  TriggerRegistrationResultMsg,
} from 'svc-sdk';
import type { Session } from './session.js';

export interface TriggerType {
  id: string;
  description?: string;
  trigger_request_format?: unknown;
  call_request_format?: unknown;
  /** In registration order; the first live one is active and holds the bindings, the rest stand by. */
  providers: Session[];
}

export interface Binding {
  id: string;
  trigger_type: string;
  function_id: string;
  config: unknown;
  metadata?: unknown;
  owner: Session;
  /** The provider it was handed to; undefined while parked. */
  provider: Session | undefined;
  status: 'pending' | 'active' | 'parked';
}

/**
 * Trigger types (event sources provided by workers, e.g. `http` by svc-http) and the bindings of
 * functions to them. The engine does not interpret a binding's config: it hands each binding to the
 * type's active provider, which accepts or refuses it. Bindings wait ("parked") while their type has
 * no provider, and move to the next provider when one leaves.
 */
export class Triggers {
  private readonly types = new Map<string, TriggerType>();
  private readonly bindings = new Map<string, Binding>();

  constructor(private readonly warn: (message: string) => void) {}

  registerType(session: Session, msg: RegisterTriggerTypeMsg): void {
    let type = this.types.get(msg.id);
    if (!type) {
      type = { id: msg.id, providers: [] };
      this.types.set(msg.id, type);
    }
    if (msg.description != null) type.description = msg.description;
    if (msg.trigger_request_format !== undefined) type.trigger_request_format = msg.trigger_request_format;
    if (msg.call_request_format !== undefined) type.call_request_format = msg.call_request_format;
    session.triggerTypes.add(msg.id);
    if (type.providers.includes(session)) return;
    type.providers.push(session);
    if (this.activeProvider(type) === session) {
      for (const b of this.bindings.values()) {
        if (b.trigger_type === type.id && !b.provider && this.activeProvider(type, b.owner) === session) this.handTo(b, session);
      }
    }
  }

  unregisterType(session: Session, id: string): void {
    session.triggerTypes.delete(id);
    const type = this.types.get(id);
    if (!type) return;
    const i = type.providers.indexOf(session);
    if (i < 0) return;
    type.providers.splice(i, 1);
    for (const b of this.bindings.values()) {
      if (b.provider !== session) continue;
      b.provider = undefined;
      const next = this.activeProvider(type, b.owner);
      if (next) this.handTo(b, next);
      else b.status = 'parked';
    }
    if (type.providers.length === 0) {
      // Keep the type listed only while something still refers to it.
      const used = [...this.bindings.values()].some((b) => b.trigger_type === id);
      if (!used) this.types.delete(id);
    }
  }

  register(owner: Session, msg: RegisterTriggerMsg): void {
    const existing = this.bindings.get(msg.id);
    if (existing) {
      // Same id again: a replay after reconnect (the old connection may not be cleaned up yet) or a
      // re-registration. The newest registration wins.
      this.remove(existing);
    }
    const binding: Binding = {
      id: msg.id,
      trigger_type: msg.trigger_type,
      function_id: msg.function_id,
      config: msg.config ?? {},
      ...(msg.metadata !== undefined ? { metadata: msg.metadata } : {}),
      owner,
      provider: undefined,
      status: 'parked',
    };
    this.bindings.set(msg.id, binding);
    owner.triggers.add(msg.id);
    const type = this.types.get(msg.trigger_type);
    const provider = type ? this.activeProvider(type, owner) : undefined;
    if (provider) {
      this.handTo(binding, provider);
    } else if (owner.features.has('ack')) {
      owner.send({ type: 'triggerregistrationresult', id: msg.id, trigger_type: msg.trigger_type, function_id: msg.function_id, status: 'parked' });
    }
  }

  unregister(owner: Session, id: string): void {
    const b = this.bindings.get(id);
    if (!b || b.owner !== owner) return;
    this.remove(b);
  }

  /** A provider answered a forwarded binding. Errors always go back to the owner (as in iii); success only to svc SDKs. */
  result(provider: Session, msg: TriggerRegistrationResultMsg): void {
    const b = this.bindings.get(msg.id);
    if (!b || b.provider !== provider) return;
    if (msg.error) {
      this.bindings.delete(b.id);
      b.owner.triggers.delete(b.id);
      this.reply(b, msg.error);
      return;
    }
    b.status = 'active';
    if (b.owner.features.has('ack')) this.reply(b);
  }

  /** Everything a departing session held: its bindings go, bindings it provided move on or park. */
  removeSession(session: Session): void {
    for (const id of [...session.triggers]) {
      const b = this.bindings.get(id);
      if (b && b.owner === session) this.remove(b);
    }
    session.triggers.clear();
    for (const id of [...session.triggerTypes]) this.unregisterType(session, id);
  }

  listTypes(): Array<Record<string, unknown>> {
    return [...this.types.values()].map((t) => {
      const active = this.activeProvider(t);
      return {
        id: t.id,
        description: t.description ?? null,
        trigger_request_format: t.trigger_request_format ?? null,
        call_request_format: t.call_request_format ?? null,
        provider: active ? { worker_id: active.id, worker_name: active.name } : null,
        standby_providers: t.providers.filter((p) => p !== active).map((p) => ({ worker_id: p.id, worker_name: p.name })),
        bindings: [...this.bindings.values()].filter((b) => b.trigger_type === t.id).length,
      };
    });
  }

  listBindings(): Array<Record<string, unknown>> {
    return [...this.bindings.values()].map((b) => ({
      id: b.id,
      trigger_type: b.trigger_type,
      function_id: b.function_id,
      config: b.config,
      metadata: b.metadata ?? null,
      worker_id: b.owner.id,
      worker_name: b.owner.name,
      status: b.status,
      provider: b.provider ? { worker_id: b.provider.id, worker_name: b.provider.name } : null,
    }));
  }

  /**
   * Cluster mode: other engines appear as providers (sessions with `node` set). One on this engine
   * goes first; another engine's only when none is here, and never for a binding that another
   * engine handed us (`owner` is its proxy), so a binding is never forwarded twice.
   */
  private activeProvider(type: TriggerType, owner?: Session): Session | undefined {
    const local = type.providers.find((p) => p.open && p.node === undefined);
    if (local || owner?.node !== undefined) return local;
    return type.providers.find((p) => p.open);
  }

  private handTo(b: Binding, provider: Session): void {
    b.provider = provider;
    b.status = 'pending';
    try {
      provider.send({
        type: 'registertrigger',
        id: b.id,
        trigger_type: b.trigger_type,
        function_id: b.function_id,
        config: b.config,
        ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
      });
    } catch (err) {
      // Only a value from outside any frame can fail to encode; the owner learns, the table moves on.
      this.bindings.delete(b.id);
      b.owner.triggers.delete(b.id);
      this.reply(b, { code: 'internal_error', message: `The engine could not hand trigger ${b.id} to ${provider.name}: ${(err as Error).message}` });
    }
  }

  private remove(b: Binding): void {
    this.bindings.delete(b.id);
    b.owner.triggers.delete(b.id);
    if (b.provider?.open) b.provider.send({ type: 'unregistertrigger', id: b.id, trigger_type: b.trigger_type });
    const type = this.types.get(b.trigger_type);
    if (type && type.providers.length === 0 && ![...this.bindings.values()].some((x) => x.trigger_type === type.id)) {
      this.types.delete(type.id);
    }
  }

  private reply(b: Binding, error?: ErrorBody): void {
    if (error) this.warn(`trigger ${b.trigger_type} → ${b.function_id} from ${b.owner.name} refused: ${error.message}`);
    b.owner.send({
      type: 'triggerregistrationresult',
      id: b.id,
      trigger_type: b.trigger_type,
      function_id: b.function_id,
      ...(error ? { error } : { status: 'active' as const }),
    });
  }
}
