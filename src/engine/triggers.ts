import type { ErrorBody, RegisterTriggerMsg, RegisterTriggerTypeMsg, TriggerRegistrationResultMsg } from 'svc-sdk/protocol';
import { Access, BindingAccess, type Rights } from './auth.js';
import { engineErrors } from './errors.js';
import type { Peer } from './peer.js';

export interface TriggerType {
  id: string;
  description?: string;
  trigger_request_format?: unknown;
  call_request_format?: unknown;
  /**
   * `one` (the default): the first live provider holds every binding, the rest stand by (a source
   * that must fire once, like a schedule). `all`: every live provider holds every binding (replicas
   * of a source each serve their share, like svc-http behind a load balancer). Set by the first
   * provider; a later one declaring the other mode is warned about and follows the type's.
   */
  mode: BindingMode;
  /** In registration order; in `one` mode the first live one is active, the rest stand by. */
  providers: Peer[];
  /** Per provider, what it declared a binder must be allowed to call (`binding_requires_call`). */
  requires: Map<Peer, readonly string[]>;
}

export type BindingMode = 'one' | 'all';

/** A `registertrigger` one engine of a cluster hands another: with the binder's rights, which only the first engine knows. */
export type ForwardedBindingMsg = RegisterTriggerMsg & { binder?: Rights | null };

export interface Binding {
  id: string;
  trigger_type: string;
  function_id: string;
  /** The namespace `function_id` resolves in when the binding fires: the binder's unless it named one. */
  namespace: string;
  /** iii 0.23+ `trigger_namespace`, as given: listed (trigger types are engine-wide in svc). */
  trigger_namespace?: string;
  config: unknown;
  metadata?: unknown;
  owner: Peer;
  /**
   * The binder's rights: its owner's token, or for a binding another engine handed over, the
   * rights that engine sent with it. The provider's calls for the binding run with these.
   */
  access: Access;
  /**
   * The providers it was handed to (at most one in `one` mode). None while parked here; a binding
   * handed to another engine that has no provider yet is parked with that engine as its holder.
   */
  holders: Peer[];
  status: 'pending' | 'active' | 'parked';
}

/** Trigger types of iii's built-in workers that svc has no counterpart of, and what to use instead. */
const III_ONLY_TYPES: Record<string, string> = {
  subscribe: "iii's pubsub; svc has none: svc-queue's durable:subscriber with queue::publish is the closest",
  stream: "iii's stream worker; svc has none",
  queue: "iii's old queue trigger; with svc-queue, bind durable:subscriber {topic}",
  configuration: "iii's configuration worker; svc has none",
  trace: "iii's trace trigger; svc has none",
  'engine::workers-available': 'not provided by svc yet',
};

/**
 * Trigger types (event sources provided by workers, e.g. `http` by svc-http) and the bindings of
 * functions to them. The engine does not interpret a binding's config: it hands each binding to the
 * type's active provider, which accepts or refuses it. Bindings wait ("parked") while their type has
 * no provider, and move to the next provider when one leaves.
 */
