import { randomUUID } from 'node:crypto';
import type { ErrorBody, InvocationResultMsg, InvokeFunctionMsg } from 'svc-sdk';
import { EngineError, engineErrors } from './errors.js';
import type { EngineOptions } from './options.js';
import type { Registry } from './registry.js';
import type { Session } from './session.js';
import { IdGenerator, parseTraceparent, type SpanStatus, type TraceBuffer } from './traces.js';

export interface Invocation {
  /** Minted by the engine and sent to the callee; callers' own ids never reach callees. */
  id: string;
  /** The caller's invocation_id; undefined for fire-and-forget. */
  callerInvocationId: string | undefined;
  caller: Session | null;
  /** For calls the engine makes itself. */
  internal: ((body: { result?: unknown; error?: ErrorBody }) => void) | undefined;
  callee: Session;
  functionId: string;
  /** What the caller asked for: differs from functionId when an enqueue went to engine::queue::enqueue. */
  requestedFunctionId: string;
  startedAt: number;
  timeoutMs: number;
  timer: NodeJS.Timeout;
  /** Tracing (empty strings when off): this call's span, its trace and its parent span. */
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** High-resolution epoch ms of the start, for the span. */
  traceStart: number;
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
  private readonly all = new Map<string, Invocation>();
  /** Invocation ids (and, through the trace buffer's own generator, trace and span ids). */
  private readonly ids = new IdGenerator();
  private idleWaiters: Array<() => void> = [];
  /** Set during shutdown: new top-level calls are refused. */
  draining = false;

  constructor(
    private readonly registry: Registry,
    private readonly opts: EngineOptions,
    private readonly warn: (message: string, data?: Record<string, unknown>) => void,
    /** null: tracing off. */
    private readonly traces: TraceBuffer | null = null,
  ) {}

  get size(): number {
    return this.all.size;
  }

  /** In-flight counts by function id (for `engine::queues::list`). */
  countByFunction(): Map<string, number> {
    const m = new Map<string, number>();
    for (const inv of this.all.values()) m.set(inv.functionId, (m.get(inv.functionId) ?? 0) + 1);
    return m;
  }

  /** A call from a connected peer. Answers the caller (unless fire-and-forget) in every case. */
  invoke(caller: Session, msg: InvokeFunctionMsg): void {
    const isVoid = msg.invocation_id == null || msg.action?.type === 'void';
    const callerId = isVoid ? undefined : (msg.invocation_id as string);
    const fid = msg.function_id;
    const reply: Reply = (o) => this.answer(caller, callerId, fid, o);
    if (!caller.access.canCall(fid)) {
      reply({ error: engineErrors.forbiddenCall(caller.access.name, fid) });
      return;
    }
    if (!isVoid && caller.outgoing.size >= this.opts.maxInFlightPerWorker) {
      reply({ error: engineErrors.overloaded(`${caller.name} already waits on ${caller.outgoing.size} calls (engine.limits.max_in_flight_per_worker)`) });
      return;
    }
    if (callerId !== undefined && caller.outgoing.has(callerId)) {
      reply({ error: { code: 'invalid_frame', message: `invocation_id ${callerId} is already in flight from this connection` } });
      return;
    }
    // During shutdown, calls made by a worker that is itself serving a call are nested calls of
    // in-flight work and must go on; other new calls are refused.
    if (this.draining && caller.incoming.size === 0) {
      reply({ error: engineErrors.shuttingDown() });
      return;
    }
    this.dispatch(caller, callerId, msg);
  }

  /**
   * The caller's answer, written as text: the result frame is the hottest thing the engine
   * builds, and a template avoids the temporary objects a spread-and-stringify would make.
   */
  private answer(caller: Session | null, callerId: string | undefined, fid: string, o: CallOutcome): void {
    if (caller === null || callerId === undefined) {
      if (o.error) this.warn(`fire-and-forget call of ${fid}${caller ? ` from ${caller.name}` : ''} failed: ${o.error.message}`, { code: o.error.code });
      return;
    }
    let t = '{"type":"invocationresult","invocation_id":' + JSON.stringify(callerId) + ',"function_id":' + JSON.stringify(fid);
    t += o.error ? ',"error":' + JSON.stringify(o.error) : ',"result":' + (o.result === undefined ? 'null' : JSON.stringify(o.result) ?? 'null');
    if (o.traceparent) t += ',"traceparent":' + JSON.stringify(o.traceparent);
    if (o.baggage) t += ',"baggage":' + JSON.stringify(o.baggage);
    caller.sendText(t + '}');
  }

