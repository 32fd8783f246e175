/**
 * The numbers and names of the svc wire protocol that both ends must agree on: the version, the
 * default address and limits, the svc extensions a peer may ask for, the close codes the engine
 * refuses a connection with, and the engine functions every svc SDK calls. The Python SDK holds the
 * same values (sdk/python/src/svc_sdk/protocol.py); sdk/python/tests/test_protocol_constants.py
 * compares the two.
 */

export const PROTOCOL_VERSION = 1;
export const DEFAULT_ENGINE_PORT = 49134;
export const DEFAULT_ENGINE_URL = `ws://localhost:${DEFAULT_ENGINE_PORT}`;
/** Largest frame the engine accepts by default; SDKs refuse to send larger ones. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** The deadline of a call that sets none (config.yaml `engine.invocation_timeout_ms`). */
export const DEFAULT_INVOCATION_TIMEOUT_MS = 30_000;
/**
 * Deepest nesting of arrays and objects a frame may have, its own object counted: `{"data":[1]}`
 * is 2 deep. serde_json's default recursion limit, which iii's engine parses frames with, refuses
 * the 128th level, so every frame an iii peer can exchange with iii is accepted here. It bounds the
 * recursion of everything that walks a frame's values: JSON.stringify in the engine (which throws
 * at a few thousand levels), Python's json module in Python workers (at about 1,000).
 */
export const MAX_FRAME_DEPTH = 128;
/** The SDKs accept frames from the engine this deep: its listings nest what it stored a few levels deeper. */
export const MAX_RECEIVED_FRAME_DEPTH = 2 * MAX_FRAME_DEPTH;

/** Features a peer can ask for in `hello`. The engine answers with the subset it grants. */
export type Feature =
  /** engine → callee `cancel` when a call times out or its caller leaves; caller → engine `cancel`. */
  | 'cancel'
  /** positive `triggerregistrationresult` (with `status`) for every `registertrigger`, not only errors. */
  | 'ack';
export const FEATURES: readonly Feature[] = ['cancel', 'ack'];
/**
 * In `workerregistered.features` (iii's list of what the engine supports): this engine answers a
 * peer's `hello`. `workerregistered` is sent at connect, before the peer's `hello` is read, so an
 * SDK waits for the `hello` answer (the engine's limits, `Worker.engine`) before it is ready only
 * when this is there: an iii engine drops `hello` and would leave it waiting for ever.
 */
export const ANSWERS_HELLO_FEATURE = 'svc.hello';

/** WebSocket close code of the engine's `unauthorized` refusal (no token, or an unknown one). */
export const UNAUTHORIZED_CLOSE = 4401;
/** WebSocket close code of the engine's `stale_worker` refusal (another engine run's secret). */
export const STALE_WORKER_CLOSE = 4410;
/**
 * WebSocket close code of a graceful engine stop (1012, "service restart"): the engine is going
 * away and will likely be back, so peers reconnect. Not 1001: PyPI iii-sdk 0.22.1 takes a clean
 * close (1000/1001) as the end and never reconnects.
 */
export const ENGINE_RESTART_CLOSE = 1012;
/** Upgrade request header carrying the run secret the engine gave a process it started. */
export const RUN_SECRET_HEADER = 'x-svc-run-secret';

/** Called fire-and-forget after every connect with the worker's name, runtime and metadata. */
export const REGISTER_WORKER_FUNCTION = 'engine::workers::register';
/** Logger lines, several per call: `{lines: [[level, message, data, function_id, invocation_id, trace_id], …]}`. */
export const LOG_BATCH_FUNCTION = 'engine::log::batch';
/** The worker's process metrics, every few seconds: `{process: {cpu_user_seconds, cpu_system_seconds, rss_bytes, …}}`. */
export const REPORT_WORKER_FUNCTION = 'engine::workers::report';
/** How often the SDKs send REPORT_WORKER_FUNCTION by default, ms. */
export const DEFAULT_PROCESS_REPORT_MS = 5000;
