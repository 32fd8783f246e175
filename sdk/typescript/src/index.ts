/**
 * `svc-sdk`: what a worker author uses. Connect with `registerWorker`, serve functions, call any
 * function by id, bind and provide triggers, log. The wire protocol is `svc-sdk/protocol`; the
 * helpers the engine shares with the SDK are `svc-sdk/internal` (not a contract).
 */
export { registerWorker, Worker, SDK_VERSION, type InvocationContext, type FunctionHandler } from './worker.js';
export type {
  WorkerOptions,
  FunctionOptions,
  TriggerInput,
  TriggerBinding,
  TriggerTypeHandler,
  TriggerTypeDefinition,
  CallRequest,
  EnqueueResult,
  PublishResult,
} from './worker-types.js';
export type {
  WorkerState,
  ConnectionState,
  WorkerEvent,
  WorkerEventMap,
  StateEvent,
  ConnectedEvent,
  DisconnectedEvent,
  RefusedEvent,
  ErrorEvent,
} from './worker-events.js';
export { Logger, type LogLevel } from './logger.js';
export { ChannelReader, ChannelWriter, isChannelRef, channelUrl, type ChannelRef } from './channels.js';
export { TriggerAction, publish } from './queue.js';
export { InvocationError, SvcError } from './errors.js';
export { type ReconnectOptions, DEFAULT_RECONNECT } from './connection.js';
export { redactAddress, REDACTED } from './redact.js';
export { ErrorCode, type ErrorCodeValue } from './protocol/error-codes.js';
export { DEFAULT_ENGINE_URL, DEFAULT_ENGINE_PORT, DEFAULT_MAX_FRAME_BYTES, DEFAULT_INVOCATION_TIMEOUT_MS } from './protocol/constants.js';
export type { ErrorBody, InvocationAction } from './protocol/messages.js';
