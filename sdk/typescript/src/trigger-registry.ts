import { randomUUID } from 'node:crypto';
import type { Connection } from './connection.js';
import { describeValue, InvocationError, toErrorBody } from './errors.js';
import type { ErrorBody, RegisterTriggerMsg, RegisterTriggerTypeMsg, TriggerRegistrationResultMsg } from './protocol/messages.js';
import type { TriggerBinding, TriggerInput, TriggerTypeDefinition, TriggerTypeHandler } from './worker-types.js';

interface PendingAck {
  resolve(): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/** What the TriggerRegistry needs of its worker. */
export interface TriggerRegistryHost {
  readonly workerName: string;
  /** Resolves once connected (waiting as long as it takes); rejects if the worker closes. */
  untilConnected(): Promise<void>;
  /** How long to wait for a provider's answer. */
  readonly ackTimeoutMs: number;
  /** A problem nobody awaits (a binding refused on a replay, a provider's unregister that threw). */
  report(err: Error): void;
}

/**
 * Triggers: the bindings this worker registers (`registerTrigger`, answered by the engine with
 * `triggerregistrationresult`: with the `ack` feature always, else only on error), and the trigger
 * types it provides (`registerTriggerType`: the engine hands it `registertrigger` /
 * `unregistertrigger` for every binding of the type, from any worker, and it answers each).
 * Everything registered is replayed on every new connection.
 */
export class TriggerRegistry {
  private readonly types = new Map<string, { handler: TriggerTypeHandler; msg: RegisterTriggerTypeMsg }>();
  private readonly triggers = new Map<string, RegisterTriggerMsg>();
  private readonly acks = new Map<string, PendingAck>();
  /** Bindings the engine delivered to us as a trigger type's provider, by binding id. */
  private readonly provided = new Map<string, TriggerBinding>();
  /** Bindings whose registerTrigger handler is still running; `dropped` when the engine took them away meanwhile. */
  private readonly registering = new Map<string, { dropped: boolean }>();

  constructor(
    private readonly conn: Connection,
    private readonly host: TriggerRegistryHost,
  ) {}

  registerType(def: TriggerTypeDefinition, handler: TriggerTypeHandler): { id: string; unregister(): void } {
    if (typeof def !== 'object' || def === null || typeof def.id !== 'string' || def.id.length === 0) {
      throw new InvocationError('invalid_argument', `registerTriggerType() needs {id: a non-empty string, …}, got ${describeValue(def)}`);
    }
    if (typeof handler?.registerTrigger !== 'function' || typeof handler.unregisterTrigger !== 'function') {
      throw new InvocationError('invalid_argument', `The handler of trigger type ${def.id} must have registerTrigger and unregisterTrigger functions, got ${describeValue(handler)}`);
    }
    const msg: RegisterTriggerTypeMsg = { type: 'registertriggertype', ...def };
    this.types.set(def.id, { handler, msg });
    this.conn.send(msg);
    return {
      id: def.id,
      unregister: () => {
        if (!this.types.has(def.id)) return;
        this.conn.send({ type: 'unregistertriggertype', id: def.id });
        for (const b of [...this.provided.values()]) {
          if (b.trigger_type === def.id) void this.dropProvided(b.id);
        }
        this.types.delete(def.id);
      },
    };
  }

