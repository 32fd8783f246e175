/**
 * The error codes of the protocol: every `code` the engine and the SDKs put in an `error` body of a
 * call, a frame refusal or a trigger registration, to branch on (`e.code === ErrorCode.Timeout`).
 * docs/errors.md explains each (its Calls, Frames and Triggers tables list exactly these; a test
 * holds them equal), and the Python SDK's `ErrorCode` holds the same values. The built-in workers'
 * own codes (svc-state's `value_too_large`, svc-http's `route_conflict`, …) are theirs, listed in
 * docs/errors.md under each worker; a handler may answer with any code of its own.
 */
export const ErrorCode = {
  // calls
  FunctionNotFound: 'function_not_found',
  InvocationFailed: 'invocation_failed',
  InvocationStopped: 'invocation_stopped',
  Timeout: 'timeout',
  Cancelled: 'cancelled',
  ConnectionLost: 'connection_lost',
  ShuttingDown: 'shutting_down',
  PayloadTooLarge: 'payload_too_large',
  ResultTooLarge: 'result_too_large',
  InternalError: 'internal_error',
  InvalidPayload: 'invalid_payload',
  InvalidArgument: 'invalid_argument',
  InvalidFunctionId: 'invalid_function_id',
  InvalidNamespace: 'invalid_namespace',
  DuplicateFunction: 'duplicate_function',
  EnqueueError: 'enqueue_error',
  WorkerNotFound: 'worker_not_found',
  TriggerNotFound: 'trigger_not_found',
  Forbidden: 'forbidden',
  BindingNotFound: 'binding_not_found',
  Overloaded: 'overloaded',
  TooManyRegistrations: 'too_many_registrations',
  Unauthorized: 'unauthorized',
  StaleWorker: 'stale_worker',
  ReservedName: 'reserved_name',
  WorkerStartFailed: 'worker_start_failed',
  TraceNotFound: 'trace_not_found',
  // frames
  MalformedFrame: 'malformed_frame',
  UnknownMessageType: 'unknown_message_type',
  InvalidFrame: 'invalid_frame',
  FrameTooLarge: 'frame_too_large',
  FrameTooDeep: 'frame_too_deep',
  // triggers
  TriggerTypeNotFound: 'trigger_type_not_found',
  TriggerRegistrationFailed: 'trigger_registration_failed',
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];
