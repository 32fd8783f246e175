import { randomUUID } from 'node:crypto';
import { DEFAULT_NAMESPACE, type ErrorBody, type InvocationResultMsg, type InvokeFunctionMsg } from 'svc-sdk/protocol';
import type { Access } from './auth.js';
import type { Call, CallOutcome, Reply } from './call.js';
import { answerText, builtinAnswerText, runBuiltin } from './call-answers.js';
import { expireCall, type CallBooks } from './call-endings.js';
import { EngineError, engineErrors } from './errors.js';
import { callDataTail, forwardedResult, invokeText } from './hot/call-frames.js';
import { hex12 } from './hot/hex12.js';
import { ChurnMap, Deadlines, jsonString } from './hot/shared-with-sdk.js';
import type { SpanRing } from './hot/span-ring.js';
import { NO_DECLARED_PARENT } from './traces.js';
import { counterOf, IdGenerator } from './ids.js';
import { ClientBudgets } from './client-budgets.js';
import { onlyServedCall } from './iii-call-parent.js';
import type { CallMetrics } from './metrics/call-metrics.js';
import { functionNotFound } from './namespaces.js';
import type { EngineOptions } from './options.js';
import type { Peer } from './peer.js';
import type { Registry } from './registry.js';
import { namesNoParent, parseTraceparent, type SpanStatus } from './traces.js';
import { Observers } from './observers.js';

/**
 * Every call in flight, from the frame that asks for it to the answer that ends it. Each has a
 * deadline and ends exactly once: with the callee's result, a timeout, a cancel, or
 * `invocation_stopped` when a side leaves. Nothing is held forever, so memory stays bounded by what
 * is genuinely in flight.
 *
 * The steps of one call, each a method below, in this order:
 *
 *   invoke    a peer's `invokefunction` arrives (router.ts); the engine's own calls start at call()
 *   admit     may this caller start a call now: its rights, its own limits, shutdown
 *   dispatch  a builtin answers itself (runBuiltin, call-answers.ts); otherwise the engine's limits,
 *             the callee (Registry.pick), the call's ids and trace, the callee's frame written with
 *             its Call (Peer.sendCall), and then the books: the deadline, the in-flight tables, the bytes
 *   complete  the callee's result arrives; or the call ends otherwise (call-endings.ts): its result
 *             could not be accepted, its caller gave up, its deadline passed, a side left, shutdown
 *   deliver   the caller is answered: answer() writes its frame, or an engine-made call's reply runs
 *   finish    the books are closed and the call's span recorded
 *
 * A call that admit or dispatch refuses never becomes a Call: answer() writes the refusal. Both
 * dispatch and complete write the frame the other side waits for before they keep or close the
 * books (hot/README.md, "write first").
 */
export class Invocations implements CallBooks {
  /**
   * Every call in flight by its id number (ids.ts), like each callee's `incoming`: a number key
   * costs no hash of a 36-character string. Written only here; call-endings.ts reads it.
   */
  readonly calls = new ChurnMap<number, Call>();
  private readonly deadlines = new Deadlines<Call>((call) => expireCall(this, call));
  /** Invocation, span and trace ids: the span ring's generator, so that its numbers render the same. */
  private readonly ids: IdGenerator;
  private idleWaiters: Array<() => void> = [];
  /** What each client has in flight over all its connections (engine.limits.max_in_flight_per_client). */
  readonly clients = new ClientBudgets();
  /** The callee frames of the calls in flight together (engine.limits.max_in_flight_bytes). */
  private bytesInFlight = 0;
  /** Set during shutdown: new top-level calls are refused. */
  draining = false;
  /**
   * A callee answered with an error (its handler threw): the engine keeps a log line of it under
   * that worker (server.ts), so `svc logs` shows it, at a level by whether it was expected.
   */
  onCalleeError: ((call: Call, error: ErrorBody, traceId: string | undefined) => void) | null = null;

