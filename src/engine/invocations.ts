import { randomUUID } from 'node:crypto';
import { DEFAULT_NAMESPACE, type ErrorBody, type InvocationResultMsg, type InvokeFunctionMsg } from 'svc-sdk/protocol';
import type { Access } from './auth.js';
import type { Call, CallOutcome, Reply } from './call.js';
import { EngineError, engineErrors } from './errors.js';
import { callDataTail, forwardedResult, invokeText, jsonString, resultText } from './hot/call-frames.js';
import { Deadlines } from './hot/deadlines.js';
import { hex12 } from './hot/hex12.js';
import { ChurnMap, exceedsBytes } from './hot/shared-with-sdk.js';
import type { SpanRing } from './hot/span-ring.js';
import { NO_DECLARED_PARENT } from './traces.js';
import { counterOf, IdGenerator } from './ids.js';
import { ClientBudgets, type ClientBudget } from './client-budgets.js';
import type { CallMetrics } from './metrics/call-metrics.js';
import { functionNotFound } from './namespaces.js';
import type { EngineOptions } from './options.js';
import type { Peer } from './peer.js';
import type { BuiltinHandler, Registry } from './registry.js';
import { parseTraceparent, type SpanStatus } from './traces.js';
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
 *   dispatch  a builtin answers itself (runBuiltin); otherwise the engine's limits, the callee
 *             (Registry.pick), the call's ids and trace, the callee's frame written with its Call
 *             (Peer.sendCall), and then the books: the deadline, the in-flight tables, the bytes
 *   complete  the callee's result arrives; or the call ends otherwise: fail (its result could not
 *             be accepted), cancel (its caller gave up), expire (its deadline passed), halt (a side
 *             left), haltAll (shutdown)
 *   deliver   the caller is answered: answer() writes its frame, or an engine-made call's reply runs
 *   finish    the books are closed and the call's span recorded
 *
 * A call that admit or dispatch refuses never becomes a Call: answer() writes the refusal. Both
 * dispatch and complete write the frame the other side waits for before they keep or close the
 * books (hot/README.md, "write first").
 */
export class Invocations {
  /**
   * Every call in flight by its id number (ids.ts), like each callee's `incoming`: a number key
   * costs no hash of a 36-character string.
   */
  private readonly calls = new ChurnMap<number, Call>();
  private readonly deadlines = new Deadlines<Call>((call) => this.expire(call));
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

