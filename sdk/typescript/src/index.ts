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
  EnqueueResult,
  PublishResult,
} from './worker-types.js';
export { Logger, type LogLevel } from './logger.js';
export { TriggerAction, publish } from './queue.js';
export { InvocationError, SvcError, toErrorBody } from './errors.js';
export { type ConnectionState, type ReconnectOptions, backoffDelay, parseEngineUrls } from './connection.js';
export { sendCoalesced, exceedsBytes } from './transport.js';
export { redactAddress, REDACTED } from './redact.js';
export { ChurnMap } from './churn-map.js';
export { functionIdProblem, FUNCTION_ID_MAX_LENGTH } from './function-id.js';
export { RUN_SECRET_ENV, RUN_SECRET_HEADER, LIVENESS_FD_ENV, STALE_WORKER_CLOSE } from './supervised.js';
export * from './protocol.js';
export { deeperThan, jsonDepthOver } from './nesting.js';
