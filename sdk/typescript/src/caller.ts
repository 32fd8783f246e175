import { randomUUID } from 'node:crypto';
import { ChurnMap } from './churn-map.js';
import { Deadlines, type DeadlineEntry } from './deadlines.js';
import { whyNotSerializable, type Connection } from './connection.js';
import { invocationScope } from './context.js';
import { describeValue as describe, InvocationError } from './errors.js';
import { invokeFrameText } from './protocol/frame-layout.js';
import type { OpenSpan, SpanTracer } from './otel-export.js';
import type { InvocationResultMsg } from './protocol/messages.js';
import type { CallRequest } from './worker-types.js';
import type { WorkerState } from './worker-events.js';

/** How long after a call's deadline the local safety timer gives up on the engine's answer. */
export const SAFETY_MARGIN_MS = 1000;

/** A call awaiting its answer; its safety deadline is kept in Caller.deadlines' lanes. */
interface PendingCall extends DeadlineEntry {
  /** Its invocation_id: the table is keyed by the counter in it (Caller.calls). */
  id: string;
  key: number;
  resolve(v: unknown): void;
  reject(e: Error): void;
  functionId: string;
  /** The caller's own deadline; undefined: the engine's default applies. */
  timeoutMs: number | undefined;
  /** How long the safety net has waited for, so far (ms). */
  waited: number;
}

/** What the Caller needs of its worker. */
export interface CallerHost {
  readonly state: WorkerState;
  /** Resolves once connected; rejects with the refusal, `connection_lost` at `timeoutMs`, or `shutting_down`. */
  ready(timeoutMs: number): Promise<void>;
  /** The deadline of a call that sets none, as far as known now (the engine's, once it said). */
  readonly defaultTimeoutMs: number;
  /** WorkerOptions.invocationTimeoutMs. */
  readonly invocationTimeoutMs: number | undefined;
  /** WorkerOptions.namespace: where a call that names none is looked up (undefined: `default`). */
  readonly namespace: string | undefined;
  /** The engine granted the `cancel` feature. */
  readonly canCancel: boolean;
  /** The refusal that closed the worker for good (`stale_worker`), if that is why it is closed. */
  readonly closedBy: InvocationError | null;
}

/**
 * The calls this worker makes (`trigger()`): the frame, the pending answer, the deadline's safety
 * net, cancelling. The engine enforces every call's deadline and answers `timeout`; a call given a
 * deadline carries it as `timeout_ms`, a call given none carries none and the engine applies its
 * `engine.invocation_timeout_ms`.
 */