export class Triggers {
  private readonly types = new Map<string, TriggerType>();
  private readonly bindings = new Map<string, Binding>();
  /** Trigger types with bindings and no provider, to be told of once the wait looks like more than a start-up order. */
  private readonly unprovided = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly warn: (message: string) => void,
    /** How long a binding waits for its type's first provider before the engine's log says so. */
    private readonly unprovidedWarnMs = 5000,
  ) {}

  registerType(peer: Peer, msg: RegisterTriggerTypeMsg): void {
    let type = this.types.get(msg.id);
    const mode: BindingMode = msg.binding_mode ?? 'one';
    if (!type) {
      type = { id: msg.id, mode, providers: [], requires: new Map() };
      this.types.set(msg.id, type);
    } else if (type.providers.length === 0) {
      type.mode = mode;
    } else if (mode !== type.mode && !type.providers.includes(peer)) {
      // Once per provider (another engine's type is registered again with every snapshot).
      this.warn(`trigger type ${msg.id}: ${peer.name} declares binding_mode "${mode}", its other providers "${type.mode}"; it follows "${type.mode}"`);
    }
    if (msg.description != null) type.description = msg.description;
    if (msg.trigger_request_format !== undefined) type.trigger_request_format = msg.trigger_request_format;
    if (msg.call_request_format !== undefined) type.call_request_format = msg.call_request_format;
    const before = this.requiredCalls(type).join('\n');
    if (msg.binding_requires_call?.length) type.requires.set(peer, [...msg.binding_requires_call]);
    else type.requires.delete(peer);
    peer.triggerTypes.add(msg.id);
    const known = type.providers.includes(peer);
    if (!known) type.providers.push(peer);
    clearTimeout(this.unprovided.get(type.id));
    this.unprovided.delete(type.id);
    // Other rights asked for now: bindings made before must hold them too.
    if (this.requiredCalls(type).join('\n') !== before) this.recheck(type);
    if (known) return;
    for (const b of [...this.bindings.values()]) {
      if (b.trigger_type !== type.id || b.holders.includes(peer)) continue;
      if (type.mode === 'one' && b.status === 'parked' && b.holders.length > 0) {
        this.moveParked(b, type);
        continue;
      }
      if ((type.mode === 'all' || b.holders.length === 0) && this.holdersFor(type, b.owner).includes(peer)) {
        this.handTo(b, peer);
      }
    }
  }

  unregisterType(peer: Peer, id: string): void {
    peer.triggerTypes.delete(id);
    const type = this.types.get(id);
    if (!type) return;
    const i = type.providers.indexOf(peer);
    if (i < 0) return;
    type.providers.splice(i, 1);
    type.requires.delete(peer);
    for (const b of [...this.bindings.values()]) {
      const at = b.holders.indexOf(peer);
      if (at < 0) continue;
      b.holders.splice(at, 1);
      if (b.holders.length > 0) continue;
      const next = this.holdersFor(type, b.owner);
      if (next.length === 0) b.status = 'parked';
      for (const p of next) if (this.bindings.get(b.id) === b) this.handTo(b, p);
    }
    if (type.providers.length === 0) {
      // Keep the type listed only while something still refers to it.
      const used = [...this.bindings.values()].some((b) => b.trigger_type === id);
      if (!used) this.types.delete(id);
    }
  }

  /** `access`: the binder's rights (its owner's token; for another engine's RemotePeer, what that engine sent). */
  register(owner: Peer, msg: RegisterTriggerMsg, access: Access = owner.access): void {
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
      namespace: msg.namespace ?? owner.namespace,
      ...(msg.trigger_namespace != null ? { trigger_namespace: msg.trigger_namespace } : {}),
      config: msg.config ?? {},
      ...(msg.metadata !== undefined ? { metadata: msg.metadata } : {}),
      owner,
      access,
      holders: [],
      status: 'parked',
    };
    const type = this.types.get(msg.trigger_type);
    const refusal = type ? this.bindRefusal(type, access) : null;
    if (refusal) return this.reply(binding, refusal);
    this.bindings.set(msg.id, binding);
    owner.triggers.add(msg.id);
    const holders = type ? this.holdersFor(type, owner) : [];
    for (const p of holders) if (this.bindings.get(msg.id) === binding) this.handTo(binding, p);
    if (holders.length === 0 && owner.features.has('ack')) {
      owner.send({ type: 'triggerregistrationresult', id: msg.id, trigger_type: msg.trigger_type, function_id: msg.function_id, status: 'parked' });
    }
    if (!type?.providers.length) this.watchUnprovided(msg.trigger_type);
  }

  /**
   * A binding of a type nobody provides waits in silence: the worker's registerTrigger succeeds
   * (iii's SDKs never hear of it), so a typo'd type, or one of iii's workers svc has no counterpart
   * of (`subscribe`, `stream`), looked like a trigger that never fires. Once it has waited
   * `unprovidedWarnMs` (longer than the built-ins take to connect when everything starts at
   * once), the engine's log says which bindings wait and which types are provided.
   */
  private watchUnprovided(typeId: string): void {
    if (this.unprovided.has(typeId)) return;
    const timer = setTimeout(() => {
      this.unprovided.delete(typeId);
      if (this.types.get(typeId)?.providers.length) return;
      const waiting = [...this.bindings.values()].filter((b) => b.trigger_type === typeId && b.holders.length === 0);
      if (waiting.length === 0) return;
      const shown = waiting.slice(0, 3).map((b) => `${b.function_id} from ${b.owner.name}`);
      const provided = [...this.types.values()].filter((t) => t.providers.length > 0).map((t) => t.id).sort();
      const hint = III_ONLY_TYPES[typeId] ? ` (${III_ONLY_TYPES[typeId]})` : '';
      this.warn(
        `trigger type ${JSON.stringify(typeId.slice(0, 200))} has no provider${hint}: ${waiting.length} binding(s) wait for one (${shown.join(', ')}${waiting.length > 3 ? ', …' : ''}); ` +
          `types provided now: ${provided.join(', ') || 'none'}`,
      );
    }, this.unprovidedWarnMs);
    timer.unref();
    this.unprovided.set(typeId, timer);
  }

  unregister(owner: Peer, id: string): void {
    const b = this.bindings.get(id);
    if (!b || b.owner !== owner) return;
    this.remove(b);
  }

  /**
   * What `provider` may call for binding `id` (`invokefunction` with `binding_id`): the binder's
   * rights within the provider's own (auth.ts, BindingAccess); or why it may not call for it.
   */
  callAccess(provider: Peer, id: string): Access | ErrorBody {
    const b = this.bindings.get(id);
    if (!b) return engineErrors.bindingNotFound(id);
    if (!b.holders.includes(provider)) return engineErrors.notBindingProvider(id, provider.name);
    return new BindingAccess(b.access, provider.access, b.function_id);
  }

  /** The namespace the calls for binding `id` resolve in (checked by callAccess first). */
  namespaceOf(id: string): string | undefined {
    return this.bindings.get(id)?.namespace;
  }

  /**
   * A provider answered a forwarded binding. Errors always go back to the owner (as in iii); success
   * only to svc SDKs, at the first holder's (a holder may never answer: iii's success is silent).
   * In `all` mode a refusal before any holder accepted ends the binding at every holder (replicas
   * judge a config alike); one after another holder accepted drops only the refusing holder, with
   * a warning: a provider must not be able to take away what the others serve.
   */
  result(provider: Peer, msg: TriggerRegistrationResultMsg): void {
    const b = this.bindings.get(msg.id);
    if (!b || !b.holders.includes(provider)) return;
    if (msg.error && b.status === 'active' && b.holders.length > 1) {
      b.holders = b.holders.filter((p) => p !== provider);
      this.warn(`trigger ${b.trigger_type} → ${b.function_id}: ${provider.name} refused it (${msg.error.message}); the other providers keep serving it`);
      return;
    }
    if (msg.error) {
      b.holders = b.holders.filter((p) => p !== provider);
      this.remove(b);
      this.reply(b, msg.error);
      return;
    }
    if (b.status === 'active') return;
    if (msg.status === 'parked') {
      // Another engine took it but has no provider yet (its snapshot had not said so when this
      // engine handed it over): it waits there, and "active" follows once that engine's provider
      // accepts. Until then it is not served, so it is not listed or acknowledged as active.
      // In `all` mode the other holders serve it meanwhile (an iii provider accepts silently).
      if (b.holders.length > 1) return;
      const type = this.types.get(b.trigger_type);
      // A provider registered here while the answer was on its way: it serves the binding now.
      if (type?.mode === 'one' && this.moveParked(b, type)) return;
      if (b.status === 'parked') return;
      b.status = 'parked';
      if (b.owner.features.has('ack')) this.reply(b, undefined, 'parked');
      return;
    }
    b.status = 'active';
    if (b.owner.features.has('ack')) this.reply(b);
  }

  /** Everything a departing peer held: its bindings go, bindings it provided move on or park. */
  removePeer(peer: Peer): void {
    for (const id of [...peer.triggers]) {
      const b = this.bindings.get(id);
      if (b && b.owner === peer) this.remove(b);
    }
    peer.triggers.clear();
    for (const id of [...peer.triggerTypes]) this.unregisterType(peer, id);
  }

  listTypes(): Array<Record<string, unknown>> {
    return [...this.types.values()].map((t) => {
      const active = this.activeProvider(t);
      return {
        id: t.id,
        description: t.description ?? null,
        trigger_request_format: t.trigger_request_format ?? null,
        call_request_format: t.call_request_format ?? null,
        binding_requires_call: this.requiredCalls(t),
        binding_mode: t.mode,
        provider: active ? { worker_id: active.id, worker_name: active.name } : null,
        // Who holds the bindings: the active one in `one` mode, every live provider in `all` mode.
        providers: t.providers.filter((p) => p === active || (t.mode === 'all' && p.open)).map((p) => ({ worker_id: p.id, worker_name: p.name })),
        // In `all` mode no live provider stands by: each holds every binding.
        standby_providers: t.providers.filter((p) => p !== active && (t.mode === 'one' || !p.open)).map((p) => ({ worker_id: p.id, worker_name: p.name })),
        bindings: [...this.bindings.values()].filter((b) => b.trigger_type === t.id).length,
      };
    });
  }

  listBindings(): Array<Record<string, unknown>> {
    return [...this.bindings.values()].map((b) => ({
      id: b.id,
      trigger_type: b.trigger_type,
      function_id: b.function_id,
      namespace: b.namespace,
      trigger_namespace: b.trigger_namespace ?? null,
      config: b.config,
      metadata: b.metadata ?? null,
      worker_id: b.owner.id,
      worker_name: b.owner.name,
      status: b.status,
      provider: b.holders[0] ? { worker_id: b.holders[0].id, worker_name: b.holders[0].name } : null,
      providers: b.holders.map((p) => ({ worker_id: p.id, worker_name: p.name })),
    }));
  }

  /**
   * Cluster mode: other engines appear as providers (RemotePeers: `node` set). One on this engine
   * goes first; another engine's only when none is here, and never for a binding that another
   * engine handed us (`owner` is its RemotePeer), so a binding is never forwarded twice.
   */
  private activeProvider(type: TriggerType, owner?: Peer): Peer | undefined {
    const local = type.providers.find((p) => p.open && p.node === undefined);
    if (local || owner?.node !== undefined) return local;
    return type.providers.find((p) => p.open);
  }

  /**
   * Who should hold a binding of `owner`'s: in `one` mode the active provider; in `all` mode every
   * live provider on this engine and every other engine that provides the type (each hands it to
   * its own providers), but for a binding another engine handed us only ours: that engine hands it
   * to the others itself.
   */
  private holdersFor(type: TriggerType, owner: Peer): Peer[] {
    if (type.mode === 'one') {
      const active = this.activeProvider(type, owner);
      return active ? [active] : [];
    }
    return type.providers.filter((p) => p.open && (p.node === undefined || owner.node === undefined));
  }

  /** What a binder of `type` must be allowed to call: the union of its providers' declarations. */
  requiredCalls(type: TriggerType, localOnly = false): string[] {
    const all = new Set<string>();
    for (const [p, ids] of type.requires) if (!localOnly || p.node === undefined) for (const id of ids) all.add(id);
    return [...all];
  }

  /** The local providers' requirements of type `id` (what this engine publishes to the others). */
  localRequiredCalls(id: string): string[] {
    const type = this.types.get(id);
    return type ? this.requiredCalls(type, true) : [];
  }

  /** Why a binder with `access` may not bind `type`, or null. */
  private bindRefusal(type: TriggerType, access: Access): ErrorBody | null {
    for (const id of this.requiredCalls(type)) if (!access.canCall(id)) return engineErrors.forbiddenBind(access.name, type.id, id);
    return null;
  }

  /** A provider asks for more than before: every binding of its type is checked again. */
  private recheck(type: TriggerType): void {
    for (const b of [...this.bindings.values()]) {
      if (b.trigger_type !== type.id) continue;
      const refusal = this.bindRefusal(type, b.access);
      if (refusal) this.drop(b, refusal);
    }
  }

  private handTo(b: Binding, provider: Peer): void {
    const type = this.types.get(b.trigger_type);
    const refusal = type ? this.bindRefusal(type, b.access) : null;
    if (refusal) return this.drop(b, refusal);
    // A binding handed anew waits for its provider's answer; one more holder in `all` mode keeps its
    // status, but for `parked` (the holder it had, another engine, has no provider yet).
    if (b.holders.length === 0 || b.status === 'parked') b.status = 'pending';
    b.holders.push(provider);
    const msg: ForwardedBindingMsg = {
      type: 'registertrigger',
      id: b.id,
      trigger_type: b.trigger_type,
      function_id: b.function_id,
      // iii providers fire the binding in this namespace (TriggerConfig.namespace); svc's call with its binding_id.
      namespace: b.namespace,
      config: b.config,
      ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
      // Another engine's provider calls for the binding there: that engine needs the binder's rights.
      ...(provider.node !== undefined ? { binder: b.access.rights } : {}),
    };
    try {
      provider.send(msg);
    } catch (err) {
      // Only a value from outside any frame can fail to encode; the owner learns, the table moves on.
      b.holders = b.holders.filter((p) => p !== provider);
      this.remove(b);
      this.reply(b, { code: 'internal_error', message: `The engine could not hand trigger ${b.id} to ${provider.name}: ${(err as Error).message}` });
    }
  }

  /** Remove a binding the binder may not hold, and tell its owner why. */
  private drop(b: Binding, error: ErrorBody): void {
    this.remove(b);
    this.reply(b, error);
  }

  private remove(b: Binding): void {
    this.bindings.delete(b.id);
    b.owner.triggers.delete(b.id);
    this.withdraw(b);
    const type = this.types.get(b.trigger_type);
    if (type && type.providers.length === 0 && ![...this.bindings.values()].some((x) => x.trigger_type === type.id)) {
      this.types.delete(type.id);
    }
  }

  /**
   * `one` mode: a binding parked at another engine (no provider there) moves to the provider that
   * should hold it now, when that is another one (a provider registered on this engine). True if moved.
   */
  private moveParked(b: Binding, type: TriggerType): boolean {
    const best = this.holdersFor(type, b.owner)[0];
    if (best === undefined || b.holders.includes(best)) return false;
    this.withdraw(b);
    this.handTo(b, best);
    return true;
  }

  /** Take `b` back from every holder. */
  private withdraw(b: Binding): void {
    for (const p of b.holders) if (p.open) p.send({ type: 'unregistertrigger', id: b.id, trigger_type: b.trigger_type });
    b.holders = [];
  }

  private reply(b: Binding, error?: ErrorBody, status: 'active' | 'parked' = 'active'): void {
    if (error) this.warn(`trigger ${b.trigger_type} → ${b.function_id} from ${b.owner.name} refused: ${error.message}`);
    b.owner.send({
      type: 'triggerregistrationresult',
      id: b.id,
      trigger_type: b.trigger_type,
      function_id: b.function_id,
      ...(error ? { error } : { status }),
    });
  }
}
