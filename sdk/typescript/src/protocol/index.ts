/**
 * `svc-sdk/protocol`: the svc wire protocol, the contract between the engine and every peer.
 * JSON text frames over one WebSocket per worker, keyed by a lowercase `type`; a superset of
 * iii-sdk 0.22's message set. docs/protocol.md documents it with examples; this module is its code:
 *
 * - constants.ts: version, default port and URL, default limits (frame bytes, depth, deadline),
 *   features, the close codes of the engine's refusals, the engine functions every SDK calls.
 * - messages.ts: the typed messages (`Message`, one interface per `type`).
 * - decode.ts: `decodeFrame`, the one place a frame is validated (engine and SDK).
 * - nesting.ts: how a frame's nesting depth is measured (MAX_FRAME_DEPTH).
 * - error-codes.ts: `ErrorCode`, every code of a call, a frame refusal or a trigger registration.
 * - frame-layout.ts: the key order the SDKs write calls and results in, which the engine's fast
 *   path relies on to pass payloads on as text.
 * - function-id.ts: what a function id may hold.
 * - log-rows.ts: Logger lines as rows of `engine::log::batch`.
 * - worker-report.ts: the counters of `engine::workers::report` (svc-state's, svc-queue's).
 *
 * The helpers that implement these rules for the engine and the SDK (the frame builders, the depth
 * measure, log rows) are in `svc-sdk/internal`, which is not a contract.
 *
 * The Python SDK mirrors the constants (sdk/python/src/svc_sdk/protocol.py; a test compares them).
 */
export * from './constants.js';
export * from './messages.js';
export { decodeFrame, validateMessage, asCallFrame, MESSAGE_TYPES, type DecodeResult } from './decode.js';
export { ErrorCode, type ErrorCodeValue } from './error-codes.js';
export { INVOKE_KEY_ORDER, RESULT_KEY_ORDER } from './frame-layout.js';
export { functionIdProblem, FUNCTION_ID_MAX_LENGTH } from './function-id.js';
export type { LogLevel } from './log-rows.js';
export type { QueueCounters, StateCounters } from './worker-report.js';
