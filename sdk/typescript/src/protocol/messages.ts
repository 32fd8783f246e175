/**
 * The messages of the svc wire protocol: JSON text frames over one WebSocket per worker, keyed by a
 * lowercase `type`. The set is a superset of iii-sdk 0.22's, so unmodified iii clients work.
 * Messages and fields marked "svc extension" are only ever sent to a peer that asked for them in its
 * `hello` frame, so iii clients never see them. docs/protocol.md documents each with an example.
 */

export interface ErrorBody {
  code: string;
  message: string;
  stacktrace?: string;
}

export type InvocationAction = { type: 'void' } | { type: 'enqueue'; queue: string };

// ---- iii 0.22 message set -------------------------------------------------------------------

/** The namespace of a peer that names none (iii 0.23+: `default`). */
export const DEFAULT_NAMESPACE = 'default';

export interface WorkerRegisteredMsg {
  type: 'workerregistered';
  worker_id: string;
  reattach_token?: string;
  /** iii 0.25: what the engine supports; `observe.v1` turns on iii-sdk's `observe()`. */
  features?: string[];
}
export interface ReattachMsg {
  type: 'reattach';
  previous_worker_id: string;
  reattach_token?: string;
}
export interface RegisterFunctionMsg {
  type: 'registerfunction';
  id: string;
  description?: string;
  request_format?: unknown;
  response_format?: unknown;
  metadata?: Record<string, unknown>;
  /** iii: an externally HTTP-invoked function. Accepted and listed; svc does not call out over HTTP. */
  invocation?: unknown;
}
export interface UnregisterFunctionMsg {
  type: 'unregisterfunction';
  id: string;
}
export interface InvokeFunctionMsg {
  type: 'invokefunction';
  /** Absent or null: fire-and-forget. */
  invocation_id?: string | null;
  function_id: string;
  data?: unknown;
  traceparent?: string;
  baggage?: string;
  action?: InvocationAction;
  metadata?: unknown;
  /** svc extension: engine-side deadline for this call (default from config). iii clients omit it. */
  timeout_ms?: number;
  /**
   * svc extension: the trigger binding this call is made for (a trigger type's provider firing a
   * binding or checking its condition). The engine accepts it only from the binding's provider and
   * authorizes the call with the rights of the binding's owner (docs/security.md).
   */
  binding_id?: string;
  /**
   * iii 0.23+: the namespace the function is looked up in. Absent: `default`. (svc's SDKs write it
   * after `data`, and only when it is not `default`.)
   */
  namespace?: string | null;
  /** iii 0.25: how many observer activations led to this call (absent: 0); bounds observer loops. */
  observe_depth?: number;
}
export interface InvocationResultMsg {
  type: 'invocationresult';
  invocation_id: string;
  function_id?: string;
  result?: unknown;
  error?: ErrorBody;
  traceparent?: string;
  baggage?: string;
}
export interface RegisterTriggerTypeMsg {
  type: 'registertriggertype';
  id: string;
  description?: string;
  trigger_request_format?: unknown;
  call_request_format?: unknown;
  /**
   * svc extension: functions a worker must be allowed to call to bind this type, because a binding
   * lets it observe what they would show it (svc-state's `state` type: `state::get`).
   */
  binding_requires_call?: string[];
  /**
   * svc extension: `one` (default) — the engine hands each binding to one provider of the type, the
   * others stand by; `all` — to every provider (replicas of a source that each serve a share, such
   * as svc-http behind a load balancer).
   */
  binding_mode?: 'one' | 'all';
  /** iii 0.23+: accepted and listed; trigger types are engine-wide in svc (docs/iii-compatibility.md). */
  namespace?: string | null;
}
export interface UnregisterTriggerTypeMsg {
  type: 'unregistertriggertype';
  id: string;
  namespace?: string | null;
}
export interface RegisterTriggerMsg {
  type: 'registertrigger';
  id: string;
  trigger_type: string;
  function_id: string;
  config?: unknown;
  metadata?: unknown;
  /** iii 0.23+: the namespace `function_id` resolves in when the trigger fires. Absent: the binder's. */
  namespace?: string | null;
  /** iii 0.23+: where the trigger type's provider is found; accepted and listed (types are engine-wide in svc). */
  trigger_namespace?: string | null;
}
export interface UnregisterTriggerMsg {
  type: 'unregistertrigger';
  id: string;
  trigger_type?: string;
}
export interface TriggerRegistrationResultMsg {
  type: 'triggerregistrationresult';
  id: string;
  trigger_type: string;
  function_id: string;
  error?: ErrorBody;
  /** svc extension (feature `ack`): `active` once the provider accepted it, `parked` while no provider exists. */
  status?: 'active' | 'parked';
}
/**
 * iii 0.23+, engine → worker: a registration was refused. `FUNCTION_NAMESPACE_CONFLICT` (one
 * function; the connection stays) or `WORKER_NAMESPACE_CONFLICT` (the worker's name; the engine
 * closes the connection and iii SDKs stop reconnecting). svc sends them only with
 * `engine.namespaces.conflicts: exclusive` (docs/iii-compatibility.md).
 */
