import { FEATURES, PROTOCOL_VERSION, decodeFrame, type DecodeResult, type ErrorBody, type Feature, type Message } from 'svc-sdk/protocol';
import type { StoredValues } from './budgets.js';
import { cancelCall, failCall } from './call-endings.js';
import { checkFunctionId, engineErrors, idTooLong } from './errors.js';
import type { Invocations } from './invocations.js';
import { ENGINE_VERSION, type EngineOptions } from './options.js';
import type { Registry } from './registry.js';
import type { Peer } from './peer.js';
import type { Session } from './session.js';
import type { ForwardedBindingMsg, Triggers } from './triggers.js';
import { Access } from './auth.js';
import { bindingNamespacesRefusal, type NamespaceRules } from './namespaces.js';

export interface RouterDeps {
  opts: EngineOptions;
  registry: Registry;
  triggers: Triggers;
  invocations: Invocations;
  /** Resolve a reattach: the previous session, if its token matches. */
  findSession: (id: string) => Session | undefined;
  /** Tear a session down now (its socket may still look open). */
  evict: (s: Session, why: string) => void;
  warn: (message: string) => void;
  /** Byte budgets of what registrations store (budgets.ts). */
  stored: StoredValues;
  /** Who may hold a function id or a worker name in a namespace (namespaces.ts). */
  namespaces: NamespaceRules;
}

/**
 * Where every frame enters: size check, one decode-and-validate, then handled by type. Nothing a
 * peer sends can throw out of here; every refusal is answered with an error naming the input.
 */
export class Router {
  constructor(private readonly deps: RouterDeps) {}

  onText(s: Peer, text: string): void {
    // Blank frames are skipped, as iii does. (A frame that opens with "{" is not blank: no trim.)
    if (text.charCodeAt(0) !== 0x7b && text.trim().length === 0) return;
    const limit = this.deps.opts.maxFrameBytes;
    if (text.length > limit) {
      const size = Buffer.byteLength(text, 'utf8');
      if (size > limit) {
        this.tooLarge(s, text, size);
        return;
      }
    }
    // One parse and one check (quick for calls and results: asCallFrame in svc-sdk's decodeFrame).
    const decoded = decodeFrame(text);
    if (!decoded.ok) {
      this.refuse(s, decoded);
      return;
    }
    try {
      this.handle(s, decoded.msg, text);
    } catch (err) {
      this.internalError(s, decoded.msg, err);
    }
  }

  /**
   * A bug of ours must not take the engine down with it: report it to the peer and the log, and
   * answer the call the frame carried, so that its caller does not wait for its deadline.
   */
  private internalError(s: Peer, m: Message, err: unknown): void {
    this.deps.warn(`internal error handling ${m.type} from ${s.name}: ${(err as Error).stack ?? String(err)}`);
    const error = { code: 'internal_error', message: `Engine failed to handle "${m.type}": ${(err as Error).message}` };
    if (s.node === undefined) s.sendError(error);
    try {
      if (m.type === 'invokefunction' && m.invocation_id != null && m.action?.type !== 'void') {
        s.send({ type: 'invocationresult', invocation_id: m.invocation_id, function_id: m.function_id, error });
      } else if (m.type === 'invocationresult') {
        failCall(this.deps.invocations, s, m.invocation_id, error);
      }
    } catch (e) {
      this.deps.warn(`internal error answering ${m.type} from ${s.name}: ${(e as Error).message}`);
    }
  }

  private refuse(s: Peer, decoded: DecodeResult & { ok: false }): void {
    s.sendError(decoded.error, decoded.ref);
    const ref = decoded.ref;
    if (!ref?.id) return;
    // A caller waiting on a malformed call must not hang: answer its invocation_id. A result
    // refused (too deep, say) fails its call for the caller, as an oversized one does.
    if (ref.type === 'invokefunction') s.send({ type: 'invocationresult', invocation_id: ref.id, error: decoded.error });
    else if (ref.type === 'invocationresult') failCall(this.deps.invocations, s, ref.id, decoded.error);
  }

  /**
   * A frame that needs no decoding: another engine of the cluster produced it (src/engine/cluster)
   * and `s` is that engine's RemotePeer.
   */
  onFrame(s: Peer, m: Message): void {
    try {
      this.handle(s, m);
    } catch (err) {
      this.internalError(s, m, err);
    }
  }