  /**
   * Bind `function_id` to an event source. Resolves once the trigger type's provider accepted the
   * binding (or the engine parked it until a provider appears); rejects with the provider's error.
   */
  async register(input: TriggerInput): Promise<{ id: string; unregister(): void }> {
    if (typeof input !== 'object' || input === null || typeof input.type !== 'string' || input.type.length === 0) {
      throw new InvocationError('invalid_argument', `registerTrigger() needs {type: a non-empty string, function_id, config?}, got ${describeValue(input)}`);
    }
    if (typeof input.function_id !== 'string' || input.function_id.length === 0) {
      throw new InvocationError('invalid_function_id', `registerTrigger() needs a non-empty function_id, got ${describeValue(input.function_id)}`);
    }
    const id = randomUUID();
    const msg: RegisterTriggerMsg = {
      type: 'registertrigger',
      id,
      trigger_type: input.type,
      function_id: input.function_id,
      config: input.config ?? {},
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
      ...(input.namespace !== undefined ? { namespace: input.namespace } : {}),
    };
    // A worker may register before the engine is up: wait for the connection as long as it takes
    // (the SDK reconnects forever); the deadline below is for the provider's answer only.
    await this.host.untilConnected();
    this.triggers.set(id, msg);
    const ackMs = this.host.ackTimeoutMs;
    const acked = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.acks.delete(id);
        reject(new InvocationError('timeout', `No answer to trigger registration ${input.type} → ${input.function_id} within ${ackMs} ms`));
      }, ackMs);
      this.acks.set(id, { resolve, reject, timer });
    });
    // Sent now; if the socket just dropped, the replay on reconnect sends it.
    this.conn.send(msg);
    try {
      await acked;
    } catch (e) {
      this.triggers.delete(id);
      // Made again here, in the function the program awaits: V8 then gives it the program's own
      // frames (`at async …/worker.ts:50`), where the refusal's error, made when the answer
      // arrived, named only the SDK's message handling and ws's.
      throw e instanceof InvocationError ? new InvocationError(e.code, e.message, e.functionId, e.stacktrace) : e;
    }
    return {
      id,
      unregister: () => {
        if (this.triggers.delete(id)) this.conn.send({ type: 'unregistertrigger', id, trigger_type: input.type });
      },
    };
  }

  /** Send every trigger type, then (after the functions) every binding, on a new connection. */
  replayTypes(): void {
    for (const { msg } of this.types.values()) this.conn.send(msg);
  }
  replayBindings(): void {
    for (const msg of this.triggers.values()) this.conn.send(msg);
  }

  /** The engine's `hello` did not grant `ack`: only errors will come back, so what awaits one is settled. */
  settleWithoutAck(): void {
    for (const id of [...this.acks.keys()]) this.settleAck(id);
  }

  onResult(m: TriggerRegistrationResultMsg): void {
    if (!m.error) return this.settleAck(m.id);
    const err = new InvocationError(m.error.code, m.error.message, m.function_id);
    const ack = this.acks.get(m.id);
    if (ack) {
      this.acks.delete(m.id);
      clearTimeout(ack.timer);
      ack.reject(err);
    } else {
      // Refused on a replay after reconnect: nobody awaits it any more.
      this.triggers.delete(m.id);
      this.host.report(err);
    }
  }

  /** The engine hands us a binding of a type we provide: accept or refuse it, and answer. */
  async provide(m: RegisterTriggerMsg): Promise<void> {
    const type = this.types.get(m.trigger_type);
    const binding: TriggerBinding = {
      id: m.id,
      trigger_type: m.trigger_type,
      function_id: m.function_id,
      config: m.config ?? {},
      ...(m.metadata !== undefined ? { metadata: m.metadata } : {}),
      ...(m.namespace != null ? { namespace: m.namespace } : {}),
    };
    let error: ErrorBody | undefined;
    if (!type) {
      error = { code: 'trigger_type_not_found', message: `Trigger type ${m.trigger_type} is not provided by worker ${this.host.workerName}` };
    } else {
      // A re-delivered id replaces what we hold: finish dropping the old one before accepting.
      if (this.provided.has(m.id)) await this.dropProvided(m.id);
      const mark = { dropped: false };
      this.registering.set(m.id, mark);
      try {
        await type.handler.registerTrigger(binding);
        // Taken away while the handler ran: undo it now, as an unregister arriving after it would.
        if (mark.dropped) await this.undo(type, binding);
        else this.provided.set(m.id, binding);
      } catch (e) {
        error = toErrorBody(e);
        if (error.code === 'invocation_failed') error.code = 'trigger_registration_failed';
        delete error.stacktrace;
      } finally {
        if (this.registering.get(m.id) === mark) this.registering.delete(m.id);
      }
    }
    this.conn.send({
      type: 'triggerregistrationresult',
      id: m.id,
      trigger_type: m.trigger_type,
      function_id: m.function_id,
      ...(error ? { error } : {}),
    });
  }

  /** The engine takes a binding of a type we provide away (its owner left or unregistered it). */
  dropProvided(id: string): Promise<void> {
    const pending = this.registering.get(id);
    if (pending) pending.dropped = true;
    const binding = this.provided.get(id);
    if (!binding) return Promise.resolve();
    this.provided.delete(id);
    const type = this.types.get(binding.trigger_type);
    if (!type) return Promise.resolve();
    return this.undo(type, binding);
  }

  private undo(type: { handler: TriggerTypeHandler }, binding: TriggerBinding): Promise<void> {
    return Promise.resolve()
      .then(() => type.handler.unregisterTrigger(binding))
      .then(
        () => undefined,
        (e) => this.host.report(e as Error),
      );
  }

  /** The socket is gone: the engine parks the bindings we provided and hands them over again on reconnect. */
  dropAllProvided(): void {
    for (const mark of this.registering.values()) mark.dropped = true;
    for (const id of [...this.provided.keys()]) void this.dropProvided(id);
  }

  /** The worker stops: what awaits a provider's answer fails with `shutting_down`. */
  failAcks(): void {
    for (const [id, ack] of this.acks) {
      clearTimeout(ack.timer);
      ack.reject(new InvocationError('shutting_down', 'Worker is shutting down'));
      this.acks.delete(id);
    }
  }

  private settleAck(id: string): void {
    const ack = this.acks.get(id);
    if (!ack) return;
    this.acks.delete(id);
    clearTimeout(ack.timer);
    ack.resolve();
  }
}