  /** In-flight counts by function id (for `engine::queues::list`). */
  countByFunction(): Map<string, number> {
    const m = new Map<string, number>();
    for (const call of this.calls.values()) m.set(call.functionId, (m.get(call.functionId) ?? 0) + 1);
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
   * The engine span a call made inside an iii client's handler descends from. iii SDKs (no `hello`
   * features) name their own spans as parents, which the engine never records (npm 0.22.1 with its
   * telemetry off sends the trace with a span id of its own; with it on, spans the engine drains),
   * so the tree would break there. While such a client serves exactly one call, and the new call
   * has no traceparent or one in that call's trace, that call is the parent. With none or several
   * served, the traceparent is taken as it is. svc-sdk peers name engine spans themselves.
   */
  private onlyServedCall(caller: Peer | null, traceId: string | undefined): Call | undefined {
    if (caller === null || caller.features.size !== 0 || caller.node !== undefined || caller.incoming.size !== 1) return undefined;
    for (const c of caller.incoming.values()) {
      return traceId === undefined || traceId === (c.traceId || this.ids.traceId(c.idNumber)) ? c : undefined;
    }
    return undefined;
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
      this.runBuiltin(entry.builtin, data, caller, reply, text === undefined ? 0 : text.length, entry.inOrder === true);
      return null;
    }
    if (this.calls.size >= this.opts.maxInFlightTotal || this.bytesInFlight >= this.opts.maxInFlightBytes) return this.overloaded();
    // Another engine's calls were held to this bound there, each by its own caller.
    if (caller !== null && caller.outgoingBytes >= this.opts.maxInFlightBytesPerWorker && caller.node === undefined) {
      return engineErrors.overloaded(`The calls ${caller.name} has in flight carry ${caller.outgoingBytes} bytes (engine.limits.max_in_flight_bytes_per_worker = ${this.opts.maxInFlightBytesPerWorker}); retry later`);
    }
    const client = caller === null ? null : caller.client;
    if (client !== null && (client.calls >= this.opts.maxInFlightPerClient || client.bytes >= this.opts.maxInFlightBytesPerClient)) return this.clientOverloaded(client);
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
      const served = this.onlyServedCall(caller, parent?.traceId);
      if (served) {
        traceId = served.traceId || this.ids.traceId(served.idNumber);
        parentSpanId = this.ids.spanId(served.idNumber);
        declaredParentSpanId = parent?.parentId ?? NO_DECLARED_PARENT;
        traceparent = '00-' + traceId + '-' + this.ids.spanPrefix + hex + '-' + (parent?.flags ?? '01');
      } else if (parent) {
        traceId = parent.traceId;
        parentSpanId = parent.parentId;
        traceparent = '00-' + traceId + '-' + this.ids.spanPrefix + hex + '-' + parent.flags;
      } else {
        traceparent = this.ids.rootTraceparent(hex);
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
    // The frame is written before the books are kept: at one call in flight the work ahead of the
    // write delays the call, the rest overlaps the callee's work. Nothing can answer the call
    // before this returns.
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

  /** Why a client's new call cannot start: its connections together hold as many calls, or bytes, as one client may. */
  private clientOverloaded(client: ClientBudget): ErrorBody {
    return client.calls >= this.opts.maxInFlightPerClient
      ? engineErrors.overloaded(`The connections of ${client.label} have ${client.calls} calls in flight (engine.limits.max_in_flight_per_client = ${this.opts.maxInFlightPerClient}); retry later`)
      : engineErrors.overloaded(`The calls the connections of ${client.label} have in flight carry ${client.bytes} bytes (engine.limits.max_in_flight_bytes_per_client = ${this.opts.maxInFlightBytesPerClient}); retry later`);
  }

  /** Why a call cannot start now: the engine holds as many calls, or as many bytes of them, as it may. */
  private overloaded(): ErrorBody {
    return this.calls.size >= this.opts.maxInFlightTotal
      ? engineErrors.overloaded(`The engine has ${this.calls.size} calls in flight (engine.limits.max_in_flight_total); retry later`)
      : engineErrors.overloaded(`The calls in flight carry ${this.bytesInFlight} bytes, the engine's limit (engine.limits.max_in_flight_bytes = ${this.opts.maxInFlightBytes}); retry later`);
  }

  /** A builtin's answer, whatever happens in it: `reply` never throws, and anything else is caught here. */
  private runBuiltin(handler: BuiltinHandler, data: unknown, caller: Peer | null, reply: Reply, frameChars: number, inOrder: boolean): void {
    let started: Promise<unknown>;
    if (inOrder) {
      try {
        started = Promise.resolve(handler(data, caller, frameChars));
      } catch (err) {
        started = Promise.reject(err);
      }
    } else {
      started = Promise.resolve().then(() => handler(data, caller, frameChars));
    }
    started
      .then(
        (result) => reply({ result: result ?? null }),
        (err: unknown) =>
          reply({
            error: err instanceof EngineError ? err.body() : { code: 'invocation_failed', message: err instanceof Error ? err.message : String(err) },
          }),
      )
      .catch((err: unknown) => this.warn(`internal error answering a call of a builtin: ${(err as Error).stack ?? String(err)}`));
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

  /** The callee's result frame could not be accepted (e.g. too large): the caller gets this error instead. */
  fail(from: Peer, invocationId: string, error: ErrorBody): void {
    const call = from.incomingCall(invocationId);
    if (call) this.end(call, 'error', error);
  }

  /** The caller gave up on its call (svc extension `cancel`). */
  cancel(caller: Peer, callerInvocationId: string, reason: string): void {
    const call = caller.outgoing.get(callerInvocationId);
    if (!call) return;
    this.finish(call, 'cancelled');
    this.tellCancel(call, reason);
  }

  /** The deadline passed (hot/deadlines.ts): the caller gets `timeout`, the callee a cancel. */
  private expire(call: Call): void {
    if (this.calls.get(call.idNumber) !== call) return;
    this.end(call, 'timeout', engineErrors.timeout(call.functionId, call.timeoutMs));
    this.tellCancel(call, 'timeout');
  }

  /** A peer is gone: its callers learn at once, its callees are told to stop. */
  halt(peer: Peer, why: string): void {
    this.observers.dropOwner(peer);
    for (const call of [...peer.incoming.values()]) this.end(call, 'stopped', engineErrors.invocationStopped(call.functionId, why));
    for (const call of [...peer.outgoing.values()]) {
      this.finish(call, 'cancelled');
      this.tellCancel(call, 'caller disconnected');
    }
  }

  /** End everything still in flight (after the shutdown grace period). */
  haltAll(error: ErrorBody): void {
    for (const call of [...this.calls.values()]) {
      this.end(call, 'stopped', error);
      this.tellCancel(call, error.message);
    }
  }

  whenIdle(): Promise<void> {
    if (this.calls.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** A call ends before its result: its caller is answered with `error`, then its books are closed. */
  private end(call: Call, status: SpanStatus, error: ErrorBody): void {
    try {
      this.deliver(call, { error });
    } finally {
      this.finish(call, status, error);
    }
  }

  private tellCancel(call: Call, reason: string): void {
    if (call.callee.features.has('cancel')) call.callee.send({ type: 'cancel', invocation_id: call.id, reason });
  }

  /** The caller's answer: the engine's own reply, or the frame answer() writes. */
  private deliver(call: Call, outcome: CallOutcome): void {
    if (call.internal) call.internal(outcome);
    else this.answer(call.caller, call.callerIdJson, call.requestedIdJson, outcome);
  }

  /** The call's books closed: deadline, tables, bytes in flight; its span recorded. */
  private finish(call: Call, status: SpanStatus, error?: ErrorBody, result?: unknown): void {
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
    caller.sendText(this.answerText(caller, callerIdJson, fidJson, o));
  }

  /**
   * A builtin's answer: as any other, and over max_frame_bytes replaced by a `result_too_large`
   * error (listings have no other bound; a frame that large would close the caller's connection).
   */
  private answerBuiltin(caller: Peer | null, callerIdJson: string | undefined, fidJson: string, o: CallOutcome): void {
    if (caller === null || callerIdJson === undefined) return this.answer(caller, callerIdJson, fidJson, o);
    let text = this.answerText(caller, callerIdJson, fidJson, o);
    const size = exceedsBytes(text, this.opts.maxFrameBytes);
    if (size !== false) text = resultText(callerIdJson, fidJson, undefined, engineErrors.builtinResultTooLarge(JSON.parse(fidJson) as string, size, this.opts.maxFrameBytes), null, null);
    caller.sendText(text);
  }

  /**
   * The answer frame. Never throws: an answer that cannot be written (a value JSON cannot encode)
   * becomes an `internal_error` answer, so that the caller is answered either way.
   */
  private answerText(caller: Peer, callerIdJson: string, fidJson: string, o: CallOutcome): string {
    try {
      return resultText(callerIdJson, fidJson, o.result, o.error, o.traceparent, o.baggage);
    } catch (err) {
      const fid = JSON.parse(fidJson) as string;
      this.warn(`cannot write the answer of ${fid} to ${caller.name}: ${(err as Error).message}`);
      return resultText(callerIdJson, fidJson, undefined, engineErrors.unwritable(fid, 'the result', err), null, null);
    }
  }
}

/** A caller's invocation_id as JSON; undefined for fire-and-forget. */
function jsonOf(callerId: string | undefined): string | undefined {
  return callerId === undefined ? undefined : jsonString(callerId);
}
