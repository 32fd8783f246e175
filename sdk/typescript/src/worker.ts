import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { hostname, platform } from 'node:os';
import { ChurnMap } from './churn-map.js';
import { Connection, DEFAULT_RECONNECT, type ConnectionState } from './connection.js';
import { invocationScope, type InvocationScope } from './context.js';
import { InvocationError, toErrorBody } from './errors.js';
import { Logger, setDefaultLogSink, type LogLevel, type LogSink } from './logger.js';
import type {
  CallRequest,
  EnqueueResult,
  FunctionHandler,
  FunctionOptions,
  InvocationContext,
  TriggerBinding,
  TriggerInput,
  TriggerTypeDefinition,
  TriggerTypeHandler,
  WorkerOptions,
} from './worker-types.js';
import {
  DEFAULT_ENGINE_URL,
  DEFAULT_INVOCATION_TIMEOUT_MS,
  DEFAULT_MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  traceIdOfTraceparent,
  type ErrorBody,
  type HelloMsg,
  type InvocationResultMsg,
  type InvokeFunctionMsg,
  type Message,
  type RegisterFunctionMsg,
  type RegisterTriggerMsg,
  type RegisterTriggerTypeMsg,
  type TriggerRegistrationResultMsg,
  type WorkerRegisteredMsg,
} from './protocol.js';
import { exceedsBytes } from './transport.js';

export const SDK_VERSION = '0.1.0';

interface PendingCall {
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
  functionId: string;
}

interface PendingAck {
  resolve(): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * One incoming call being served: the handler's `ctx` and the async-local scope in one object.
 * Its AbortController is made only when the handler reads `signal`, since most never do and one
 * per call was a measurable share of a worker's CPU (bench/RESULTS.md).
 */
class RunningCall implements InvocationContext {
  private controller: AbortController | undefined;
  private reason: unknown;
  aborted = false;

