export { registerWorker, Worker, SDK_VERSION } from './worker.js';
export type {
  WorkerOptions,
  InvocationContext,
  FunctionHandler,
  FunctionOptions,
  TriggerInput,
  TriggerBinding,
  TriggerTypeHandler,
  TriggerTypeDefinition,
  CallRequest,
} from './worker-types.js';
export { Logger, type LogLevel } from './logger.js';
export { InvocationError, toErrorBody } from './errors.js';
export { type ConnectionState, type ReconnectOptions, backoffDelay, parseEngineUrls } from './connection.js';
export { sendCoalesced, exceedsBytes } from './transport.js';
export { ChurnMap } from './churn-map.js';
export * from './protocol.js';
export { deeperThan, jsonDepthOver } from './nesting.js';
