import type { ReconnectOptions } from './connection.js';
import type { InvocationAction } from './protocol/messages.js';

/**
 * The public shapes of the TypeScript SDK's API (the Worker class, and the InvocationContext its
 * handlers get, are in worker.ts).
 */

export interface WorkerOptions {
  /** Shown in every list, log line and trace. Default: env SVC_WORKER_NAME, else hostname:pid. */
  workerName?: string;
  /**
   * The namespace (iii 0.23+) this worker's functions are registered in, and its calls and trigger
   * bindings resolve in unless they name another. Default: env SVC_NAMESPACE, else `default`.
   */
  namespace?: string;
  /**
   * Default deadline of `trigger()` calls. Unset (the default): calls carry no deadline of their
   * own and the engine applies its `engine.invocation_timeout_ms`.
   */
  invocationTimeoutMs?: number;
  reconnect?: Partial<ReconnectOptions>;
  /** Largest frame this worker sends or accepts; keep equal to the engine's `max_frame_bytes`. */
  maxFrameBytes?: number;
  pingIntervalMs?: number;
  /** Extra fields for `engine::workers::register` (shown by `engine::workers::list`). */
  metadata?: Record<string, unknown>;
  /** `client`: a short-lived caller such as the CLI; hidden from worker lists. */
  role?: 'worker' | 'client';
  /**
   * How often the worker reports its process's CPU, memory and event-loop lag to the engine
   * (engine::workers::report; the console's Workers page and /metrics show them), ms. Default: env
   * SVC_PROCESS_REPORT_MS, else 5000; 0 turns the reports off. Workers only (not `role: 'client'`).
   */
  processReportIntervalMs?: number;
  /**
   * A file that says whether this worker is ready (connected, its functions registered), for an
   * orchestrator's exec probe: `ready <name>` or `not ready: <state>`, touched every 5 s while
   * ready, removed when the worker closes (kept, `not ready: closed`, when closed by an error);
   * docs/deploy.md. Default: env SVC_READY_FILE; unset: none.
   */
  readyFile?: string;
  /** Print Logger lines locally too (default true). */
  echoLogs?: boolean;
  /** Sent as `Authorization: Bearer …` when the engine requires tokens. Default: env SVC_TOKEN. */
  token?: string;
  /**
   * The secret the engine gave this process when it started it (supervised workers), sent as
   * `x-svc-run-secret`: only that engine run accepts it. Default: env SVC_RUN_SECRET. Refused
   * (`stale_worker`, close 4410), the worker stops for good; with the secret from the environment
   * the process exits too (its engine is gone; see supervised.ts). A function is asked at every
   * connect (the svc console re-reads .svc/engine.json), and a refusal is then not final.
   */
  runSecret?: string | (() => string | undefined);
  /**
   * Default true: a handler runs inside an AsyncLocalStorage scope, so `trigger()` and `Logger`
   * calls anywhere below it know the call they serve (its trace, its invocation id) without being
   * passed `ctx`. false: no scope; pass `parent: ctx` to `trigger()` to keep a nested call in its
   * trace (Logger lines then carry no invocation or trace id). On Node 20 the first scope turns on
   * promise hooks for the whole process, which costs a microsecond or two per call of a
   * promise-heavy handler; the built-in svc-state worker opts out.
   */
  implicitContext?: boolean;
  /**
   * Export this worker's own spans (one per handled and per outgoing call) with OpenTelemetry over
   * OTLP http/protobuf, to OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT. Needs the optional peer packages
   * (otel-export.ts). Default: on when OTEL_TRACES_EXPORTER lists `otlp` (and OTEL_SDK_DISABLED is
   * not `true`), else off, when nothing of OpenTelemetry is loaded (docs/observability.md).
   */
  otel?: boolean;
}

export interface FunctionOptions {
  description?: string;
  request_format?: unknown;
  response_format?: unknown;
  metadata?: Record<string, unknown>;
}

export interface TriggerInput {
  type: string;
  function_id: string;
  config?: unknown;
  metadata?: unknown;
  /** The namespace `function_id` resolves in when the trigger fires. Default: the worker's. */
  namespace?: string;
}

export interface TriggerBinding {
  id: string;
  trigger_type: string;
  function_id: string;
  config: unknown;
  metadata?: unknown;
  /** The namespace the function resolves in (a call with this binding's `bindingId` is looked up there). */
  namespace?: string;
}

export interface TriggerTypeHandler {
  /** Accept a binding, or throw (an Error with a string `code` keeps it) to refuse it. */
  registerTrigger(binding: TriggerBinding): unknown;
  unregisterTrigger(binding: TriggerBinding): unknown;
}

export interface TriggerTypeDefinition {
  id: string;
  description?: string;
  trigger_request_format?: unknown;
  call_request_format?: unknown;
  /**
   * Functions a worker must be allowed to call to bind this type: a binding that lets its owner
   * observe data (svc-state's `state` type delivers every write) needs the rights of the function
   * that reads it (`state::get`). The engine refuses other bindings with `forbidden`.
   */
  binding_requires_call?: string[];
  /**
   * `one` (default): the engine hands each binding to one provider of this type, the others stand
   * by and take over when it leaves (a source that must fire once). `all`: every provider gets
   * every binding (replicas that each serve their share, as svc-http's behind a load balancer).
   */
  binding_mode?: 'one' | 'all';
}

export interface CallRequest {
  function_id: string;
  payload?: unknown;
  /** This call's deadline. Default: WorkerOptions.invocationTimeoutMs, else the engine's default. */
  timeoutMs?: number;
  action?: InvocationAction;
  metadata?: unknown;
  /** Aborting gives up on the call: it rejects with `cancelled` and the callee is told to stop. */
  signal?: AbortSignal;
  /**
   * The call this one is made for (a handler's `ctx`): its traceparent and baggage go along, so
   * the new call is its child in the trace. Default: the call whose handler is running
   * (AsyncLocalStorage; see WorkerOptions.implicitContext).
   */
  parent?: { traceparent?: string; baggage?: string };
  /**
   * A trigger type's provider calling for one of its bindings (its fire, its condition): the
   * binding's id (TriggerBinding.id). The engine then authorizes the call with the rights of the
   * worker that registered the binding, not this worker's (docs/security.md).
   */
  bindingId?: string;
  /** The namespace the function is looked up in. Default: the worker's (WorkerOptions.namespace). */
  namespace?: string;
}

/** What an enqueue (`action: TriggerAction.Enqueue({queue})`) answers once the job is durable (iii-sdk's EnqueueResult). */
export interface EnqueueResult {
  messageReceiptId: string;
}

/** What `publish` answers once every copy is durable. */
export interface PublishResult {
  topic: string;
  message_id: string;
  /** One per live subscription of the topic. */
  copies: number;
}