  constructor(
    readonly invocationId: string,
    readonly functionId: string,
    readonly metadata: unknown,
    readonly traceparent: string | undefined,
    readonly baggage: string | undefined,
    readonly logger: Logger,
    readonly worker: Worker,
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
 * replays them on every reconnect. Events: `state` (ConnectionState), `connected`, `disconnected`,
 * `error` (asynchronous problems such as a trigger refused on replay; logged when nobody listens).
 */
export class Worker extends EventEmitter implements LogSink {
  readonly workerName: string;
  private readonly conn: Connection;
  private readonly opts: Required<Pick<WorkerOptions, 'invocationTimeoutMs' | 'maxFrameBytes' | 'role'>> & WorkerOptions;
  private readonly functions = new Map<string, { handler: FunctionHandler; msg: RegisterFunctionMsg }>();
  private readonly triggerTypes = new Map<string, { handler: TriggerTypeHandler; msg: RegisterTriggerTypeMsg }>();
  private readonly triggers = new Map<string, RegisterTriggerMsg>();
  /** Bindings the engine delivered to us as a trigger-type provider, by binding id. */
  private readonly providedBindings = new Map<string, TriggerBinding>();
  private readonly calls = new ChurnMap<string, PendingCall>();
  private readonly acks = new Map<string, PendingAck>();
  private readonly running = new ChurnMap<string, RunningCall>();
  private registered: WorkerRegisteredMsg | null = null;
  private granted = new Set<string>();
  private engineInfo: HelloMsg['engine'] | undefined;
  /** The engine accepted this connection (`workerregistered` arrived); a socket merely open is not enough. */
  private live = false;
  private connectedWaiters: Array<() => void> = [];
  private refusalWaiters: Array<(e: InvocationError) => void> = [];
  private lastRefusal: InvocationError | null = null;
  private shuttingDown = false;
  /** shutdown() began: incoming calls are refused, running ones may finish. */
  private draining = false;
  readonly logger: Logger;

  constructor(url: string | readonly string[], options: WorkerOptions = {}) {
    super();
    this.opts = {
      invocationTimeoutMs: DEFAULT_INVOCATION_TIMEOUT_MS,
      maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
      role: 'worker',
      ...options,
    };
    this.workerName = options.workerName ?? process.env.SVC_WORKER_NAME ?? `${hostname()}:${process.pid}`;
    const token = options.token ?? process.env.SVC_TOKEN;
    this.conn = new Connection(url, {
      reconnect: { ...DEFAULT_RECONNECT, ...options.reconnect },
      maxFrameBytes: this.opts.maxFrameBytes,
      pingIntervalMs: options.pingIntervalMs ?? 20_000,
      ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    });
    this.logger = new Logger(this, { echo: options.echoLogs !== false });
    if (this.opts.role === 'worker') setDefaultLogSink(this);
    this.conn.on('open', () => this.onOpen());
    this.conn.on('message', (m: Message) => this.onMessage(m));
    this.conn.on('down', () => this.onDown());
    // 'connected' is emitted when the engine accepts us (workerregistered), not when the socket opens.
    this.conn.on('state', (s: ConnectionState) => {
      if (s !== 'connected') this.emit('state', s);
    });
    this.conn.on('fatal', (e: Error) => this.report(e));
    this.conn.on('unauthorized', (reason: string) => {
      const err = new InvocationError('unauthorized', `The engine at ${this.url} refused this connection: ${reason.replace(/^unauthorized: /, '')}`);
      this.lastRefusal = err;
      const waiters = this.refusalWaiters;
      this.refusalWaiters = [];
      for (const w of waiters) w(err);
      this.report(err);
    });
    this.conn.on('socket-error', () => {
      /* close follows and drives reconnect */
    });
  }

  start(): void {
    this.conn.start();
  }

  /** The engine address in use (of those given, the one connected to or being tried). */
  get url(): string {
    return this.conn.url;
  }

  /** `connected` only once the engine accepted the connection (a refused token never gets there). */
  get state(): ConnectionState {
    const s = this.conn.state;
    return s === 'connected' && !this.live ? 'connecting' : s;
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

  /** Resolves when connected (now, or at the next successful connect); rejects after `timeoutMs`. */
  ready(timeoutMs = this.opts.invocationTimeoutMs): Promise<void> {
    if (this.live) return Promise.resolve();
    if (this.shuttingDown) return Promise.reject(new InvocationError('shutting_down', 'Worker is shut down'));
    return new Promise((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(t);
        this.connectedWaiters = this.connectedWaiters.filter((f) => f !== done);
        this.refusalWaiters = this.refusalWaiters.filter((f) => f !== refused);
      };
      const done = (): void => {
        cleanup();
        resolve();
      };
      // A refused token fails the wait at once with the engine's reason, not after the timeout.
      const refused = (e: InvocationError): void => {
        cleanup();
        reject(e);
      };
      const t = setTimeout(() => {
        cleanup();
        reject(this.lastRefusal ?? new InvocationError('connection_lost', `Could not connect to the engine at ${this.url} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.connectedWaiters.push(done);
      this.refusalWaiters.push(refused);
    });
  }

  // ---- registration ------------------------------------------------------------------------------

  registerFunction(id: string, handler: FunctionHandler, options: FunctionOptions = {}): { id: string; unregister(): void } {
    if (typeof id !== 'string' || id.length === 0) throw new InvocationError('invalid_function_id', 'Function id must be a non-empty string');
    if (typeof handler !== 'function') throw new InvocationError('invalid_handler', `Handler for ${id} must be a function`);
    if (this.functions.has(id)) throw new InvocationError('duplicate_function', `Function ${id} is already registered by this worker`);
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

  async registerTriggerType(def: TriggerTypeDefinition, handler: TriggerTypeHandler): Promise<{ id: string; unregister(): void }> {
    const msg: RegisterTriggerTypeMsg = { type: 'registertriggertype', ...def };
    this.triggerTypes.set(def.id, { handler, msg });
    this.conn.send(msg);
    return {
      id: def.id,
      unregister: () => {
        if (!this.triggerTypes.has(def.id)) return;
        this.conn.send({ type: 'unregistertriggertype', id: def.id });
        for (const b of [...this.providedBindings.values()]) {
          if (b.trigger_type === def.id) void this.dropProvided(b.id);
        }
        this.triggerTypes.delete(def.id);
      },
    };
  }

  /**
   * Bind `function_id` to an event source. Resolves once the trigger type's provider accepted the
   * binding (or the engine parked it until a provider appears); rejects with the provider's error.
   */
  async registerTrigger(input: TriggerInput): Promise<{ id: string; unregister(): void }> {
    const id = randomUUID();
    const msg: RegisterTriggerMsg = {
      type: 'registertrigger',
      id,
      trigger_type: input.type,
      function_id: input.function_id,
      config: input.config ?? {},
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
    };
    // A worker may register before the engine is up: wait for the connection as long as it takes
    // (the SDK reconnects forever); the deadline below is for the provider's answer only.
    if (!this.live) await this.ready(2 ** 31 - 1);
    this.triggers.set(id, msg);
    const acked = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.acks.delete(id);
        reject(new InvocationError('timeout', `No answer to trigger registration ${input.type} → ${input.function_id} within ${this.opts.invocationTimeoutMs} ms`));
      }, this.opts.invocationTimeoutMs);
      this.acks.set(id, { resolve, reject, timer });
    });
    // Sent now; if the socket just dropped, the replay on reconnect sends it.
    this.conn.send(msg);
    try {
      await acked;
    } catch (e) {
      this.triggers.delete(id);
      throw e;
    }
    return {
      id,
      unregister: () => {
        if (this.triggers.delete(id)) this.conn.send({ type: 'unregistertrigger', id, trigger_type: input.type });
      },
    };
  }

  // ---- calls ---------------------------------------------------------------------------------------

  /**
   * Call a function by id anywhere in the system. Rejects with InvocationError (`code`, `message`).
   * With `action: TriggerAction.Enqueue({queue})` it answers {messageReceiptId} once the job is durable.
   */
  trigger(req: CallRequest & { action: { type: 'enqueue'; queue: string } }): Promise<EnqueueResult>;
  trigger<T = unknown>(req: CallRequest): Promise<T>;
  async trigger<T = unknown>(req: CallRequest): Promise<T> {
    if (typeof req?.function_id !== 'string' || req.function_id.length === 0) {
      throw new InvocationError('invalid_function_id', 'trigger() needs a non-empty function_id');
    }
    if (this.shuttingDown) throw new InvocationError('shutting_down', 'Worker is shut down', req.function_id);
    const timeoutMs = req.timeoutMs ?? this.opts.invocationTimeoutMs;
    if (!this.live) await this.ready(timeoutMs);
    const scope = req.parent ?? invocationScope.getStore();
    const isVoid = req.action?.type === 'void';
    const invocationId = isVoid ? undefined : randomUUID();
    // Key order matters to the engine, not to the protocol: with the payload after these four keys
    // the engine passes it on as text instead of serialising it again (src/engine/call-frames.ts).
    const msg: InvokeFunctionMsg = {
      type: 'invokefunction',
      function_id: req.function_id,
      ...(invocationId ? { invocation_id: invocationId } : {}),
      timeout_ms: timeoutMs,
      data: req.payload ?? {},
      ...(req.action ? { action: req.action } : {}),
      ...(req.metadata !== undefined ? { metadata: req.metadata } : {}),
      ...(scope?.traceparent ? { traceparent: scope.traceparent } : {}),
      ...(scope?.baggage ? { baggage: scope.baggage } : {}),
    };
    const text = this.encode(msg, req.function_id);
    if (!invocationId) {
      if (!this.conn.sendText(text)) throw new InvocationError('connection_lost', 'Not connected to the engine', req.function_id);
      return undefined as T;
    }
    return new Promise<T>((resolve, reject) => {
      // The engine enforces the deadline and answers `timeout`; this timer is only a safety net
      // for an engine that never answers.
      const timer = setTimeout(() => {
        if (!this.calls.delete(invocationId)) return;
        if (this.granted.has('cancel')) this.conn.send({ type: 'cancel', invocation_id: invocationId, reason: 'timeout' });
        reject(new InvocationError('timeout', `Invocation of ${req.function_id} timed out after ${timeoutMs}ms`, req.function_id));
      }, timeoutMs + 1000);
      const signal = req.signal;
      const onAbort = (): void => {
        const call = this.calls.get(invocationId);
        if (!call) return;
        this.calls.delete(invocationId);
        clearTimeout(call.timer);
        if (this.granted.has('cancel')) this.conn.send({ type: 'cancel', invocation_id: invocationId, reason: 'caller aborted' });
        reject(new InvocationError('cancelled', `Call of ${req.function_id} was cancelled by the caller`, req.function_id));
      };
      const settle = <A extends unknown[]>(f: (...a: A) => void) => (...a: A): void => {
        signal?.removeEventListener('abort', onAbort);
        f(...a);
      };
      this.calls.set(invocationId, { resolve: settle(resolve as (v: unknown) => void), reject: settle(reject), timer, functionId: req.function_id });
      if (signal) {
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
      }
      if (!this.conn.sendText(text)) {
        clearTimeout(timer);
        this.calls.delete(invocationId);
        reject(new InvocationError('connection_lost', 'Not connected to the engine', req.function_id));
      }
    });
  }

  private encode(msg: Message, functionId?: string): string {
    let text: string;
    try {
      text = JSON.stringify(msg);
    } catch (e) {
      throw new InvocationError('invalid_payload', `Payload is not JSON-serializable: ${(e as Error).message}`, functionId);
    }
    const size = exceedsBytes(text, this.opts.maxFrameBytes);
    if (size !== false) {
      throw new InvocationError('payload_too_large', `Frame of ${size} bytes exceeds the limit of ${this.opts.maxFrameBytes} bytes`, functionId);
    }
    return text;
  }

  // ---- LogSink ---------------------------------------------------------------------------------------
  //
  // Lines of one event-loop turn leave together in one fire-and-forget `engine::log::batch` call,
  // each as a row [level, message, data, function_id, invocation_id, trace_id]: a Logger line
  // costs a push of four values here and its share of one JSON.stringify at the end of the turn
  // (docs/protocol.md, engine::log::batch). The data is serialized then, not when logged.

  /** The LogSink form for code holding a worker: `scope` as plain fields. */
  log(level: LogLevel, message: string, data: unknown, scope: { function_id?: string; invocation_id?: string; traceparent?: string }): void {
    const inCall = scope.function_id !== undefined || scope.invocation_id !== undefined || scope.traceparent !== undefined;
    this.logScoped(level, message, data, inCall ? { functionId: scope.function_id ?? '', invocationId: scope.invocation_id ?? '', traceparent: scope.traceparent } : undefined);
  }

  /** What Logger calls: the invocation scope as the SDK keeps it (the running call), nothing copied. */
  logScoped(level: LogLevel, message: string, data: unknown, scope: InvocationScope | undefined): void {
    if (!this.live) return;
    const q = this.logQueue;
    q.push(level, message, data, scope);
    if (q.length === 4) setImmediate(this.flushLogs);
  }

  /** Pending lines, four slots each: level, message, data, scope. */
  private logQueue: unknown[] = [];
  private readonly flushLogs = (): void => {
    const q = this.logQueue;
    this.logQueue = [];
    if (q.length === 0 || !this.live) return;
    const rows: unknown[][] = new Array(q.length / 4);
    for (let i = 0, j = 0; i < q.length; i += 4, j++) rows[j] = logRow(q[i] as LogLevel, q[i + 1], q[i + 2], q[i + 3] as InvocationScope | undefined);
    this.sendLogRows(rows, false);
  };

  private sendLogRows(rows: unknown[][], safe: boolean): void {
    const msg: InvokeFunctionMsg = { type: 'invokefunction', function_id: 'engine::log::batch', data: { lines: rows }, action: { type: 'void' } };
    let text: string;
    try {
      text = this.encode(msg);
    } catch (e) {
      // Never thrown into user code. Data that JSON cannot encode (a cycle, a BigInt) becomes its
      // String(); a batch over the frame limit goes in halves; a single line over it is dropped.
      if ((e as InvocationError).code === 'payload_too_large') {
        if (rows.length > 1) {
          const half = rows.length >> 1;
          this.sendLogRows(rows.slice(0, half), safe);
          this.sendLogRows(rows.slice(half), safe);
        }
      } else if (!safe) {
        for (const row of rows) if (row.length > 2) row[2] = jsonSafe(row[2]);
        this.sendLogRows(rows, true);
      }
      return;
    }
    this.conn.sendText(text);
  }

  // ---- connection lifecycle ------------------------------------------------------------------------

  private onOpen(): void {
    const previous = this.registered;
    this.conn.send({ type: 'hello', protocol: PROTOCOL_VERSION, features: ['cancel', 'ack'], role: this.opts.role });
    if (previous) {
      this.conn.send({ type: 'reattach', previous_worker_id: previous.worker_id, ...(previous.reattach_token ? { reattach_token: previous.reattach_token } : {}) });
    }
    this.conn.send({
      type: 'invokefunction',
      function_id: 'engine::workers::register',
      action: { type: 'void' },
      data: {
        name: this.workerName,
        runtime: 'node',
        version: SDK_VERSION,
        sdk: 'svc-sdk',
        os: platform(),
        pid: process.pid,
        ...this.opts.metadata,
      },
    });
    for (const { msg } of this.triggerTypes.values()) this.conn.send(msg);
    for (const { msg } of this.functions.values()) this.conn.send(msg);
    for (const msg of this.triggers.values()) this.conn.send(msg);
  }

  private onDown(): void {
    this.live = false;
    // Calls in flight are lost with the socket (the engine halts them); fail them now, not at timeout.
    for (const [id, call] of this.calls) {
      clearTimeout(call.timer);
      call.reject(new InvocationError('connection_lost', `Connection to the engine lost while calling ${call.functionId}`, call.functionId));
      this.calls.delete(id);
    }
    for (const r of this.running.values()) r.abort(new InvocationError('connection_lost', 'Connection to the engine lost'));
    // Bindings we served as a provider are parked by the engine and re-delivered on reconnect.
    for (const id of [...this.providedBindings.keys()]) void this.dropProvided(id);
    this.granted.clear();
    this.emit('disconnected');
  }

  private onMessage(m: Message): void {
    switch (m.type) {
      case 'invokefunction':
        void this.handleInvoke(m);
        return;
      case 'invocationresult':
        this.handleResult(m);
        return;
      case 'workerregistered': {
        this.registered = m;
        this.live = true;
        this.lastRefusal = null;
        const waiters = this.connectedWaiters;
        this.connectedWaiters = [];
        for (const w of waiters) w();
        this.emit('state', 'connected');
        this.emit('connected');
        return;
      }
      case 'hello':
        this.granted = new Set(m.features);
        this.engineInfo = m.engine;
        if (!this.granted.has('ack')) for (const id of [...this.acks.keys()]) this.settleAck(id);
        return;
      case 'triggerregistrationresult':
        this.handleTriggerResult(m);
        return;
      case 'registertrigger':
        void this.handleProvideTrigger(m);
        return;
      case 'unregistertrigger':
        void this.dropProvided(m.id);
        return;
      case 'cancel':
        this.running.get(m.invocation_id)?.abort(new InvocationError('cancelled', m.reason ?? 'Cancelled by the engine'));
        return;
      case 'ping':
        this.conn.send({ type: 'pong' });
        return;
      case 'error':
        // `unauthorized` is followed by a 4401 close, reported once from there.
        if (m.error.code !== 'unauthorized') this.report(InvocationError.from(m.error));
        return;
      default:
        return;
    }
  }

  private handleResult(m: InvocationResultMsg): void {
    const call = this.calls.get(m.invocation_id);
    if (!call) return;
    this.calls.delete(m.invocation_id);
    clearTimeout(call.timer);
    if (m.error) call.reject(InvocationError.from(m.error, m.function_id ?? call.functionId));
    else call.resolve(m.result ?? null);
  }

  private async handleInvoke(m: InvokeFunctionMsg): Promise<void> {
    const invocationId = m.invocation_id ?? undefined;
    if (this.draining) {
      if (invocationId) this.reply(invocationId, m.function_id, undefined, { code: 'shutting_down', message: `Worker ${this.workerName} is shutting down` });
      return;
    }
    const fn = this.functions.get(m.function_id);
    if (!fn) {
      if (invocationId) this.reply(invocationId, m.function_id, undefined, { code: 'function_not_found', message: `Function ${m.function_id} not found` });
      return;
    }
    const call = new RunningCall(invocationId ?? '', m.function_id, m.metadata, m.traceparent ?? undefined, m.baggage ?? undefined, this.logger, this);
    if (invocationId) this.running.set(invocationId, call);
    let result: unknown;
    let error: ErrorBody | undefined;
    try {
      // The call is the handler's context and the async-local scope at once (Logger, nested calls).
      result = await (this.opts.implicitContext === false ? fn.handler(m.data ?? {}, call) : invocationScope.run(call, fn.handler, m.data ?? {}, call));
    } catch (e) {
      error = toErrorBody(e);
    }
    if (!invocationId) return;
    const wasRunning = this.running.delete(invocationId);
    // Cancelled (or the connection dropped): the engine no longer expects an answer.
    if (!wasRunning || call.aborted) return;
    this.reply(invocationId, m.function_id, result, error);
  }

  private reply(invocationId: string, functionId: string, result: unknown, error: ErrorBody | undefined): void {
    const msg: InvocationResultMsg = error
      ? { type: 'invocationresult', invocation_id: invocationId, function_id: functionId, error }
      : { type: 'invocationresult', invocation_id: invocationId, function_id: functionId, result: result === undefined ? null : result };
    let text: string;
    try {
      text = this.encode(msg, functionId);
    } catch (e) {
      text = JSON.stringify({ type: 'invocationresult', invocation_id: invocationId, function_id: functionId, error: toErrorBody(e) });
    }
    this.conn.sendText(text);
  }

  private handleTriggerResult(m: TriggerRegistrationResultMsg): void {
    if (m.error) {
      const err = new InvocationError(m.error.code, m.error.message, m.function_id);
      const ack = this.acks.get(m.id);
      if (ack) {
        this.acks.delete(m.id);
        clearTimeout(ack.timer);
        ack.reject(err);
      } else {
        // Refused on a replay after reconnect: nobody awaits it any more.
        this.triggers.delete(m.id);
        this.report(err);
      }
      return;
    }
    this.settleAck(m.id);
  }

  private settleAck(id: string): void {
    const ack = this.acks.get(id);
    if (!ack) return;
    this.acks.delete(id);
    clearTimeout(ack.timer);
    ack.resolve();
  }

  private async handleProvideTrigger(m: RegisterTriggerMsg): Promise<void> {
    const type = this.triggerTypes.get(m.trigger_type);
    const binding: TriggerBinding = {
      id: m.id,
      trigger_type: m.trigger_type,
      function_id: m.function_id,
      config: m.config ?? {},
      ...(m.metadata !== undefined ? { metadata: m.metadata } : {}),
    };
    let error: ErrorBody | undefined;
    if (!type) {
      error = { code: 'trigger_type_not_found', message: `Trigger type ${m.trigger_type} is not provided by worker ${this.workerName}` };
    } else {
      // A re-delivered id replaces what we hold: finish dropping the old one before accepting.
      if (this.providedBindings.has(m.id)) await this.dropProvided(m.id);
      try {
        await type.handler.registerTrigger(binding);
        this.providedBindings.set(m.id, binding);
      } catch (e) {
        error = toErrorBody(e);
        if (error.code === 'invocation_failed') error.code = 'trigger_registration_failed';
        delete error.stacktrace;
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

  private dropProvided(id: string): Promise<void> {
    const binding = this.providedBindings.get(id);
    if (!binding) return Promise.resolve();
    this.providedBindings.delete(id);
    const type = this.triggerTypes.get(binding.trigger_type);
    if (!type) return Promise.resolve();
    return Promise.resolve()
      .then(() => type.handler.unregisterTrigger(binding))
      .then(
        () => undefined,
        (e) => this.report(e as Error),
      );
  }

  private report(err: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', err);
    else process.stderr.write(`svc-sdk [${this.workerName}]: ${err.message}\n`);
  }

  /**
   * Stop: refuse new incoming calls, let handlers already running finish and answer (up to
   * `graceMs`; their nested calls still work), then close and fail what this worker still awaits.
   */
  async shutdown(graceMs = 5000): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const end = Date.now() + graceMs;
    while (this.running.size > 0 && this.live && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    this.shuttingDown = true;
    this.flushLogs();
    for (const [id, call] of this.calls) {
      clearTimeout(call.timer);
      call.reject(new InvocationError('shutting_down', 'Worker is shutting down', call.functionId));
      this.calls.delete(id);
    }
    for (const [id, ack] of this.acks) {
      clearTimeout(ack.timer);
      ack.reject(new InvocationError('shutting_down', 'Worker is shutting down'));
      this.acks.delete(id);
    }
    await this.conn.close(1000);
    this.onDown();
  }

  /** Test hook: drop the socket as a network failure would. */
  simulateDisconnect(): void {
    this.conn.drop();
  }
}

/** A log line on the wire: [level, message] outside a handler, else [level, message, data, function_id, invocation_id, trace_id]. */
function logRow(level: LogLevel, message: unknown, data: unknown, scope: InvocationScope | undefined): unknown[] {
  if (scope === undefined) return data === undefined ? [level, message] : [level, message, data];
  return [level, message, data === undefined ? null : data, scope.functionId || null, scope.invocationId || null, traceIdOfTraceparent(scope.traceparent) ?? null];
}

/**
 * `v` if JSON can encode it; else a copy where BigInts are strings and repeated objects (cycles)
 * "[Circular]"; else its String(). A log line's data is changed rather than lost.
 */
function jsonSafe(v: unknown): unknown {
  try {
    JSON.stringify(v);
    return v;
  } catch {
    /* below */
  }
  const seen = new WeakSet<object>();
  try {
    return JSON.parse(
      JSON.stringify(v, (_key, x: unknown) => {
        if (typeof x === 'bigint') return x.toString();
        if (typeof x === 'object' && x !== null) {
          if (seen.has(x)) return '[Circular]';
          seen.add(x);
        }
        return x;
      }),
    ) as unknown;
  } catch {
    try {
      return String(v);
    } catch {
      return '[unserializable]';
    }
  }
}
