import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { Caller } from './caller.js';
import { ChannelReader, ChannelWriter, type ChannelRef } from './channels.js';
import { Connection, DEFAULT_RECONNECT } from './connection.js';
import type { InvocationScope } from './context.js';
import type { InvocationError } from './errors.js';
import { reportIntervalFromEnv, workerNamespace } from './worker-env.js';
import { Invoker } from './invoker.js';
import { LogBatcher } from './log-batcher.js';
import { ProcessReporter } from './process-reporter.js';
import { ReadyFile, readyFilePath } from './ready-file.js';
import { Logger, setDefaultLogSink, type LogSink } from './logger.js';
import { loadSpanTracer, otelEnabled, type SpanTracer } from './otel-export.js';
import { DEFAULT_ENGINE_URL, DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_MAX_FRAME_BYTES, DEFAULT_PROCESS_REPORT_MS, RUN_SECRET_HEADER } from './protocol/constants.js';
import type { LogLevel } from './protocol/log-rows.js';
import type { HelloMsg, Message } from './protocol/messages.js';
import { RUN_SECRET_ENV, watchEngineLiveness } from './supervised.js';
import { TriggerRegistry } from './trigger-registry.js';
import type { WorkerEventMap, WorkerState } from './worker-events.js';
import { WorkerLifecycle } from './worker-lifecycle.js';
import { WorkerSession } from './worker-session.js';
import type { CallRequest, EnqueueResult, FunctionOptions, TriggerInput, TriggerTypeDefinition, TriggerTypeHandler, WorkerOptions } from './worker-types.js';

export const SDK_VERSION = '0.1.0';

/** What a handler gets besides its input: the call it serves. */
export interface InvocationContext {
  invocationId: string;
  functionId: string;
  metadata: unknown;
  traceparent?: string;
  baggage?: string;
  /** Aborted when the engine cancels the call (deadline passed, caller gone). */
  signal: AbortSignal;
  logger: Logger;
  worker: Worker;
}

// `any` for the input on purpose: handlers declare the shape they expect, as in `(data: {a: number}) => …`.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type FunctionHandler = (data: any, ctx: InvocationContext) => unknown;

/**
 * Create a worker and start connecting in the background. `url` may list several engines of one
 * cluster (an array, or comma-separated as in SVC_URL): the worker moves to the next one whenever
 * its engine closes or cannot be reached.
 */
export function registerWorker(url: string | readonly string[] = process.env.SVC_URL ?? DEFAULT_ENGINE_URL, options: WorkerOptions = {}): Worker {
  const w = new Worker(url, options);
  w.start();
  return w;
}

/**
 * A connection to the engine that holds this process's functions, trigger types and triggers, and
 * replays them on every reconnect. Its parts: Connection (the socket, reconnecting), Caller
 * (`trigger()`), Invoker (the functions it serves), TriggerRegistry, LogBatcher (Logger lines),
 * WorkerSession (the frames to and from the engine, loss, shutdown). Its lifecycle is one `state`
 * (WorkerState, kept by WorkerLifecycle); its events are typed (WorkerEventMap, worker-events.ts).
 */
export class Worker extends EventEmitter<WorkerEventMap> implements LogSink {
  readonly workerName: string;
  /** WorkerOptions.namespace, or env SVC_NAMESPACE; undefined: `default`. */
  readonly namespace: string | undefined;
  readonly logger: Logger;
  private readonly conn: Connection;
  private readonly caller: Caller;
  private readonly invoker: Invoker<Worker>;
  private readonly triggers: TriggerRegistry;
  private readonly logs: LogBatcher;
  /** Off for clients and with processReportIntervalMs: 0. */
  private readonly reporter: ProcessReporter | undefined;
  private readonly opts: WorkerOptions & { maxFrameBytes: number; role: 'worker' | 'client' };
  /** State, ready() waiters, refusals, events (worker-lifecycle.ts). */
  private readonly life: WorkerLifecycle;
  /** The frames to and from the engine, loss and shutdown (worker-session.ts). */
  private readonly session: WorkerSession;
  /** A channel socket presents the worker's token (no run secret: a channel is not a worker). */
  private readonly channelHeaders: Record<string, string>;
  private stopping: Promise<void> | undefined;
  private tracer: SpanTracer | undefined;