export class Caller {
  /**
   * Calls awaiting their answer, by the counter in their id: a number key costs no hash of a
   * 36-character string, made anew by each answer's parse (as the engine's tables, ids.ts).
   */
  private readonly calls = new ChurnMap<number, PendingCall>();
  /**
   * The safety net of each call, a second after its deadline: calls of one duration share a lane
   * and its one timer (as the engine's deadlines): a `setTimeout` + `clearTimeout` per call made a
   * Timeout each and churned Node's timer lists (bench/RESULTS.md, thirteenth session).
   */
  private readonly deadlines = new Deadlines<PendingCall>((call) => this.expire(call));
  /**
   * Invocation ids: UUID-shaped, a random prefix of this Caller's and a counter in the last 12 hex
   * digits. An id need only be unique among this connection's calls in flight (docs/protocol.md);
   * a `randomUUID()` per call, with its entropy refills, was 4–6 % of a caller's CPU at 256 in flight.
   */
  private readonly idPrefix = randomUUID().slice(0, 24);
  private idCounter = 0;
  /** Set once OpenTelemetry export is loaded (WorkerOptions.otel); undefined: no spans of ours. */
  tracer: SpanTracer | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly host: CallerHost,
  ) {}

  /**
   * Not an async function: connected (the usual case), the call's own promise is returned as it
   * is, instead of an async function's promise resolved with it (two more promise jobs per call).
   * Every failure before the frame leaves is a rejection, never a throw.
   */
  call<T>(req: CallRequest): Promise<T> {
    const problem = requestProblem(req);
    if (problem !== null) return Promise.reject(problem);
    const state = this.host.state;
    if (state === 'closed') return Promise.reject(this.host.closedBy ?? new InvocationError('shutting_down', 'Worker is shut down', req.function_id));
    // No deadline given: none is sent, and the engine applies its own default
    // (engine.invocation_timeout_ms), which the local safety timer below follows.
    const timeoutMs = req.timeoutMs ?? this.host.invocationTimeoutMs;
    // While draining, handlers still running make their nested calls on the connection as it is.
    if (state === 'connected' || state === 'draining') return this.send<T>(req, timeoutMs);
    return this.host.ready(timeoutMs ?? this.host.defaultTimeoutMs).then(() => this.send<T>(req, timeoutMs));
  }

  private send<T>(req: CallRequest, timeoutMs: number | undefined): Promise<T> {
    const scope = req.parent ?? invocationScope.getStore();
    const isVoid = req.action?.type === 'void';
    const key = this.idCounter++ % 0x1000000000000;
    const invocationId = isVoid ? undefined : this.idPrefix + key.toString(16).padStart(12, '0');
    // With export on, the traceparent sent names our CLIENT span: the engine's span is its child.
    const span = this.tracer ? this.tracer.client(req.function_id, scope?.traceparent) : undefined;
    const sent = this.sendFrame<T>(req, timeoutMs, scope, invocationId, key, span);
    return span ? endWhenSettled(sent, span) : sent;
  }

  private sendFrame<T>(req: CallRequest, timeoutMs: number | undefined, scope: { traceparent?: string; baggage?: string } | undefined, invocationId: string | undefined, key: number, span: OpenSpan | undefined): Promise<T> {
    let text: string;
    try {
      text = invokeFrameText(
        req.function_id,
        invocationId,
        timeoutMs,
        req.bindingId,
        req.payload ?? {},
        req.action,
        req.metadata,
        span ? span.traceparent : scope?.traceparent,
        scope?.baggage,
        req.namespace ?? this.host.namespace,
      );
    } catch (e) {
      return Promise.reject(new InvocationError('invalid_payload', `Payload is not JSON-serializable: ${whyNotSerializable(e)}`, req.function_id));
    }
    const tooLarge = this.conn.oversize(text, 'invokefunction', req.function_id, req.function_id);
    if (tooLarge !== null) return Promise.reject(tooLarge);
    if (!invocationId) {
      if (!this.conn.sendText(text)) return Promise.reject(new InvocationError('connection_lost', 'Not connected to the engine', req.function_id));
      return Promise.resolve(undefined as T);
    }
    const signal = req.signal;
    if (signal?.aborted) return Promise.reject(cancelledError(req.function_id));
    // Write first: the frame leaves before the call's books (its promise, safety timer and entry)
    // are kept, so where the engine has a core of its own that work overlaps the engine's
    // (src/engine/hot/README.md, "Write first"). Nothing can answer in between: the answer
    // arrives in a later turn.
    if (!this.conn.sendText(text)) return Promise.reject(new InvocationError('connection_lost', 'Not connected to the engine', req.function_id));
    return new Promise<T>((resolve, reject) => {
      // The engine enforces the deadline and answers `timeout`; the safety net is only for an
      // engine that never answers, a second after the engine's deadline. Without a deadline of the
      // caller's, that is the engine's default, which may only be known (from `hello`) after the
      // call went out: expire() then waits on for what the engine advertised.
      const waited = (timeoutMs ?? this.host.defaultTimeoutMs) + SAFETY_MARGIN_MS;
      const call: PendingCall = { id: invocationId, key, resolve: resolve as (v: unknown) => void, reject, functionId: req.function_id, timeoutMs, waited, deadlineAt: 0, lane: null, prevDue: null, nextDue: null };
      this.calls.set(key, call);
      this.deadlines.add(call, waited, performance.now());
      if (!signal) return;
      const onAbort = (): void => {
        if (this.calls.get(key) !== call) return;
        this.calls.delete(key);
        this.deadlines.remove(call);
        this.cancelRemote(invocationId, 'caller aborted');
        reject(cancelledError(req.function_id));
      };
      const settle = <A extends unknown[]>(f: (...a: A) => void) => (...a: A): void => {
        signal.removeEventListener('abort', onAbort);
        f(...a);
      };
      call.resolve = settle(resolve as (v: unknown) => void);
      call.reject = settle(reject);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A call's safety net ran out: it waits on for the engine's default if that grew, or fails with `timeout`. */
  private expire(call: PendingCall): void {
    if (this.calls.get(call.key) !== call) return;
    const engineDefault = this.host.defaultTimeoutMs + SAFETY_MARGIN_MS;
    if (call.timeoutMs === undefined && engineDefault > call.waited) {
      this.deadlines.add(call, engineDefault - call.waited, performance.now());
      call.waited = engineDefault;
      return;
    }
    this.calls.delete(call.key);
    this.cancelRemote(call.id, 'timeout');
    call.reject(new InvocationError('timeout', `Invocation of ${call.functionId} timed out after ${call.waited - SAFETY_MARGIN_MS}ms`, call.functionId));
  }

  /** The engine's answer to one of our calls; a late one (after a timeout or abort) is dropped. */
  onResult(m: InvocationResultMsg): void {
    const id = m.invocation_id;
    const key = parseInt(id.slice(-12), 16);
    const call = this.calls.get(key);
    if (!call || call.id !== id) return;
    this.calls.delete(key);
    this.deadlines.remove(call);
    if (m.error) call.reject(InvocationError.from(m.error, m.function_id ?? call.functionId));
    else call.resolve(m.result ?? null);
  }

  /** Fail every call awaiting an answer: the socket is gone (`connection_lost`) or the worker stops. */
  failAll(code: 'connection_lost' | 'shutting_down', message: (functionId: string) => string): void {
    for (const [key, call] of this.calls) {
      this.deadlines.remove(call);
      call.reject(new InvocationError(code, message(call.functionId), call.functionId));
      this.calls.delete(key);
    }
  }

  private cancelRemote(invocationId: string, reason: string): void {
    if (this.host.canCancel) this.conn.send({ type: 'cancel', invocation_id: invocationId, reason });
  }
}

function cancelledError(functionId: string): InvocationError {
  return new InvocationError('cancelled', `Call of ${functionId} was cancelled by the caller`, functionId);
}

/**
 * Why `req` cannot be sent, as the Python SDK reports it (the same codes): `invalid_function_id`
 * for a missing or empty function id, `invalid_namespace` for a blank namespace, `invalid_argument`
 * for any other field of the wrong kind.
 * Checked before anything is sent, so a mistake is not answered by the engine as a bad frame.
 */
function requestProblem(req: CallRequest): InvocationError | null {
  if (typeof req !== 'object' || req === null) return new InvocationError('invalid_argument', `trigger() takes {function_id, payload?, …}, got ${describe(req)}`);
  const fid = req.function_id;
  if (typeof fid !== 'string' || fid.length === 0) return new InvocationError('invalid_function_id', `trigger() needs a non-empty function_id, got ${describe(fid)}`);
  const t = req.timeoutMs;
  if (t !== undefined && !(typeof t === 'number' && t > 0 && Number.isFinite(t))) {
    return new InvocationError('invalid_argument', `timeoutMs must be a positive number of milliseconds, got ${describe(t)}`, fid);
  }
  const a = req.action;
  if (a !== undefined && !(typeof a === 'object' && a !== null && (a.type === 'void' || (a.type === 'enqueue' && typeof a.queue === 'string')))) {
    return new InvocationError('invalid_argument', `action must be {type: 'void'} or {type: 'enqueue', queue: string} (TriggerAction), got ${describe(a)}`, fid);
  }
  const b = req.bindingId;
  if (b !== undefined && !(typeof b === 'string' && b.length > 0)) return new InvocationError('invalid_argument', `bindingId must be a non-empty string, got ${describe(b)}`, fid);
  const ns = req.namespace;
  if (ns !== undefined && !(typeof ns === 'string' && ns.trim().length > 0)) {
    return new InvocationError('invalid_namespace', `namespace must be a non-blank string, got ${describe(ns)}; leave it unset for this worker's namespace`, fid);
  }
  return null;
}

/** The call's promise, ending `span` when it settles (the caller still sees the same outcome). */
function endWhenSettled<T>(p: Promise<T>, span: OpenSpan): Promise<T> {
  return p.then(
    (r) => {
      span.end();
      return r;
    },
    (e: Error) => {
      span.end(e);
      throw e;
    },
  );
}
