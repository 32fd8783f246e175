import { EventEmitter } from 'node:events';
import { hostname, platform } from 'node:os';
import { Caller } from './caller.js';
import { ChannelReader, ChannelWriter, type ChannelRef } from './channels.js';
import { Connection, DEFAULT_RECONNECT } from './connection.js';
import type { InvocationScope } from './context.js';
import { describeValue, InvocationError, toErrorBody } from './errors.js';
import { reportIntervalFromEnv, workerNamespace } from './worker-env.js';
import { Invoker } from './invoker.js';
import { LogBatcher } from './log-batcher.js';
import { ProcessReporter } from './process-reporter.js';
import { ReadyFile, readyFilePath } from './ready-file.js';
import { Logger, setDefaultLogSink, type LogSink } from './logger.js';
import { loadSpanTracer, otelEnabled, type SpanTracer } from './otel-export.js';
import { DEFAULT_ENGINE_URL, DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_MAX_FRAME_BYTES, DEFAULT_PROCESS_REPORT_MS, FEATURES, PROTOCOL_VERSION, REGISTER_WORKER_FUNCTION, RUN_SECRET_HEADER } from './protocol/constants.js';
import type { LogLevel } from './protocol/log-rows.js';
import type { HelloMsg, Message, WorkerRegisteredMsg } from './protocol/messages.js';
import { redactAddress } from './redact.js';
import { engineGone, RUN_SECRET_ENV, watchEngineLiveness } from './supervised.js';
import { TriggerRegistry } from './trigger-registry.js';
import type { WorkerEvent, WorkerEventMap, WorkerState } from './worker-events.js';
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
 * (`trigger()`), Invoker (the functions it serves), TriggerRegistry, LogBatcher (Logger lines).
 * Its lifecycle is one `state` (WorkerState); its events are typed (WorkerEventMap, worker-events.ts).
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
  private current: WorkerState = 'disconnected';
  private registered: WorkerRegisteredMsg | null = null;
  private granted = new Set<string>();
  private engineInfo: HelloMsg['engine'] | undefined;
  /** Why the engine last refused this worker, until the next accepted connection. */
  private lastRefusal: InvocationError | null = null;
  /** The refusal that closed this worker for good (`stale_worker`). */
  private closedBy: InvocationError | null = null;
  /** The message of the engine's `error` frame that precedes its refusal's close. */
  private refusalMessage: string | undefined;
  /** A channel socket presents the worker's token (no run secret: a channel is not a worker). */
  private readonly channelHeaders: Record<string, string>;
  private waiters: Array<{ connected(): void; failed(e: InvocationError): void }> = [];
  private stopping: Promise<void> | undefined;
  /** Ends shutdown()'s wait for running handlers early: the socket is gone. */
  private endDrain: (() => void) | undefined;
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
    const handler = {
      onConnecting: () => {
        if (this.current === 'disconnected') this.setState('connecting');
      },
      onOpen: () => this.onOpen(),
      onMessage: (m: Message) => this.onMessage(m),
      onDown: (code: number, reason: string) => this.onDown(code, reason),
      onRefused: (code: 'unauthorized' | 'stale_worker', reason: string, final: boolean) => this.onRefused(code, reason, final),
      onFatal: (e: Error) => this.onFatal(e),
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
    const worker = this;
    this.caller = new Caller(this.conn, {
      get state() {
        return worker.current;
      },
      ready: (ms) => this.ready(ms),
      get defaultTimeoutMs() {
        return worker.defaultTimeoutMs;
      },
      invocationTimeoutMs: options.invocationTimeoutMs,
      namespace: this.namespace,
      get canCancel() {
        return worker.granted.has('cancel');
      },
      get closedBy() {
        return worker.closedBy;
      },
    });
    this.invoker = new Invoker<Worker>(this.conn, {
      workerName: this.workerName,
      logger: this.logger,
      worker: this,
      implicitContext: options.implicitContext !== false,
      accepting: () => this.current !== 'draining' && this.current !== 'closed',
    });
    this.triggers = new TriggerRegistry(this.conn, {
      workerName: this.workerName,
      untilConnected: () => (this.current === 'connected' ? Promise.resolve() : this.ready(2 ** 31 - 1)),
      get ackTimeoutMs() {
        return worker.defaultTimeoutMs;
      },
      report: (e) => this.report(e),
    });
    this.logs = new LogBatcher(this.conn, () => this.current === 'connected' || this.current === 'draining');
    const reportMs = options.processReportIntervalMs ?? reportIntervalFromEnv() ?? DEFAULT_PROCESS_REPORT_MS;
    if (this.opts.role === 'worker' && reportMs > 0) this.reporter = new ProcessReporter(this.conn, () => this.current === 'connected' || this.current === 'draining', reportMs);
    if (this.opts.role === 'worker') {
      watchEngineLiveness();
      setDefaultLogSink(this);
      const path = readyFilePath(options.readyFile);
      // Reported on the next tick: the file is first written now, before the program can listen for `error`.
      if (path !== undefined) new ReadyFile(path, this.workerName, (e) => process.nextTick(() => this.report(e))).follow(this, () => this.closedBy !== null);
    }
  }

  start(): void {
    this.reporter?.start();
    if (!otelEnabled(this.opts.otel)) return this.conn.start();
    // Export on: the packages load before connecting, so every call has its spans (or the error is told).
    const loaded = (t: SpanTracer): unknown => (this.invoker.tracer = this.caller.tracer = this.tracer = t);
    void loadSpanTracer(this.workerName).then(loaded, (e: Error) => this.report(e)).finally(() => this.stopping ?? this.conn.start());
  }

  /** The engine address in use (of those given, the one connected to or being tried). */
  get url(): string {
    return this.conn.url;
  }
  /** Where the worker is in its lifecycle (worker-events.ts). `connected` only once the engine accepted it. */
  get state(): WorkerState {
    return this.current;
  }
  /** Why the engine last refused this worker (a token problem), until the next accepted connection. */
  get refusal(): InvocationError | null {
    return this.lastRefusal;
  }
  /** The id the engine gave the current connection. */
  get workerId(): string | undefined {
    return this.registered?.worker_id;
  }
  get engine(): HelloMsg['engine'] | undefined {
    return this.engineInfo;
  }

  /**
   * The deadline of a call that sets none: the `invocationTimeoutMs` option, else the engine's
   * `engine.invocation_timeout_ms` as its `hello` answer advertised it (30 s until that arrives).
   */
  get defaultTimeoutMs(): number {
    return this.opts.invocationTimeoutMs ?? this.engineInfo?.invocation_timeout_ms ?? DEFAULT_INVOCATION_TIMEOUT_MS;
  }

  /**
   * Resolves when connected (now, or at the next successful connect). Rejects at once when the
   * engine refused the last connection attempt (`unauthorized`, `stale_worker`) or refuses the next
   * one, or the worker is shut down (`shutting_down`); else with `connection_lost` after `timeoutMs`.
   */
  ready(timeoutMs = this.defaultTimeoutMs): Promise<void> {
    const s = this.current;
    if (s === 'connected' || (s === 'draining' && this.conn.open)) return Promise.resolve();
    if (s === 'closed' || s === 'draining') return Promise.reject(this.closedError());
    // The last attempt was refused: waiting for the next one (at the backoff's cap) is pointless.
    if (this.lastRefusal) return Promise.reject(this.lastRefusal);
    return new Promise((resolve, reject) => {
      const waiter = {
        connected: (): void => {
          clearTimeout(t);
          resolve();
        },
        failed: (e: InvocationError): void => {
          clearTimeout(t);
          reject(e);
        },
      };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(this.lastRefusal ?? new InvocationError('connection_lost', `Could not connect to the engine at ${redactAddress(this.url)} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
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
    this.stopping ??= this.stop(graceMs);
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

  private async stop(graceMs: number): Promise<void> {
    if (this.current === 'connected') {
      this.setState('draining');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.invoker.whenIdle(),
        new Promise<void>((resolve) => {
          this.endDrain = resolve;
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
      this.endDrain = undefined;
    }
    this.logs.flush();
    this.close(null);
    this.caller.failAll('shutting_down', () => 'Worker is shutting down');
    this.triggers.failAcks();
    await this.conn.close(1000);
    await this.tracer?.shutdown().catch(() => undefined);
    this.lost(1000, 'shutdown');
  }

  private setState(next: WorkerState): void {
    const previous = this.current;
    if (previous === next) return;
    this.current = next;
    this.emit('state', next, previous);
    this.tell({ type: 'state', state: next, previous });
  }

  /** Enter `closed`: ready() waiters fail with `refusal`, else `shutting_down`. */
  private close(refusal: InvocationError | null): void {
    this.reporter?.stop();
    this.closedBy = refusal;
    this.setState('closed');
    const err = this.closedError();
    for (const w of this.waiters.splice(0)) w.failed(err);
  }

  private closedError(): InvocationError {
    return this.closedBy ?? new InvocationError('shutting_down', 'Worker is shut down');
  }

  private onOpen(): void {
    const previous = this.registered;
    this.conn.send({ type: 'hello', protocol: PROTOCOL_VERSION, features: [...FEATURES], role: this.opts.role });
    if (previous) {
      this.conn.send({ type: 'reattach', previous_worker_id: previous.worker_id, ...(previous.reattach_token ? { reattach_token: previous.reattach_token } : {}) });
    }
    this.conn.send({
      type: 'invokefunction',
      function_id: REGISTER_WORKER_FUNCTION,
      action: { type: 'void' },
      data: {
        name: this.workerName,
        runtime: 'node',
        version: SDK_VERSION,
        sdk: 'svc-sdk',
        os: platform(),
        pid: process.pid,
        ...this.opts.metadata,
        ...(this.namespace !== undefined ? { namespace: this.namespace } : {}),
      },
    });
    this.triggers.replayTypes();
    this.invoker.replay();
    this.triggers.replayBindings();
  }

  private onMessage(m: Message): void {
    switch (m.type) {
      case 'invokefunction':
        this.invoker.invoke(m);
        return;
      case 'invocationresult':
        this.caller.onResult(m);
        return;
      case 'workerregistered':
        this.registered = m;
        this.lastRefusal = null;
        if (this.current === 'connecting' || this.current === 'disconnected') this.setState('connected');
        for (const w of this.waiters.splice(0)) w.connected();
        this.reporter?.send();
        this.tell({ type: 'connected', url: this.url, workerId: m.worker_id });
        return;
      case 'hello':
        this.granted = new Set(m.features);
        this.engineInfo = m.engine;
        if (!this.granted.has('ack')) this.triggers.settleWithoutAck();
        return;
      case 'triggerregistrationresult':
        this.triggers.onResult(m);
        return;
      case 'registertrigger':
        void this.triggers.provide(m);
        return;
      case 'unregistertrigger':
        void this.triggers.dropProvided(m.id);
        return;
      case 'cancel':
        this.invoker.cancel(m.invocation_id, m.reason);
        return;
      case 'ping':
        this.conn.send({ type: 'pong' });
        return;
      case 'registrationrejected':
        // Only with engine.namespace_conflicts: exclusive (iii 0.23's rules); for a worker name the engine closes the connection itself.
        this.report(
          new InvocationError(m.code, `The engine rejected ${m.function_id !== undefined ? `function ${m.function_id}` : `worker name ${m.worker_name ?? ''}`} in namespace ${m.namespace}: held by worker ${m.owner_worker_id}`),
        );
        return;
      case 'error':
        // `unauthorized` and `stale_worker` are followed by a close (4401, 4410), reported once from there.
        if (m.error.code === 'stale_worker' || m.error.code === 'unauthorized') this.refusalMessage = m.error.message;
        else this.report(InvocationError.from(m.error));
        return;
      default:
        return;
    }
  }

  private onDown(code: number, reason: string): void {
    if (this.current === 'connected' || this.current === 'connecting') this.setState('disconnected');
    this.endDrain?.();
    this.lost(code, reason);
  }

  /** The socket is gone: what depended on it fails now, not at its deadline. */
  private lost(code: number, reason: string): void {
    // Calls in flight are lost with the socket (the engine halts them).
    this.caller.failAll('connection_lost', (fid) => `Connection to the engine lost while calling ${fid}`);
    this.invoker.abortAll();
    // Bindings we served as a provider are parked by the engine and re-delivered on reconnect.
    this.triggers.dropAllProvided();
    this.granted.clear();
    this.tell({ type: 'disconnected', url: this.url, code, reason });
  }

  private onRefused(code: 'unauthorized' | 'stale_worker', reason: string, final: boolean): void {
    const why = this.refusalMessage ?? reason.replace(/^(unauthorized|stale_worker): /, '');
    this.refusalMessage = undefined;
    const shown = redactAddress(this.url);
    const err =
      code === 'unauthorized'
        ? new InvocationError('unauthorized', `The engine at ${shown} refused this connection: ${why}`)
        : new InvocationError('stale_worker', `The engine at ${shown} refused this worker: ${why}`);
    this.lastRefusal = err;
    if (final) this.close(err);
    else for (const w of this.waiters.splice(0)) w.failed(err);
    this.tell({ type: 'refused', url: this.url, error: err, final });
    this.report(err);
    // Started by an engine run that is gone (supervised.ts): the process exits.
    if (final && this.opts.runSecret === undefined && process.env[RUN_SECRET_ENV]) engineGone(`the engine at ${shown} is not the engine run that started this worker`);
  }

  private onFatal(e: Error): void {
    const err = new InvocationError('invalid_argument', `Cannot connect to the engine at ${describeValue(redactAddress(this.url))}: ${e.message}`);
    this.close(err);
    this.report(err);
  }

  /** Emit `e` under its own name (but `error`, which report() emits) and under `event`. */
  private tell(e: WorkerEvent): void {
    if (e.type === 'connected') this.emit('connected', e);
    else if (e.type === 'disconnected') this.emit('disconnected', e);
    else if (e.type === 'refused') this.emit('refused', e);
    this.emit('event', e);
  }

  private report(err: Error): void {
    const e = err instanceof InvocationError ? err : InvocationError.from(toErrorBody(err));
    this.tell({ type: 'error', error: e });
    if (this.listenerCount('error') > 0) this.emit('error', e);
    else process.stderr.write(`svc-sdk [${this.workerName}]: ${e.message}\n`);
  }
}