  constructor(url: string | readonly string[], options: WorkerOptions = {}) {
    super();
    this.opts = { maxFrameBytes: DEFAULT_MAX_FRAME_BYTES, role: 'worker', ...options };
    this.workerName = options.workerName ?? process.env.SVC_WORKER_NAME ?? `${hostname()}:${process.pid}`;
    this.namespace = workerNamespace(options.namespace);
    const token = options.token ?? process.env.SVC_TOKEN;
    const runSecret = options.runSecret ?? process.env[RUN_SECRET_ENV];
    this.channelHeaders = token ? { authorization: `Bearer ${token}` } : {};
    const headers = (): Record<string, string> => {
      const h: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      const secret = typeof runSecret === 'function' ? runSecret() : runSecret;
      if (secret) h[RUN_SECRET_HEADER] = secret;
      return h;
    };
    // The session is made last, from the parts; the connection calls it only once started.
    const handler = {
      onConnecting: () => this.session.onConnecting(),
      onOpen: () => this.session.onOpen(),
      onMessage: (m: Message) => this.session.onMessage(m),
      onDown: (code: number, reason: string) => this.session.onDown(code, reason),
      onRefused: (code: 'unauthorized' | 'stale_worker', reason: string, final: boolean) => this.session.onRefused(code, reason, final),
      onFatal: (e: Error) => this.session.onFatal(e),
      onUnreachable: (url: string, why: string) => this.session.onUnreachable(url, why),
    };
    this.conn = new Connection(
      url,
      {
        reconnect: { ...DEFAULT_RECONNECT, ...options.reconnect },
        maxFrameBytes: this.opts.maxFrameBytes,
        pingIntervalMs: options.pingIntervalMs ?? 20_000,
        ...(token || runSecret ? { headers: typeof runSecret === 'function' ? headers : headers() } : {}),
        staleIsFinal: typeof runSecret !== 'function',
      },
      handler,
    );
    this.logger = new Logger(this, { echo: options.echoLogs !== false });
    const life = (this.life = new WorkerLifecycle(this, this.workerName, () => this.conn.url, () => this.reporter?.stop()));
    const worker = this;
    this.caller = new Caller(this.conn, {
      get state() {
        return life.state;
      },
      ready: (ms) => this.ready(ms),
      get defaultTimeoutMs() {
        return worker.defaultTimeoutMs;
      },
      invocationTimeoutMs: options.invocationTimeoutMs,
      namespace: this.namespace,
      get canCancel() {
        return worker.session.granted.has('cancel');
      },
      get closedBy() {
        return life.closedBy;
      },
    });
    this.invoker = new Invoker<Worker>(this.conn, {
      workerName: this.workerName,
      logger: this.logger,
      worker: this,
      implicitContext: options.implicitContext !== false,
      accepting: () => life.state !== 'draining' && life.state !== 'closed',
    });
    this.triggers = new TriggerRegistry(this.conn, {
      workerName: this.workerName,
      untilConnected: () => (life.state === 'connected' ? Promise.resolve() : this.ready(2 ** 31 - 1)),
      get ackTimeoutMs() {
        return worker.defaultTimeoutMs;
      },
      report: (e) => life.report(e),
    });
    this.logs = new LogBatcher(this.conn, () => life.state === 'connected' || life.state === 'draining');
    const reportMs = options.processReportIntervalMs ?? reportIntervalFromEnv() ?? DEFAULT_PROCESS_REPORT_MS;
    if (this.opts.role === 'worker' && reportMs > 0) this.reporter = new ProcessReporter(this.conn, () => life.state === 'connected' || life.state === 'draining', reportMs);
    const parts = { conn: this.conn, life, caller: this.caller, invoker: this.invoker, triggers: this.triggers, logs: this.logs, reporter: this.reporter, tracer: () => this.tracer };
    this.session = new WorkerSession(parts, this.opts, { workerName: this.workerName, namespace: this.namespace, version: SDK_VERSION });
    if (this.opts.role === 'worker') {
      watchEngineLiveness();
      setDefaultLogSink(this);
      const path = readyFilePath(options.readyFile);
      // Reported on the next tick: the file is first written now, before the program can listen for `error`.
      if (path !== undefined) new ReadyFile(path, this.workerName, (e) => process.nextTick(() => life.report(e))).follow(this, () => life.closedBy !== null);
    }
  }

  start(): void {
    this.reporter?.start();
    if (!otelEnabled(this.opts.otel)) return this.conn.start();
    // Export on: the packages load before connecting, so every call has its spans (or the error is told).
    const loaded = (t: SpanTracer): unknown => (this.invoker.tracer = this.caller.tracer = this.tracer = t);
    void loadSpanTracer(this.workerName).then(loaded, (e: Error) => this.life.report(e)).finally(() => this.stopping ?? this.conn.start());
  }

  /** The engine address in use (of those given, the one connected to or being tried). */
  get url(): string {
    return this.conn.url;
  }
  /** Where the worker is in its lifecycle (worker-events.ts). `connected` only once the engine accepted it. */
  get state(): WorkerState {
    return this.life.state;
  }
  /** Why the engine last refused this worker (a token problem), until the next accepted connection. */
  get refusal(): InvocationError | null {
    return this.life.lastRefusal;
  }
  /** The id the engine gave the current connection. */
  get workerId(): string | undefined {
    return this.session.registered?.worker_id;
  }
  get engine(): HelloMsg['engine'] | undefined {
    return this.session.engineInfo;
  }

  /**
   * The deadline of a call that sets none: the `invocationTimeoutMs` option, else the engine's
   * `engine.invocation_timeout_ms` as its `hello` answer advertised it (30 s until that arrives).
   */
  get defaultTimeoutMs(): number {
    return this.opts.invocationTimeoutMs ?? this.session.engineInfo?.invocation_timeout_ms ?? DEFAULT_INVOCATION_TIMEOUT_MS;
  }