  /**
   * One valid frame, by its type. `text`: the frame as it arrived, for a call or result the
   * invocations may pass on instead of serialising its payload again (hot/call-frames.ts); absent
   * for frames another engine produced.
   */
  private handle(s: Peer, m: Message, text?: string): void {
    const { registry, triggers, invocations } = this.deps;
    switch (m.type) {
      case 'invokefunction': {
        // A provider calling for one of its trigger bindings runs with the binder's rights. (From
        // another engine a call is already authorized by that engine: no binding here.)
        if (m.binding_id != null && s.node === undefined) {
          const grant = triggers.callAccess(s, m.binding_id);
          if (grant instanceof Access) {
            // The binding's function resolves in the binding's namespace, whatever the provider's is.
            m.namespace = triggers.namespaceOf(m.binding_id);
            invocations.invoke(s, m, text, grant);
          } else invocations.refuse(s, m, grant);
          return;
        }
        invocations.invoke(s, m, text);
        return;
      }
      case 'observe':
        invocations.observers.observe(s, m);
        return;
      case 'unobserve':
        invocations.observers.unobserve(s, m.id);
        return;
      case 'invocationresult':
        invocations.complete(s, m, text);
        return;
      case 'registerfunction': {
        const bad = checkFunctionId(m.id);
        if (bad) return s.sendError(bad, { type: m.type, id: m.id });
        if (!s.access.canRegister(m.id)) return s.sendError(engineErrors.forbiddenRegister(s.access.name, 'function', m.id), { type: m.type, id: m.id });
        if (!s.functions.has(m.id) && s.registrations >= this.deps.opts.maxRegistrationsPerWorker) {
          return s.sendError(engineErrors.tooManyRegistrations(this.deps.opts.maxRegistrationsPerWorker, m.id), { type: m.type, id: m.id });
        }
        if (this.deps.namespaces.functionConflict(s, m.id)) return;
        const kept = this.keep(s, `f:${m.id}`, m, { description: m.description, request_format: m.request_format, response_format: m.response_format, metadata: m.metadata }, text);
        if (!registry.add(s, { ...m, ...kept })) {
          this.deps.stored.release(s, `f:${m.id}`);
          s.sendError(
            { code: 'invalid_function_id', message: `Function id ${m.id} is reserved by the engine and cannot be registered by a worker` },
            { type: m.type, id: m.id },
          );
        }
        return;
      }
      case 'unregisterfunction':
        this.deps.stored.release(s, `f:${m.id}`);
        registry.remove(s, m.id);
        return;
      case 'registertriggertype': {
        const long = idTooLong(m.type, { id: m.id });
        if (long) return s.sendError(long, { type: m.type, id: m.id.slice(0, 128) });
        if (!s.access.canProvideTriggerType(m.id)) return s.sendError(engineErrors.forbiddenRegister(s.access.name, 'trigger type', m.id), { type: m.type, id: m.id });
        if (!s.triggerTypes.has(m.id) && s.registrations >= this.deps.opts.maxRegistrationsPerWorker) {
          return s.sendError(engineErrors.tooManyRegistrations(this.deps.opts.maxRegistrationsPerWorker, m.id), { type: m.type, id: m.id });
        }
        triggers.registerType(s, { ...m, ...this.keep(s, `t:${m.id}`, m, { description: m.description, trigger_request_format: m.trigger_request_format, call_request_format: m.call_request_format }, text) });
        return;
      }
      case 'unregistertriggertype':
        this.deps.stored.release(s, `t:${m.id}`);
        triggers.unregisterType(s, m.id);
        return;
      case 'registertrigger': {
        // The binder's rights: its token's; for a binding another engine handed over (s is that
        // engine's RemotePeer), the rights that engine sent with it.
        const access = s.node === undefined ? s.access : new Access((m as ForwardedBindingMsg).binder ?? null);
        // Binding a function to an event source lets that source call it: the token must be
        // allowed to register or to call the function. (What the type itself asks for, triggers.ts.)
        let refusal: ErrorBody | null = idTooLong(m.type, { id: m.id, trigger_type: m.trigger_type, function_id: m.function_id }) ?? bindingNamespacesRefusal(m);
        if (!refusal && !access.canRegister(m.function_id) && !access.canCall(m.function_id)) {
          refusal = engineErrors.forbiddenRegister(access.name, 'a trigger for', m.function_id);
        }
        if (!refusal && !s.triggers.has(m.id) && s.registrations >= this.deps.opts.maxRegistrationsPerWorker) {
          refusal = engineErrors.tooManyRegistrations(this.deps.opts.maxRegistrationsPerWorker, `trigger ${m.id}`);
        }
        let kept: { config?: unknown; metadata?: unknown } = {};
        if (!refusal) {
          kept = this.keep(s, `b:${m.id}`, m, { config: m.config, metadata: m.metadata }, text);
          // A provider acts on the config: a cut one would be refused there less clearly than here.
          if (kept.config !== m.config) {
            this.deps.stored.release(s, `b:${m.id}`);
            refusal = engineErrors.configTooLarge(m.id, JSON.stringify(m.config)?.length ?? 0, this.deps.stored);
          }
        }
        if (refusal) {
          s.send({ type: 'triggerregistrationresult', id: m.id, trigger_type: m.trigger_type, function_id: m.function_id, error: refusal });
          return;
        }
        triggers.register(s, { ...m, ...kept }, access);
        return;
      }
      case 'unregistertrigger':
        this.deps.stored.release(s, `b:${m.id}`);
        triggers.unregister(s, m.id);
        return;
      case 'triggerregistrationresult':
        triggers.result(s, m);
        return;
      case 'hello': {
        for (const f of m.features) if ((FEATURES as readonly string[]).includes(f)) s.features.add(f as Feature);
        if (m.role === 'client' || m.role === 'worker') s.role = m.role;
        s.send({
          type: 'hello',
          protocol: Math.min(PROTOCOL_VERSION, m.protocol),
          features: [...s.features],
          engine: {
            name: 'svc',
            version: ENGINE_VERSION,
            max_frame_bytes: this.deps.opts.maxFrameBytes,
            invocation_timeout_ms: this.deps.opts.invocationTimeoutMs,
          },
        });
        return;
      }
      case 'reattach': {
        // The previous connection of this worker may still look alive (a half-open socket). Tear
        // it down now, so its late cleanup cannot race the replay on this connection.
        const prev = this.deps.findSession(m.previous_worker_id);
        if (prev && prev !== s && prev.reattachToken === m.reattach_token) {
          this.deps.evict(prev, `replaced by reconnected worker ${s.id}`);
          if (Object.keys(s.metadata).length === 0) s.metadata = { ...prev.metadata };
          if (s.name.startsWith('anonymous-')) s.name = prev.name;
        }
        return;
      }
      case 'cancel':
        cancelCall(invocations, s, m.invocation_id, m.reason ?? 'cancelled by caller');
        return;
      case 'ping':
        s.send({ type: 'pong' });
        return;
      case 'pong':
      case 'registerservice':
      case 'registrationrejected':
        return;
      case 'workerregistered':
      case 'error':
        // Engine → worker frames; a peer echoing them is harmless.
        return;
    }
  }

