import { ChurnMap } from './churn-map.js';
import { whyNotSerializable, type Connection } from './connection.js';
import { invocationScope } from './context.js';
import { describeValue, InvocationError, toErrorBody } from './errors.js';
import type { Logger } from './logger.js';
import type { OpenSpan, SpanTracer } from './otel-export.js';
import { resultFrameText } from './protocol/frame-layout.js';
import { functionIdProblem } from './protocol/function-id.js';
import type { ErrorBody, InvokeFunctionMsg, RegisterFunctionMsg } from './protocol/messages.js';
import type { FunctionOptions } from './worker-types.js';

/**
 * One incoming call being served: the handler's `ctx` (InvocationContext, with `worker` of type W)
 * and the async-local scope in one object. Its AbortController is made only when the handler reads
 * `signal`, since most never do and one per call was a measurable share of a worker's CPU.
 */
export class RunningCall<W> {
  private controller: AbortController | undefined;
  private reason: unknown;
  aborted = false;
  /** This worker's own span of the call, when OpenTelemetry export is on (otel-export.ts). */
  span: OpenSpan | undefined;

  constructor(
    readonly invocationId: string,
    readonly functionId: string,
    readonly metadata: unknown,
    readonly traceparent: string | undefined,
    readonly baggage: string | undefined,
    readonly logger: Logger,
    readonly worker: W,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

// `any` for the input on purpose: handlers declare the shape they expect.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Handler<W> = (data: any, ctx: RunningCall<W>) => unknown;

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  v !== null && (typeof v === 'object' || typeof v === 'function') && typeof (v as { then?: unknown }).then === 'function';

/** What the Invoker needs of its worker. */
export interface InvokerHost<W> {
  readonly workerName: string;
  readonly logger: Logger;
  /** The handlers' `ctx.worker`. */
  readonly worker: W;
  /** false: handlers run without the async-local scope (WorkerOptions.implicitContext). */
  readonly implicitContext: boolean;
  /** false once shutdown() began: new calls are refused with `shutting_down`. */
  accepting(): boolean;
}

/**
 * The calls the engine routes to this worker: the function table (replayed on every connection),
 * the handlers running, their answers, and cancelling them. Knows when it is idle, for shutdown().
 */
export class Invoker<W> {
  private readonly functions = new Map<string, { handler: Handler<W>; msg: RegisterFunctionMsg }>();
  /** Calls awaiting an answer, by invocation id (fire-and-forget calls have none). */
  private readonly running = new ChurnMap<string, RunningCall<W>>();
  /** Handlers running, fire-and-forget ones included. */
  private active = 0;
  private idleWaiters: Array<() => void> = [];
  /** Set once OpenTelemetry export is loaded (WorkerOptions.otel); undefined: no spans of ours. */
  tracer: SpanTracer | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly host: InvokerHost<W>,
  ) {}

  register(id: string, handler: Handler<W>, options: FunctionOptions): { id: string; unregister(): void } {
    if (typeof id !== 'string') throw new InvocationError('invalid_function_id', `Function id must be a non-empty string, got ${describeValue(id)}`);
    const problem = functionIdProblem(id);
    if (problem !== null) throw new InvocationError('invalid_function_id', `Function id ${JSON.stringify(id.slice(0, 200))} ${problem}`);
    if (typeof handler !== 'function') throw new InvocationError('invalid_argument', `Handler for ${id} must be a function, got ${describeValue(handler)}`, id);
    if (this.functions.has(id)) throw new InvocationError('duplicate_function', `Function ${id} is already registered by this worker`, id);
    const msg: RegisterFunctionMsg = { type: 'registerfunction', id, ...options };
    this.functions.set(id, { handler, msg });
    this.conn.send(msg);
    return {
      id,
      unregister: () => {
        if (this.functions.delete(id)) this.conn.send({ type: 'unregisterfunction', id });
      },
    };
  }

  /** Send every registration again (a new connection). */
  replay(): void {
    for (const { msg } of this.functions.values()) this.conn.send(msg);
  }

  invoke(m: InvokeFunctionMsg): void {
    const invocationId = m.invocation_id ?? undefined;
    if (!this.host.accepting()) {
      if (invocationId) this.reply(invocationId, m.function_id, undefined, { code: 'shutting_down', message: `Worker ${this.host.workerName} is shutting down` });
      return;
    }
    const fn = this.functions.get(m.function_id);
    if (!fn) {
      if (invocationId) this.reply(invocationId, m.function_id, undefined, { code: 'function_not_found', message: `Function ${m.function_id} not found` });
      return;
    }
    // With export on, the handler's logs and nested calls run under our SERVER span, a child of the engine's.
    const span = this.tracer ? this.tracer.server(m.function_id, m.traceparent ?? undefined, this.host.workerName) : undefined;
    const call = new RunningCall(invocationId ?? '', m.function_id, m.metadata, span ? span.traceparent : (m.traceparent ?? undefined), m.baggage ?? undefined, this.host.logger, this.host.worker);
    call.span = span;
    if (invocationId) this.running.set(invocationId, call);
    this.active++;
    let result: unknown;
    try {
      // The call is the handler's context and the async-local scope at once (Logger, nested calls).
      result = this.host.implicitContext ? invocationScope.run(call, fn.handler, m.data ?? {}, call) : fn.handler(m.data ?? {}, call);
    } catch (e) {
      this.finish(call, undefined, toErrorBody(e));
      return;
    }
    // A handler that answered synchronously is answered in this turn: no promise, no microtask
    // (with the async-local scope on, every promise also runs Node's promise hooks).
    if (!isThenable(result)) {
      this.finish(call, result, undefined);
      return;
    }
    Promise.resolve(result).then(
      (r) => this.finish(call, r, undefined),
      (e: unknown) => this.finish(call, undefined, toErrorBody(e)),
    );
  }

  /** The handler of `call` returned or threw: the books, then the answer unless it was cancelled. */
  private finish(call: RunningCall<W>, result: unknown, error: ErrorBody | undefined): void {
    if (--this.active === 0 && this.idleWaiters.length > 0) for (const w of this.idleWaiters.splice(0)) w();
    call.span?.end(error);
    const invocationId = call.invocationId;
    if (!invocationId) return;
    const wasRunning = this.running.delete(invocationId);
    // Cancelled (or the connection dropped): the engine no longer expects an answer.
    if (!wasRunning || call.aborted) return;
    this.reply(invocationId, call.functionId, result, error);
  }

  /** The engine no longer wants the answer (`cancel`): the handler's signal is aborted. */
  cancel(invocationId: string, reason: string | undefined): void {
    this.running.get(invocationId)?.abort(new InvocationError('cancelled', reason ?? 'Cancelled by the engine'));
  }

  /** The socket is gone: every running handler's signal is aborted, and its answer dropped. */
  abortAll(): void {
    for (const r of this.running.values()) r.abort(new InvocationError('connection_lost', 'Connection to the engine lost'));
  }

  /** Resolves when no handler is running (at once if none is). */
  whenIdle(): Promise<void> {
    return this.active === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private reply(invocationId: string, functionId: string, result: unknown, error: ErrorBody | undefined): void {
    let text: string;
    try {
      text = resultFrameText(invocationId, functionId, result, error);
    } catch (e) {
      // A result JSON cannot encode (a BigInt, a cycle) is the handler's failure, not the caller's
      // payload: invocation_failed naming the function, as the Python SDK answers it.
      this.conn.sendText(resultFrameText(invocationId, functionId, undefined, { code: 'invocation_failed', message: `Result of ${functionId} is not JSON-serializable: ${whyNotSerializable(e)}` }));
      return;
    }
    // The caller learns why instead of waiting for its deadline; a result too large is told apart
    // from a call too large (svc-http answers them 502 and 413).
    const tooLarge = this.conn.oversize(text, 'invocationresult', functionId);
    if (tooLarge !== null) text = resultFrameText(invocationId, functionId, undefined, { code: 'result_too_large', message: tooLarge.message });
    this.conn.sendText(text);
  }
}