  constructor(
    private readonly registry: Registry,
    private readonly opts: EngineOptions,
    private readonly warn: (message: string, data?: Record<string, unknown>) => void,
    /** null: tracing off. */
    private readonly spans: SpanRing | null = null,
    /** null: metrics off (engine.metrics). */
    private readonly metrics: CallMetrics | null = null,
  ) {
    this.ids = spans ? spans.ids : new IdGenerator();
    this.observers = new Observers(registry);
    // An activation is a call the engine makes, with the activation's fields on the target's frame.
    this.observers.start((target, data, extra, done) =>
      this.dispatch(null, undefined, { type: 'invokefunction', function_id: target.function_id, namespace: target.namespace, data }, done, undefined, extra),
    );
  }

  /** iii 0.25 observers of the calls routed here. */
  readonly observers: Observers;

  get size(): number {
    return this.calls.size;
  }

  /** The frames of the calls in flight, in characters (engine.limits.max_in_flight_bytes). */
  get bytes(): number {
    return this.bytesInFlight;
  }

  /**
   * In-flight counts by function id (for `engine::queues::list`). `excludeTracePrefix`: leave out
   * calls in traces whose id begins with it (the console's own periodic reads).
   */
  countByFunction(excludeTracePrefix?: string): Map<string, number> {
    const m = new Map<string, number>();
    for (const call of this.calls.values()) {
      if (excludeTracePrefix && (call.traceId || this.ids.traceId(call.idNumber)).startsWith(excludeTracePrefix)) continue;
      m.set(call.functionId, (m.get(call.functionId) ?? 0) + 1);
    }
    return m;
  }

  // ---- starting a call ---------------------------------------------------------------------------

  /**
   * A call from a peer. Answers the caller (unless fire-and-forget) in every case. `text`: the frame
   * as it arrived, whose payload is passed on as text when its layout allows. `access`: the rights
   * it runs with (a provider's call for a trigger binding runs with the binder's).
   */
  invoke(caller: Peer, msg: InvokeFunctionMsg, text?: string, access: Access = caller.access): void {
    const isVoid = msg.invocation_id == null || msg.action?.type === 'void';
    const callerId = isVoid ? undefined : (msg.invocation_id as string);
    const refusal = this.admit(caller, callerId, msg.function_id, access) ?? this.dispatch(caller, callerId, msg, undefined, text);
    if (refusal) this.refused(caller, callerId, msg.function_id, refusal);
  }

  /** A call that never started: counted, and its caller answered with `error`. */
  private refused(caller: Peer, callerId: string | undefined, fid: string, error: ErrorBody): void {
    if (this.metrics) this.metrics.refused(error.code);
    this.answer(caller, jsonOf(callerId), JSON.stringify(fid), { error });
  }

  /** Answer a peer's call with `error` without starting it. */
  refuse(caller: Peer, msg: InvokeFunctionMsg, error: ErrorBody): void {
    const isVoid = msg.invocation_id == null || msg.action?.type === 'void';
    this.refused(caller, isVoid ? undefined : (msg.invocation_id as string), msg.function_id, error);
  }

  /** Why a peer's call may not start now, or null. `access`: the rights it runs with. */
  private admit(caller: Peer, callerId: string | undefined, fid: string, access: Access): ErrorBody | null {
    const denied = access.callRefusal(fid);
    if (denied) return denied;
    if (callerId !== undefined) {
      if (caller.outgoing.size >= this.opts.maxInFlightPerWorker) {
        return engineErrors.overloaded(`${caller.name} already waits on ${caller.outgoing.size} calls (engine.limits.max_in_flight_per_worker)`);
      }
      if (caller.outgoing.has(callerId)) return { code: 'invalid_frame', message: `invocation_id ${callerId} is already in flight from this connection` };
    }
    // During shutdown, calls made by a worker that is itself serving a call are nested calls of
    // in-flight work and must go on; other new calls are refused.
    if (this.draining && caller.incoming.size === 0) return engineErrors.shuttingDown();
    return null;
  }