  /**
   * The values of a registration to store, within the budgets (a marker in place of any over them,
   * and a line in the engine's log saying so). `text`: the frame, whose length bounds their size.
   */
  private keep<T extends object>(s: Peer, key: string, m: Message, fields: T, text: string | undefined): T {
    const { fields: kept, over } = this.deps.stored.bound(s, key, fields, text?.length);
    if (over.length > 0) this.deps.warn(`${s.name}: ${m.type} ${key.slice(2)}: ${over.join(', ')} over the budget of stored values, kept as a marker (engine.limits.max_stored_value_bytes, max_stored_bytes_per_worker)`);
    return kept;
  }

  private tooLarge(s: Peer, text: string, size: number): void {
    const err = engineErrors.frameTooLarge(size, this.deps.opts.maxFrameBytes);
    // Still find out what it was, so the call it carried ends now instead of at its deadline.
    const decoded = decodeFrame(text);
    if (decoded.ok && decoded.msg.type === 'invokefunction' && decoded.msg.invocation_id) {
      s.sendError(err, { type: 'invokefunction', id: decoded.msg.invocation_id });
      s.send({
        type: 'invocationresult',
        invocation_id: decoded.msg.invocation_id,
        function_id: decoded.msg.function_id,
        error: engineErrors.payloadTooLarge(decoded.msg.function_id, size, this.deps.opts.maxFrameBytes),
      });
      return;
    }
    if (decoded.ok && decoded.msg.type === 'invocationresult') {
      s.sendError(err, { type: 'invocationresult', id: decoded.msg.invocation_id });
      failCall(this.deps.invocations, s, decoded.msg.invocation_id, engineErrors.resultTooLarge(decoded.msg.function_id ?? 'function', size, this.deps.opts.maxFrameBytes));
      return;
    }
    s.sendError(err, decoded.ok ? { type: decoded.msg.type } : undefined);
  }
}
