/**
 * `svc-sdk/internal`: what the engine, the CLI and the built-in workers share with the SDK's own
 * code and a worker author does not need. Not a contract: it changes with them.
 *
 * - ChurnMap (churn-map.ts): a Map for entries that come and go at the call rate.
 * - Deadlines, DeadlineEntry (deadlines.ts): deadlines of calls in flight without a timer per call.
 * - sendCoalesced, exceedsBytes, FLUSH_FRAMES, FLUSH_BYTES, textFrame (transport.ts): write coalescing per event-loop turn, flushed part-way in long turns; a frame's size; a WebSocket text frame as bytes.
 * - invokeFrameText, resultFrameText, jsonString (protocol/frame-layout.ts): the call frames as text
 *   in the layout the engine's fast path passes payloads on in; a string quoted as JSON.
 * - deeperThan, jsonDepthOver (protocol/nesting.ts): a frame's nesting depth.
 * - logRow, traceIdOfTraceparent (protocol/log-rows.ts): Logger lines as rows.
 * - toErrorBody, describeValue (errors.ts): a thrown value as a wire error; a value in a message.
 * - parseEngineUrls, backoffDelay (connection.ts): engine addresses; reconnect delays.
 * - the supervisor's environment contract (supervised.ts): SVC_RUN_SECRET, SVC_LIVENESS_FD.
 * - unknownKeyMessage, closestKey, firstUnknownKey (known-keys.ts): one "did you mean" for every config.
 * - mix32, counterTraceTail, traceparentMaker, validTraceparent (trace-ids.ts): trace ids from a prefix and a counter that sample as random ones do; a W3C traceparent's check.
 * - otelEnabled, samplerFromEnv (otel-export.ts): whether a worker exports its own spans (WorkerOptions.otel, OTEL_*), and with which sampler.
 */
export { ChurnMap } from './churn-map.js';
export { Deadlines, type DeadlineEntry } from './deadlines.js';
export { sendCoalesced, exceedsBytes, FLUSH_FRAMES, FLUSH_BYTES, textFrame } from './transport.js';
export { invokeFrameText, resultFrameText, jsonString } from './protocol/frame-layout.js';
export { deeperThan, jsonDepthOver } from './protocol/nesting.js';
export { logRow, traceIdOfTraceparent, type LogRowScope } from './protocol/log-rows.js';
export { toErrorBody, describeValue } from './errors.js';
export { parseEngineUrls, backoffDelay } from './connection.js';
export { RUN_SECRET_ENV, LIVENESS_FD_ENV, ENGINE_GONE_EXIT_MS, startedByEngine } from './supervised.js';
export { SAFETY_MARGIN_MS } from './caller.js';
export { unknownKeyMessage, closestKey, firstUnknownKey } from './known-keys.js';
export { otelEnabled, samplerFromEnv } from './otel-export.js';
export { mix32, counterTraceTail, traceparentMaker, validTraceparent } from './trace-ids.js';
