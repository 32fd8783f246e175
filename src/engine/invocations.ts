import { randomUUID } from 'node:crypto';
import type { ErrorBody, InvocationResultMsg, InvokeFunctionMsg } from 'svc-sdk/protocol';
import { ChurnMap, exceedsBytes } from 'svc-sdk/internal';
import type { Access } from './auth.js';
import { Deadlines, type DeadlineEntry } from './deadlines.js';
import { EngineError, engineErrors } from './errors.js';
import type { EngineOptions } from './options.js';
import type { BuiltinHandler, Registry } from './registry.js';
import type { Session } from './session.js';
import { callDataTail, forwardedResult, invokeText, jsonString, resultText } from './call-frames.js';
import { counterOf, hex12, IdGenerator, parseTraceparent, type SpanSource, type SpanStatus, type TraceBuffer } from './traces.js';

export interface Invocation extends SpanSource, DeadlineEntry {
  /** Minted by the engine and sent to the callee; callers' own ids never reach callees. */
  id: string;
  /** The caller's invocation_id; undefined for fire-and-forget. */
  callerInvocationId: string | undefined;
  /** Its JSON, once made (for the answer). */
  callerIdJson: string | undefined;
  caller: Session | null;
  /** For calls the engine makes itself. */
  internal: ((body: { result?: unknown; error?: ErrorBody }) => void) | undefined;
  callee: Session;
  /** The registry's id string (shared, so a span in the trace ring does not keep a copy alive). */
  functionId: string;
  /**
   * What the caller asked for, as JSON text for its answer: differs from functionId when an
   * enqueue went to engine::queue::enqueue.
   */
  requestedIdJson: string;
  timeoutMs: number;
  /** Length of the frame sent to the callee and of the caller's id: in the bytes in flight until the call ends. */
  bytes: number;
}

export interface CallOutcome {
  result?: unknown;
  error?: ErrorBody;
  traceparent?: string | null;
  baggage?: string | null;
}

type Reply = (outcome: CallOutcome) => void;

/**
 * Every call in flight, from dispatch to result. Each has a deadline, and each ends exactly once:
 * with the callee's result, a timeout, or `invocation_stopped` when a side disconnects. Nothing is
 * held forever, so memory stays bounded by what is genuinely in flight.
 */
export class Invocations {
  /**
   * Every call in flight by its number (IdGenerator.next), like each callee's `incoming`: a number
   * key costs no hash of a 36-character string.
   */
  private readonly all = new ChurnMap<number, Invocation>();
  private readonly deadlines = new Deadlines<Invocation>((inv) => this.expire(inv));
  /** Invocation, span and trace ids: the trace buffer's generator, so that its numbers render the same. */
  private readonly ids: IdGenerator;
  private idleWaiters: Array<() => void> = [];
  /** The callee frames of the calls in flight together (engine.limits.max_in_flight_bytes). */
  private bytesInFlight = 0;
  /** Set during shutdown: new top-level calls are refused. */
  draining = false;

  constructor(
    private readonly registry: Registry,
    private readonly opts: EngineOptions,
    private readonly warn: (message: string, data?: Record<string, unknown>) => void,
    /** null: tracing off. */
    private readonly traces: TraceBuffer | null = null,
  ) {
    this.ids = traces ? traces.ids : new IdGenerator();
  }

  get size(): number {
    return this.all.size;
  }

  /** In-flight counts by function id (for `engine::queues::list`). */
  countByFunction(): Map<string, number> {
    const m = new Map<string, number>();
    for (const inv of this.all.values()) m.set(inv.functionId, (m.get(inv.functionId) ?? 0) + 1);
    return m;
  }

  /**
   * A call from a connected peer. Answers the caller (unless fire-and-forget) in every case.
   * `text`: the frame as it arrived, whose payload is passed on as text when its layout allows.
   */
  invoke(caller: Session, msg: InvokeFunctionMsg, text?: string, access: Access = caller.access): void {
    const isVoid = msg.invocation_id == null || msg.action?.type === 'void';
    const callerId = isVoid ? undefined : (msg.invocation_id as string);
    const refusal = this.admit(caller, callerId, msg.function_id, access) ?? this.dispatch(caller, callerId, msg, undefined, text);
    if (refusal) this.answer(caller, jsonOf(callerId), JSON.stringify(msg.function_id), { error: refusal });
  }

