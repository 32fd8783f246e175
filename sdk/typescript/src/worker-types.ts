import type { ReconnectOptions } from './connection.js';
import type { Logger } from './logger.js';
import type { InvocationAction } from './protocol.js';
import type { Worker } from './worker.js';

/** The public shapes of the TypeScript SDK's API (the Worker class is in worker.ts). */

export interface WorkerOptions {
  /** Shown in every list, log line and trace. Default: env SVC_WORKER_NAME, else hostname:pid. */
  workerName?: string;
  /** Default deadline of `trigger()` calls. */
  invocationTimeoutMs?: number;
  reconnect?: Partial<ReconnectOptions>;
  /** Largest frame this worker sends or accepts; keep equal to the engine's `max_frame_bytes`. */
  maxFrameBytes?: number;
  pingIntervalMs?: number;
  /** Extra fields for `engine::workers::register` (shown by `engine::workers::list`). */
  metadata?: Record<string, unknown>;
  /** `client`: a short-lived caller such as the CLI; hidden from worker lists. */
  role?: 'worker' | 'client';
  /** Print Logger lines locally too (default true). */
  echoLogs?: boolean;
  /** Sent as `Authorization: Bearer …` when the engine requires tokens. Default: env SVC_TOKEN. */
  token?: string;
  /**
   * Default true: a handler runs inside an AsyncLocalStorage scope, so `trigger()` and `Logger`
   * calls anywhere below it know the call they serve (its trace, its invocation id) without being
   * passed `ctx`. false: no scope; pass `parent: ctx` to `trigger()` to keep a nested call in its
   * trace (Logger lines then carry no invocation or trace id). On Node 20 the first scope turns on
   * promise hooks for the whole process, which costs a microsecond or two per call of a
   * promise-heavy handler; the built-in svc-state worker opts out (bench/RESULTS.md, 2026-11-22
   * session 4).
   */
  implicitContext?: boolean;
}

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
}

export interface TriggerBinding {
  id: string;
  trigger_type: string;
  function_id: string;
  config: unknown;
  metadata?: unknown;
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
}

export interface CallRequest {
  function_id: string;
  payload?: unknown;
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
  parent?: Pick<InvocationContext, 'traceparent' | 'baggage'>;
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