  /**
   * Resolves when connected (now, or at the next successful connect). Rejects at once when the
   * engine refused the last connection attempt (`unauthorized`, `stale_worker`) or refuses the next
   * one, or the worker is shut down (`shutting_down`); else with `connection_lost` after `timeoutMs`.
   */
  ready(timeoutMs = this.defaultTimeoutMs): Promise<void> {
    return this.life.ready(timeoutMs, this.conn.open);
  }

  // ---- registration and calls: delegated to their parts ----------------------------------------

  /** Serve `id` with `handler(data, ctx)`. Throws `invalid_function_id`, `invalid_argument` or `duplicate_function`. */
  registerFunction(id: string, handler: FunctionHandler, options: FunctionOptions = {}): { id: string; unregister(): void } {
    return this.invoker.register(id, handler, options);
  }

  /** Provide a trigger type: `handler.registerTrigger(binding)` / `unregisterTrigger(binding)` for every binding of it. */
  async registerTriggerType(def: TriggerTypeDefinition, handler: TriggerTypeHandler): Promise<{ id: string; unregister(): void }> {
    return this.triggers.registerType(def, handler);
  }

  /**
   * Bind `function_id` to an event source. Resolves once the trigger type's provider accepted the
   * binding (or the engine parked it until a provider appears); rejects with the provider's error.
   */
  registerTrigger(input: TriggerInput): Promise<{ id: string; unregister(): void }> {
    return this.triggers.register(input);
  }

  /**
   * Call a function by id anywhere in the system. Rejects with InvocationError (`code`, `message`).
   * With `action: TriggerAction.Enqueue({queue})` it answers {messageReceiptId} once the job is durable.
   */
  trigger(req: CallRequest & { action: { type: 'enqueue'; queue: string } }): Promise<EnqueueResult>;
  trigger<T = unknown>(req: CallRequest): Promise<T>;
  trigger<T = unknown>(req: CallRequest): Promise<T> {
    return this.caller.call<T>(req);
  }

  /** A new channel (`engine::channels::create`): its two refs, to open here or pass on in a payload. */
  createChannel(options: { bufferSize?: number } = {}): Promise<{ writer: ChannelRef; reader: ChannelRef }> {
    return this.trigger({ function_id: 'engine::channels::create', payload: options.bufferSize === undefined ? {} : { buffer_size: options.bufferSize } });
  }

  /** Open the read side of a channel from its ref (a Node Readable). */
  openReader(ref: ChannelRef): ChannelReader {
    return new ChannelReader(ref, { url: this.url, headers: this.channelHeaders });
  }

  /** Open the write side of a channel from its ref (a Node Writable). */
  openWriter(ref: ChannelRef): ChannelWriter {
    return new ChannelWriter(ref, { url: this.url, headers: this.channelHeaders });
  }

  // ---- LogSink -------------------------------------------------------------------------------------

  /** The LogSink form for code holding a worker: `scope` as plain fields. */
  log(level: LogLevel, message: string, data: unknown, scope: { function_id?: string; invocation_id?: string; traceparent?: string }): void {
    const inCall = scope.function_id !== undefined || scope.invocation_id !== undefined || scope.traceparent !== undefined;
    this.logs.add(level, message, data, inCall ? { functionId: scope.function_id ?? '', invocationId: scope.invocation_id ?? '', traceparent: scope.traceparent } : undefined);
    this.tracer?.log(level, message, data, scope.function_id, scope.traceparent);
  }

  /** What Logger calls: the invocation scope as the SDK keeps it (the running call), nothing copied. */
  logScoped(level: LogLevel, message: string, data: unknown, scope: InvocationScope | undefined): void {
    this.logs.add(level, message, data, scope);
    this.tracer?.log(level, message, data, scope?.functionId, scope?.traceparent);
  }

  // ---- lifecycle -------------------------------------------------------------------------------------

  /**
   * Stop: refuse new incoming calls (`draining`), let handlers already running finish and answer
   * (up to `graceMs`; their nested calls still work), then close, failing what this worker still
   * awaits with `shutting_down`. Resolves once closed; every call returns the same promise.
   */
  shutdown(graceMs = 5000): Promise<void> {
    this.stopping ??= this.session.stop(graceMs);
    return this.stopping;
  }

  /**
   * Adds fields to this worker's process reports (engine::workers::report): `source` is asked at
   * each report. The engine knows `state` and `queues` (svc-state's and svc-queue's counters,
   * docs/observability.md); it ignores other fields. No effect with processReportIntervalMs: 0.
   */
  reportAlso(source: () => Record<string, unknown> | Promise<Record<string, unknown>>): void {
    if (this.reporter) this.reporter.extra = source;
  }

  /** Test hook: drop the socket as a network failure would. */
  simulateDisconnect(): void {
    this.conn.drop();
  }
}