  /** A call the engine makes itself (CLI-less tooling, cluster forwarding). */
  call(functionId: string, data: unknown, timeoutMs?: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.dispatch(null, undefined, { type: 'invokefunction', function_id: functionId, data, ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) }, (o) =>
        o.error ? reject(new EngineError(o.error.code, o.error.message)) : resolve(o.result),
      );
    });
  }

  /** `internal`: the answer path of a call the engine makes itself (no caller session). */
  private dispatch(caller: Session | null, callerId: string | undefined, msg: InvokeFunctionMsg, internal?: Reply): void {
    const fid0 = msg.function_id;
    const reply: Reply = internal ?? ((o) => this.answer(caller, callerId, fid0, o));
    let fid = msg.function_id;
    let data = msg.data === undefined ? {} : msg.data;
    if (msg.action?.type === 'enqueue') {
      // Queues are served by a worker providing engine::queue::enqueue, as in iii.
      const queue = msg.action.queue;
      if (!this.registry.get('engine::queue::enqueue')) {
        reply({ error: engineErrors.enqueueUnavailable(queue) });
        return;
      }
      data = { queue, function_id: fid, data, messageReceiptId: randomUUID() };
      fid = 'engine::queue::enqueue';
    }
    const timeoutMs = msg.timeout_ms ?? this.opts.invocationTimeoutMs;
    if (!(timeoutMs > 0 && timeoutMs <= this.opts.maxInvocationTimeoutMs)) {
      reply({ error: engineErrors.invalidTimeout(timeoutMs, this.opts.maxInvocationTimeoutMs) });
      return;
    }
    const entry = this.registry.get(fid);
    if (!entry) {
      reply({ error: engineErrors.functionNotFound(fid) });
      return;
    }
    if (entry.builtin) {
      const handler = entry.builtin;
      Promise.resolve()
        .then(() => handler(data, caller))
        .then(
          (result) => reply({ result: result ?? null }),
          (err: unknown) =>
            reply({
              error:
                err instanceof EngineError
                  ? err.body()
                  : { code: 'invocation_failed', message: err instanceof Error ? err.message : String(err) },
            }),
        );
      return;
    }
    if (this.all.size >= this.opts.maxInFlightTotal) {
      reply({ error: engineErrors.overloaded(`The engine has ${this.all.size} calls in flight (engine.limits.max_in_flight_total); retry later`) });
      return;
    }
    // A call another engine forwarded (caller is its cluster proxy) is served here or not at all.
    const callee = this.registry.pick(entry, caller?.node !== undefined);
    if (!callee) {
      reply({ error: engineErrors.functionNotFound(fid) });
      return;
    }
    // pick() chose the least loaded provider: if it is full, all are.
    if (callee.incoming.size >= this.opts.maxInFlightPerWorker) {
      reply({ error: engineErrors.overloaded(`Every worker serving ${fid} has ${callee.incoming.size} calls in flight (engine.limits.max_in_flight_per_worker); retry later`) });
      return;
    }
    const id = this.ids.invocationId();
    // The callee gets a traceparent naming this call's span, so its own calls become children.
    let traceparent = msg.traceparent;
    let traceId = '';
    let spanId = '';
    let parentSpanId = '';
    if (this.traces) {
      const parent = parseTraceparent(traceparent);
      traceId = parent ? parent.traceId : this.traces.ids.traceId();
      parentSpanId = parent ? parent.parentId : '';
      spanId = this.traces.ids.spanId();
      traceparent = `00-${traceId}-${spanId}-${parent ? parent.flags : '01'}`;
    }
    const inv: Invocation = {
      id,
      callerInvocationId: callerId,
      caller,
      internal,
      callee,
      functionId: fid,
      requestedFunctionId: fid0,
      startedAt: Date.now(),
      timeoutMs,
      timer: setTimeout(() => this.expire(inv), timeoutMs),
      traceId,
      spanId,
      parentSpanId,
      traceStart: this.traces ? performance.timeOrigin + performance.now() : 0,
    };
    // Fire-and-forget calls are tracked too: they count as the callee's load until answered.
    if (caller && callerId !== undefined) caller.outgoing.set(callerId, inv);
    this.all.set(id, inv);
    callee.incoming.set(id, inv);
    // Written as text for the same reason as answer(); `id` is UUID-shaped, nothing to escape.
    let t = '{"type":"invokefunction","invocation_id":"' + id + '","function_id":' + JSON.stringify(fid) + ',"data":' + (JSON.stringify(data) ?? 'null');
    if (traceparent) t += ',"traceparent":' + JSON.stringify(traceparent);
    if (msg.baggage) t += ',"baggage":' + JSON.stringify(msg.baggage);
    if (msg.metadata !== undefined) t += ',"metadata":' + JSON.stringify(msg.metadata);
    callee.sendText(t + '}');
  }

  /** A result from a callee. Only the session the call was sent to may complete it. */
  complete(from: Session, msg: InvocationResultMsg): void {
    const inv = this.all.get(msg.invocation_id);
    if (!inv) return; // late (after a timeout) or unknown: nobody waits for it
    if (inv.callee !== from) {
      this.warn(`ignored a result for invocation ${msg.invocation_id} from ${from.name}: the call was sent to ${inv.callee.name}`);
      return;
    }
    this.finish(inv, msg.error ? 'error' : 'ok', msg.error);
    this.deliver(inv, msg.error ? { error: msg.error } : { result: msg.result ?? null, traceparent: msg.traceparent ?? null, baggage: msg.baggage ?? null });
  }

  /** The callee's result frame could not be accepted (e.g. too large): the caller gets this error instead. */
  fail(from: Session, invocationId: string, error: ErrorBody): void {
    const inv = this.all.get(invocationId);
    if (!inv || inv.callee !== from) return;
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
    if (this.all.get(inv.id) !== inv) return;
    const error = engineErrors.timeout(inv.functionId, inv.timeoutMs);
    this.finish(inv, 'timeout', error);
    this.deliver(inv, { error });
    this.tellCancel(inv, 'timeout');
  }

  private tellCancel(inv: Invocation, reason: string): void {
    if (inv.callee.features.has('cancel')) inv.callee.send({ type: 'cancel', invocation_id: inv.id, reason });
  }

  private finish(inv: Invocation, status: SpanStatus, error?: ErrorBody): void {
    clearTimeout(inv.timer);
    if (this.traces && inv.traceId) {
      this.traces.add({
        trace_id: inv.traceId,
        span_id: inv.spanId,
        parent_span_id: inv.parentSpanId || null,
        function_id: inv.functionId,
        invocation_id: inv.id,
        caller_worker_id: inv.caller ? inv.caller.id : null,
        caller_worker_name: inv.caller ? inv.caller.name : 'engine',
        callee_worker_id: inv.callee.id,
        callee_worker_name: inv.callee.name,
        start_ms: inv.traceStart,
        duration_ms: performance.timeOrigin + performance.now() - inv.traceStart,
        status,
        error: error ? { code: error.code, message: error.message } : null,
      });
    }
    this.all.delete(inv.id);
    inv.callee.incoming.delete(inv.id);
    if (inv.caller && inv.callerInvocationId !== undefined) inv.caller.outgoing.delete(inv.callerInvocationId);
    if (this.all.size === 0 && this.idleWaiters.length > 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const f of w) f();
    }
  }

  private deliver(inv: Invocation, outcome: CallOutcome): void {
    if (inv.internal) inv.internal(outcome);
    else this.answer(inv.caller, inv.callerInvocationId, inv.requestedFunctionId, outcome);
  }
}