export interface RegistrationRejectedMsg {
  type: 'registrationrejected';
  code: 'FUNCTION_NAMESPACE_CONFLICT' | 'WORKER_NAMESPACE_CONFLICT';
  namespace: string;
  worker_name?: string;
  function_id?: string;
  owner_worker_id: string;
}
/** Legacy iii frame; accepted and ignored. */
export interface RegisterServiceMsg {
  type: 'registerservice';
  id: string;
  name?: string;
  description?: string;
  parent_service_id?: string;
}
export interface PingMsg {
  type: 'ping';
}
export interface PongMsg {
  type: 'pong';
}
/** Engine → peer: a frame could not be accepted. `ref` names the frame it answers when known. */
export interface ErrorMsg {
  type: 'error';
  error: ErrorBody;
  ref?: { type?: string; id?: string };
}

// ---- svc extensions ---------------------------------------------------------------------------

/**
 * svc extension. Peer → engine, first frame of an svc SDK: protocol version and wanted features.
 * Engine → peer: the answer, with the granted features and the engine's limits.
 */
export interface HelloMsg {
  type: 'hello';
  protocol: number;
  features: string[];
  /** peer → engine: `client` for short-lived callers (CLI, console), hidden from worker lists. */
  role?: 'worker' | 'client';
  /** engine → peer */
  engine?: { name: string; version: string; max_frame_bytes: number; invocation_timeout_ms: number };
}
/**
 * svc extension (feature `cancel`). Caller → engine: the caller gave up on its call `invocation_id`.
 * Engine → callee: stop working on `invocation_id`; no result is expected any more.
 */
export interface CancelMsg {
  type: 'cancel';
  invocation_id: string;
  reason?: string;
}

export type Message =
  | WorkerRegisteredMsg
  | ReattachMsg
  | RegisterFunctionMsg
  | UnregisterFunctionMsg
  | InvokeFunctionMsg
  | InvocationResultMsg
  | RegisterTriggerTypeMsg
  | UnregisterTriggerTypeMsg
  | RegisterTriggerMsg
  | UnregisterTriggerMsg
  | TriggerRegistrationResultMsg
  | RegisterServiceMsg
  | RegistrationRejectedMsg
  | PingMsg
  | PongMsg
  | ErrorMsg
  | HelloMsg
  | CancelMsg
  | ObserveMsg
  | UnobserveMsg;

export type MessageType = Message['type'];

// ---- iii 0.25 observe.v1 (docs/iii-compatibility.md) -------------------------------------------

/** iii 0.25: another function's invocations, filtered, invoke `target`. Sent only to an engine advertising `observe.v1`. */
export interface ObserveMsg {
  type: 'observe';
  id: string;
  source: {
    function_id: string;
    namespace?: string | null;
    args?: unknown;
    filters?: unknown;
    capture?: unknown;
    on?: unknown;
    deliver?: unknown;
  };
  target: { function_id: string; namespace?: string | null };
  metadata?: unknown;
  max_fires?: number;
  expires_in_ms?: number;
  max_in_flight?: number;
}
export interface UnobserveMsg {
  type: 'unobserve';
  id: string;
}