  /** Answer a peer's call with `error` without starting it. */
  refuse(caller: Session, msg: InvokeFunctionMsg, error: ErrorBody): void {
    const isVoid = msg.invocation_id == null || msg.action?.type === 'void';
    this.answer(caller, isVoid ? undefined : jsonOf(msg.invocation_id as string), JSON.stringify(msg.function_id), { error });
  }

  /** Why a peer's call may not start now, or null. `access`: the rights it runs with. */
  private admit(caller: Session, callerId: string | undefined, fid: string, access: Access): ErrorBody | null {
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

  /** The caller's answer (call-frames.ts writes it); `callerIdJson` undefined: fire-and-forget. */
  private answer(caller: Session | null, callerIdJson: string | undefined, fidJson: string, o: CallOutcome): void {
    if (caller === null || callerIdJson === undefined) {
      if (o.error) this.warn(`fire-and-forget call of ${JSON.parse(fidJson) as string}${caller ? ` from ${caller.name}` : ''} failed: ${o.error.message}`, { code: o.error.code });
      return;
    }
    caller.sendText(this.answerText(caller, callerIdJson, fidJson, o));
  }

  /**
   * A builtin's answer: as any other, and over max_frame_bytes replaced by a `result_too_large`
   * error (listings have no other bound; a frame that large would close the caller's connection).
   */
  private answerBuiltin(caller: Session | null, callerIdJson: string | undefined, fidJson: string, o: CallOutcome): void {
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
  private answerText(caller: Session, callerIdJson: string, fidJson: string, o: CallOutcome): string {
    try {
      return resultText(callerIdJson, fidJson, o.result, o.error, o.traceparent, o.baggage);
    } catch (err) {
      const fid = JSON.parse(fidJson) as string;
      this.warn(`cannot write the answer of ${fid} to ${caller.name}: ${(err as Error).message}`);
      return resultText(callerIdJson, fidJson, undefined, engineErrors.unwritable(fid, 'the result', err), null, null);
    }
  }

  /** A call the engine makes itself (CLI-less tooling, cluster forwarding). */
  call(functionId: string, data: unknown, timeoutMs?: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const reply = (o: CallOutcome): void => (o.error ? reject(new EngineError(o.error.code, o.error.message)) : resolve(o.result));
      const refusal = this.dispatch(null, undefined, { type: 'invokefunction', function_id: functionId, data, ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) }, reply);
      if (refusal) reply({ error: refusal });
    });
  }

  /**
   * Start a call: a builtin answers itself, anything else goes to a provider. Returns the error that
   * refuses it instead of answering, so that the hot path makes no answer closure per call.
   * `internal`: the answer path of a call the engine makes itself (no caller session).
   */
  private dispatch(caller: Session | null, callerId: string | undefined, msg: InvokeFunctionMsg, internal: Reply | undefined, text?: string): ErrorBody | null {
    let fid = msg.function_id;
    let data = msg.data === undefined ? {} : msg.data;
    if (msg.action?.type === 'enqueue') {
      // Queues are served by a worker providing engine::queue::enqueue, as in iii.
      const queue = msg.action.queue;
      if (!this.registry.get('engine::queue::enqueue')) return engineErrors.enqueueUnavailable(queue);
      data = { queue, function_id: fid, data, messageReceiptId: randomUUID() };
      fid = 'engine::queue::enqueue';
    }
    const timeoutMs = msg.timeout_ms ?? this.opts.invocationTimeoutMs;
    if (!(timeoutMs > 0 && timeoutMs <= this.opts.maxInvocationTimeoutMs)) return engineErrors.invalidTimeout(timeoutMs, this.opts.maxInvocationTimeoutMs);
    const entry = this.registry.get(fid);
    if (!entry) return engineErrors.functionNotFound(fid);
    if (entry.builtin) {
      const reply = internal ?? ((o: CallOutcome) => this.answerBuiltin(caller, jsonOf(callerId), JSON.stringify(msg.function_id), o));
      this.runBuiltin(entry.builtin, data, caller, reply, text === undefined ? 0 : text.length);
      return null;
    }
    if (this.all.size >= this.opts.maxInFlightTotal || this.bytesInFlight >= this.opts.maxInFlightBytes) return this.overloaded();
    // A call another engine forwarded (caller is its cluster proxy) is served here or not at all.
    const callee = this.registry.pick(entry, caller?.node !== undefined);
    if (!callee) return engineErrors.functionNotFound(fid);
    // pick() chose the least loaded provider: if it is full, all are.
    if (callee.incoming.size >= this.opts.maxInFlightPerWorker) {
      return engineErrors.overloaded(`Every worker serving ${fid} has ${callee.incoming.size} calls in flight (engine.limits.max_in_flight_per_worker); retry later`);
    }
    const no = this.ids.next();
    const hex = hex12(no);
    const id = this.ids.invocationPrefix + hex;
    // The callee gets a traceparent naming this call's span, so its own calls become children.
    let traceparent = msg.traceparent;
    let traceId = '';
    let parentSpanId = '';
    if (this.traces) {
      const parent = parseTraceparent(traceparent);
      if (parent) {
        traceId = parent.traceId;
        parentSpanId = parent.parentId;
        traceparent = '00-' + traceId + '-' + this.ids.spanPrefix + hex + '-' + parent.flags;
      } else {
        traceparent = this.ids.rootTraceparent(hex);
      }
    }
    // The payload passes on as it came when the frame has our SDKs' layout (call-frames.ts).
    const dataTail = text !== undefined && callerId !== undefined && msg.action === undefined ? callDataTail(text, entry.idJson, callerId, msg.timeout_ms, msg.binding_id) : null;
    // Written before anything else is kept: at one call in flight the work ahead of the write
    // delays the call, the rest overlaps the callee's work (bench/RESULTS.md, session 5). Nothing
    // can answer the call before this returns. A frame that cannot be written (data JSON cannot
    // encode, only possible for the engine's own calls) refuses the call: the caller is answered.
    let frame: string;
    try {
      frame = invokeText(id, entry.idJson, msg, data, dataTail, traceparent ?? undefined, this.traces !== null);
    } catch (err) {
      return engineErrors.unwritable(fid, 'the call', err);
    }
    callee.sendCall(frame, timeoutMs);
    const now = performance.now();
    const inv: Invocation = {
      id,
      no,
      callerInvocationId: callerId,
      callerIdJson: jsonOf(callerId),
      caller,
      internal,
      callee,
      functionId: entry.id,
      requestedIdJson: fid === msg.function_id ? entry.idJson : JSON.stringify(msg.function_id),
      startedAt: now,
      timeoutMs,
      // The caller's own id is held too, as long as the call: it may be as long as a frame.
      bytes: frame.length + (callerId === undefined ? 0 : callerId.length),
      traceId,
      parentSpanId,
      deadlineAt: 0,
      lane: null,
      prevDue: null,
      nextDue: null,
    };
    this.deadlines.add(inv, timeoutMs, now);
    // Fire-and-forget calls are tracked too: they count as the callee's load until answered.
    if (caller && callerId !== undefined) caller.outgoing.set(callerId, inv);
    this.all.set(no, inv);
    callee.incoming.set(no, inv);
    this.bytesInFlight += inv.bytes;
    return null;
  }

  /** Why a call cannot start now: the engine holds as many calls, or as many bytes of them, as it may. */
  private overloaded(): ErrorBody {
    return this.all.size >= this.opts.maxInFlightTotal
      ? engineErrors.overloaded(`The engine has ${this.all.size} calls in flight (engine.limits.max_in_flight_total); retry later`)
      : engineErrors.overloaded(`The calls in flight carry ${this.bytesInFlight} bytes, the engine's limit (engine.limits.max_in_flight_bytes = ${this.opts.maxInFlightBytes}); retry later`);
  }

  /** A builtin's answer, whatever happens in it: `reply` never throws, and anything else is caught here. */
  private runBuiltin(handler: BuiltinHandler, data: unknown, caller: Session | null, reply: Reply, frameChars: number): void {
    Promise.resolve()
      .then(() => handler(data, caller, frameChars))
      .then(
        (result) => reply({ result: result ?? null }),
        (err: unknown) =>
          reply({
            error: err instanceof EngineError ? err.body() : { code: 'invocation_failed', message: err instanceof Error ? err.message : String(err) },
          }),
      )
      .catch((err: unknown) => this.warn(`internal error answering a call of a builtin: ${(err as Error).stack ?? String(err)}`));
  }

  /**
   * A result from a callee. Only the session the call was sent to may complete it. `text`: the
   * frame as it arrived, passed on to the caller when its layout allows.
   */
  complete(from: Session, msg: InvocationResultMsg, text?: string): void {
    const inv = from.incomingCall(msg.invocation_id);
    if (!inv) {
      // Late (after a timeout) or unknown: nobody waits for it. Another worker's call: say so.
      const other = this.all.get(counterOf(msg.invocation_id));
      if (other && other.id === msg.invocation_id) {
        this.warn(`ignored a result for invocation ${msg.invocation_id} from ${from.name}: the call was sent to ${other.callee.name}`);
      }
      return;
    }
    const error = msg.error ?? undefined;
    // The caller is answered first and the call's books closed after (as in dispatch): at one call
    // in flight only the work ahead of the write delays the answer.
    const { caller, callerIdJson } = inv;
    const forwarded =
      text !== undefined && !inv.internal && caller !== null && callerIdJson !== undefined
        ? forwardedResult(text, msg, inv.id, inv.functionId, inv.requestedIdJson, callerIdJson)
        : null;
    try {
      if (forwarded !== null) caller?.sendText(forwarded);
      else this.deliver(inv, error ? { error } : { result: msg.result ?? null, traceparent: msg.traceparent ?? null, baggage: msg.baggage ?? null });
    } finally {
      // Even if answering failed: the call is over either way.
      this.finish(inv, error ? 'error' : 'ok', error);
    }
  }

  /** The callee's result frame could not be accepted (e.g. too large): the caller gets this error instead. */
  fail(from: Session, invocationId: string, error: ErrorBody): void {
    const inv = from.incomingCall(invocationId);
    if (!inv) return;
    this.finish(inv, 'error', error);
    this.deliver(inv, { error });
  }

  /** The caller gave up on its call (svc extension `cancel`). */
  cancel(caller: Session, callerInvocationId: string, reason: string): void {
    const inv = caller.outgoing.get(callerInvocationId);
    if (!inv) return;
    this.finish(inv, 'cancelled');
    this.tellCancel(inv, reason);
  }

  /** A session is gone: its callers learn at once, its callees are told to stop. */
  halt(session: Session, why: string): void {
    for (const inv of [...session.incoming.values()]) {
      const error = engineErrors.invocationStopped(inv.functionId, why);
      this.finish(inv, 'stopped', error);
      this.deliver(inv, { error });
    }
    for (const inv of [...session.outgoing.values()]) {
      this.finish(inv, 'cancelled');
      this.tellCancel(inv, 'caller disconnected');
    }
  }

  /** End everything still in flight (after the shutdown grace period). */
  haltAll(error: ErrorBody): void {
    for (const inv of [...this.all.values()]) {
      this.finish(inv, 'stopped', error);
      this.deliver(inv, { error });
      this.tellCancel(inv, error.message);
    }
  }

  whenIdle(): Promise<void> {
    if (this.all.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private expire(inv: Invocation): void {
    if (this.all.get(inv.no) !== inv) return;
    const error = engineErrors.timeout(inv.functionId, inv.timeoutMs);
    this.finish(inv, 'timeout', error);
    this.deliver(inv, { error });
    this.tellCancel(inv, 'timeout');
  }

  private tellCancel(inv: Invocation, reason: string): void {
    if (inv.callee.features.has('cancel')) inv.callee.send({ type: 'cancel', invocation_id: inv.id, reason });
  }

  private finish(inv: Invocation, status: SpanStatus, error?: ErrorBody): void {
    this.deadlines.remove(inv);
    if (this.traces) this.traces.record(inv, status, error);
    this.all.delete(inv.no);
    this.bytesInFlight -= inv.bytes;
    inv.callee.incoming.delete(inv.no);
    if (inv.caller && inv.callerInvocationId !== undefined) inv.caller.outgoing.delete(inv.callerInvocationId);
    if (this.all.size === 0 && this.idleWaiters.length > 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const f of w) f();
    }
  }

  private deliver(inv: Invocation, outcome: CallOutcome): void {
    if (inv.internal) inv.internal(outcome);
    else this.answer(inv.caller, inv.callerIdJson, inv.requestedIdJson, outcome);
  }
}

/** A caller's invocation_id as JSON; undefined for fire-and-forget. */
function jsonOf(callerId: string | undefined): string | undefined {
  return callerId === undefined ? undefined : jsonString(callerId);
}