  /** A call the engine makes itself (CLI-less tooling): no caller peer; its answer settles the promise. */
  call(functionId: string, data: unknown, timeoutMs?: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const reply = (o: CallOutcome): void => (o.error ? reject(new EngineError(o.error.code, o.error.message)) : resolve(o.result));
      const refusal = this.dispatch(null, undefined, { type: 'invokefunction', function_id: functionId, data, ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) }, reply);
      if (refusal) {
        if (this.metrics) this.metrics.refused(refusal.code);
        reply({ error: refusal });
      }
    });
  }

  /**
   * Start a call: a builtin answers itself, anything else goes to a provider. Returns the error that
   * refuses it instead of answering, so that the hot path makes no answer closure per call.
   * `internal`: the answer path of a call the engine makes itself (no caller).
   */
  private dispatch(caller: Peer | null, callerId: string | undefined, msg: InvokeFunctionMsg, internal: Reply | undefined, text?: string, extraFields?: string): ErrorBody | null {
    let fid = msg.function_id;
    let data = msg.data === undefined ? {} : msg.data;
    if (msg.action?.type === 'enqueue') {
      // Queues are served by a worker providing engine::queue::enqueue, as in iii.
      const queue = msg.action.queue;
      if (!this.registry.get('engine::queue::enqueue')) return engineErrors.enqueueUnavailable(queue);
      // svc-queue's jobs hold no namespace: run later, one would reach `default`'s function.
      if (msg.namespace != null && msg.namespace !== DEFAULT_NAMESPACE) return engineErrors.enqueueInNamespace(queue, msg.namespace);
      data = { queue, function_id: fid, data, messageReceiptId: randomUUID() };
      fid = 'engine::queue::enqueue';
    }
    const timeoutMs = msg.timeout_ms ?? this.opts.invocationTimeoutMs;
    if (!(timeoutMs > 0 && timeoutMs <= this.opts.maxInvocationTimeoutMs)) return engineErrors.invalidTimeout(timeoutMs, this.opts.maxInvocationTimeoutMs);
    // In the namespace the call names (none: `default`, one map lookup); an enqueue goes to the queue's provider.
    const entry = fid === msg.function_id ? this.registry.resolve(fid, msg.namespace) : this.registry.get(fid);
    if (!entry) return functionNotFound(this.registry, fid, msg.namespace);
    if (entry.builtin) {
      const reply = internal ?? ((o: CallOutcome) => this.answerBuiltin(caller, jsonOf(callerId), JSON.stringify(msg.function_id), o));
      runBuiltin(entry.builtin, data, caller, reply, text === undefined ? 0 : text.length, entry.inOrder === true, this.warn);
      return null;
    }
    if (this.calls.size >= this.opts.maxInFlightTotal || this.bytesInFlight >= this.opts.maxInFlightBytes) return engineErrors.engineOverloaded(this.calls.size, this.bytesInFlight, this.opts);
    // Another engine's calls were held to this bound there, each by its own caller.
    if (caller !== null && caller.outgoingBytes >= this.opts.maxInFlightBytesPerWorker && caller.node === undefined) {
      return engineErrors.overloaded(`The calls ${caller.name} has in flight carry ${caller.outgoingBytes} bytes (engine.limits.max_in_flight_bytes_per_worker = ${this.opts.maxInFlightBytesPerWorker}); retry later`);
    }
    const client = caller === null ? null : caller.client;
    if (client !== null && (client.calls >= this.opts.maxInFlightPerClient || client.bytes >= this.opts.maxInFlightBytesPerClient)) return engineErrors.clientOverloaded(client, this.opts);
    // A call another engine forwarded (its caller is that engine's RemotePeer) is served here or not at all.
    const callee = this.registry.pick(entry, caller?.node !== undefined);
    if (!callee) return functionNotFound(this.registry, fid, msg.namespace);
    // pick() chose the least loaded provider: if it is full, all are.
    if (callee.incoming.size >= this.opts.maxInFlightPerWorker) {
      return engineErrors.overloaded(`Every worker serving ${fid} has ${callee.incoming.size} calls in flight (engine.limits.max_in_flight_per_worker); retry later`);
    }
    const idNumber = this.ids.next();
    const hex = hex12(idNumber);
    const id = this.ids.invocationPrefix + hex;
    // The callee gets a traceparent naming this call's span, so its own calls become children.
    let traceparent = msg.traceparent;
    let traceId = '';
    let parentSpanId = '';
    let declaredParentSpanId = '';
    if (this.spans) {
      const parent = parseTraceparent(traceparent);
      const served = onlyServedCall(caller, parent?.traceId, this.ids);
      if (served) {
        traceId = served.traceId || this.ids.traceId(served.idNumber);
        parentSpanId = this.ids.spanId(served.idNumber);
        declaredParentSpanId = parent?.parentId ?? NO_DECLARED_PARENT;
        traceparent = '00-' + traceId + '-' + this.ids.spanPrefix + hex + '-' + (parent?.flags ?? '01');
      } else if (parent) {
        traceId = parent.traceId;
        // A caller that starts the trace without a span of its own names none (namesNoParent).
        parentSpanId = namesNoParent(traceId, parent.parentId) ? '' : parent.parentId;
        traceparent = '00-' + traceId + '-' + this.ids.spanPrefix + hex + '-' + parent.flags;
      } else {
        traceparent = this.ids.rootTraceparent(idNumber, hex);
      }
    }
    // The payload passes on as it came when the frame has our SDKs' layout (hot/call-frames.ts). A
    // frame that cannot be written (data JSON cannot encode, only possible for the engine's own
    // calls) refuses the call: the caller is answered.
    const dataTail = text !== undefined && callerId !== undefined && msg.action === undefined ? callDataTail(text, entry.idJson, callerId, msg.timeout_ms, msg.binding_id) : null;
    let frame: string;
    try {
      frame = invokeText(id, entry.idJson, msg, data, dataTail, traceparent ?? undefined, this.spans !== null, extraFields);
    } catch (err) {
      return engineErrors.unwritable(fid, 'the call', err);
    }
    const call: Call = {
      id,
      idNumber,
      caller,
      callee,
      callerInvocationId: callerId,
      callerIdJson: undefined,
      internal,
      functionId: entry.id,
      requestedIdJson: fid === msg.function_id ? entry.idJson : JSON.stringify(msg.function_id),
      startedAt: performance.now(),
      timeoutMs,
      traceId,
      parentSpanId,
      declaredParentSpanId,
      observed: this.observers.watched.size === 0 ? undefined : this.observers.observed(entry.namespace, entry.id, data, msg.observe_depth),
      bytes: 0,
      deadlineAt: 0,
      lane: null,
      prevDue: null,
      nextDue: null,
    };
    // The frame is written before the books are kept: where the callee has a core of its own, the
    // books overlap its work (on a 2-core machine it mostly waits for this process to sleep:
    // hot/README.md, "Write first"). Nothing can answer the call before this returns.
    callee.sendCall(call, frame);
    call.callerIdJson = jsonOf(callerId);
    // The caller's own id is held too, as long as the call: it may be as long as a frame.
    call.bytes = frame.length + (callerId === undefined ? 0 : callerId.length);
    this.deadlines.add(call, timeoutMs, call.startedAt);
    // Fire-and-forget calls are tracked too: they count as the callee's load until answered.
    if (caller && callerId !== undefined) caller.outgoing.set(callerId, call);
    this.calls.set(idNumber, call);
    callee.incoming.set(idNumber, call);
    this.bytesInFlight += call.bytes;
    if (caller) caller.outgoingBytes += call.bytes;
    if (client !== null) {
      client.calls++;
      client.bytes += call.bytes;
    }
    return null;
  }

  // ---- ending a call -----------------------------------------------------------------------------

  /**
   * A result from a callee. Only the peer the call was sent to may complete it. `text`: the frame as
   * it arrived, passed on to the caller when its layout allows.
   */
  complete(from: Peer, msg: InvocationResultMsg, text?: string): void {
    const call = from.incomingCall(msg.invocation_id);
    if (!call) {
      // Late (after a timeout) or unknown: nobody waits for it. Another worker's call: say so.
      const other = this.calls.get(counterOf(msg.invocation_id));
      if (other && other.id === msg.invocation_id) {
        this.warn(`ignored a result for invocation ${msg.invocation_id} from ${from.name}: the call was sent to ${other.callee.name}`);
      }
      return;
    }
    const error = msg.error ?? undefined;
    // The caller is answered first and the books closed after (as in dispatch).
    const { caller, callerIdJson } = call;
    const passedOn =
      text !== undefined && !call.internal && caller !== null && callerIdJson !== undefined
        ? forwardedResult(text, msg, call.id, call.functionId, call.requestedIdJson, callerIdJson)
        : null;
    try {
      if (passedOn !== null) caller?.sendText(passedOn);
      else this.deliver(call, error ? { error } : { result: msg.result ?? null, traceparent: msg.traceparent ?? null, baggage: msg.baggage ?? null });
    } finally {
      // Even if answering failed: the call is over either way.
      this.finish(call, error ? 'error' : 'ok', error, msg.result);
    }
    if (error && this.onCalleeError) {
      this.onCalleeError(call, error, this.spans ? call.traceId || this.ids.traceId(call.idNumber) : undefined);
    }
  }

  whenIdle(): Promise<void> {
    if (this.calls.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** The caller's answer: the engine's own reply, or the frame answer() writes. Public for call-endings.ts. */
  deliver(call: Call, outcome: CallOutcome): void {
    if (call.internal) call.internal(outcome);
    else this.answer(call.caller, call.callerIdJson, call.requestedIdJson, outcome);
  }

  /** The call's books closed: deadline, tables, bytes in flight; its span recorded. Public for call-endings.ts. */
  finish(call: Call, status: SpanStatus, error?: ErrorBody, result?: unknown): void {
    if (call.observed !== undefined) this.observers.settled(call, call.observed, result, status === 'ok' ? undefined : (error ?? { code: status, message: `The call was ${status}` }));
    this.deadlines.remove(call);
    if (this.spans) this.spans.record(call, status, error);
    if (this.metrics) this.metrics.ended(call.functionId, status, performance.now() - call.startedAt, error?.code);
    this.calls.delete(call.idNumber);
    this.bytesInFlight -= call.bytes;
    if (call.caller) {
      call.caller.outgoingBytes -= call.bytes;
      const client = call.caller.client;
      if (client !== null) {
        client.bytes -= call.bytes;
        if (--client.calls === 0 && client.peers === 0) this.clients.forget(client);
      }
    }
    call.callee.incoming.delete(call.idNumber);
    if (call.caller && call.callerInvocationId !== undefined) call.caller.outgoing.delete(call.callerInvocationId);
    if (this.calls.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const f of waiters) f();
    }
  }

  // ---- answers -----------------------------------------------------------------------------------

  /** The caller's answer (hot/call-frames.ts writes it); `callerIdJson` undefined: fire-and-forget. */
  private answer(caller: Peer | null, callerIdJson: string | undefined, fidJson: string, o: CallOutcome): void {
    if (caller === null || callerIdJson === undefined) {
      // The caller's id in the data: the engine's trigger provider fires no log binding for its own failed fires (engine-triggers.ts).
      if (o.error) this.warn(`fire-and-forget call of ${JSON.parse(fidJson) as string}${caller ? ` from ${caller.name}` : ''} failed: ${o.error.message}`, { code: o.error.code, ...(caller ? { caller_worker_id: caller.id } : {}) });
      return;
    }
    caller.sendText(answerText(caller, callerIdJson, fidJson, o, this.warn));
  }

  /** A builtin's answer: as any other, capped at max_frame_bytes (call-answers.ts). */
  private answerBuiltin(caller: Peer | null, callerIdJson: string | undefined, fidJson: string, o: CallOutcome): void {
    if (caller === null || callerIdJson === undefined) return this.answer(caller, callerIdJson, fidJson, o);
    caller.sendText(builtinAnswerText(caller, callerIdJson, fidJson, o, this.opts.maxFrameBytes, this.warn));
  }
}

/** A caller's invocation_id as JSON; undefined for fire-and-forget. */
function jsonOf(callerId: string | undefined): string | undefined {
  return callerId === undefined ? undefined : jsonString(callerId);
}
