export {
  registerWorker,
  Worker,
  SDK_VERSION,
  type WorkerOptions,
  type InvocationContext,
  type FunctionHandler,
  type FunctionOptions,
  type TriggerInput,
  type TriggerBinding,
  type TriggerTypeHandler,
  type TriggerTypeDefinition,
  type CallRequest,
} from './worker.js';
export { Logger, type LogLevel } from './logger.js';
export { InvocationError, toErrorBody } from './errors.js';
export { type ConnectionState, type ReconnectOptions, backoffDelay } from './connection.js';
export { sendCoalesced, exceedsBytes } from './transport.js';
export * from './protocol.js';
