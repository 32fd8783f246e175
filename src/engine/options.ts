import type { TokenSpec } from './auth.js';
import type { ClusterOptions } from './cluster/cluster.js';
import type { MetricsOptions } from './metrics/metrics-server.js';
import type { TelemetryOptions } from './telemetry/telemetry-options.js';
import { DEFAULT_ENGINE_PORT, DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_MAX_FRAME_BYTES } from 'svc-sdk';

/** Everything the engine can be told; config.yaml's `engine:` block maps onto this (src/engine/config/engine-config.ts). */
export interface EngineOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** Frames above this get a `frame_too_large` error; the connection stays open. */
  maxFrameBytes: number;
  /** Default deadline of every invocation. */
  invocationTimeoutMs: number;
  /** Upper bound a caller may ask for with `timeout_ms`. */
  maxInvocationTimeoutMs: number;
  /** On SIGINT/SIGTERM, how long in-flight calls may finish before connections are closed. */
  shutdownGraceMs: number;
  /** WebSocket ping period; a peer that misses a whole period is terminated. */
  pingIntervalMs: number;
  /** Log lines kept in memory for `engine::logs::list`. */
  logBufferSize: number;
  /** Print engine events (connects, disconnects) to stdout. */
  printEvents: boolean;
  /** Record a span per routed call and forward W3C traceparent (engine::traces::*). */
  tracing: boolean;
  /** Spans kept in memory (a ring: the oldest go first). */
  traceBufferSize: number;
  /** Tokens a connection must present (none: auth off, loopback only). */
  tokens: TokenSpec[];
  /**
   * Web origins (`https://app.example.com`, lowercase, no path) whose pages may open a WebSocket to
   * the engine. An upgrade with any other `Origin` header is refused with 403; clients that send no
   * `Origin` (SDKs, the CLI, the console server, iii SDKs) are not browsers and are not affected.
   */
  allowedOrigins: string[];
  /**
   * Two live workers exporting one function id in one namespace, or sharing a worker name there:
   * `replicas` (default) serves both, round-robin; `exclusive` refuses the second as iii 0.23+ does
   * (`registrationrejected`), except between instances the engine supervises (src/engine/namespaces.ts).
   */
  namespaceConflicts: 'replicas' | 'exclusive';
  /** Open connections; more are refused with `overloaded`. */
  maxConnections: number;
  /** Calls one worker may be serving, and may be waiting on, at once. */
  maxInFlightPerWorker: number;
  /** Calls in flight in the whole engine. */
  maxInFlightTotal: number;
  /** The HTTP upgrade must complete within this. */
  handshakeTimeoutMs: number;
  /** Functions + triggers + trigger types one connection may register. */
  maxRegistrationsPerWorker: number;
  /**
   * Largest value the engine stores for a peer (a description, a format, metadata, a binding's
   * config, a log line's message or data, a span's error message), as JSON characters; larger ones
   * are stored as a marker saying what was cut (src/engine/budgets.ts).
   */
  maxStoredValueBytes: number;
  /** All the registration data of one connection (descriptions, formats, metadata, configs). */
  maxStoredBytesPerWorker: number;
  /** The log ring's lines together; the oldest go first when over. */
  maxLogBytes: number;
  /** The span ring's error texts together; the oldest spans go first when over. */
  maxTraceBytes: number;
  /** A peer whose unsent bytes stay over this for slowConsumerMs (or reach four times it) is closed. */
  maxSendBufferBytes: number;
  slowConsumerMs: number;
  /**
   * Frames peers have begun and not finished sending, all together; over it the peers with the
   * largest unfinished messages are closed (1013) until it holds (src/engine/socket-buffers.ts).
   */
  maxPartialFrameBytes: number;
  /** Frames of the calls in flight together; new calls are refused with `overloaded` while over. */
  maxInFlightBytes: number;
  /**
   * Frames of the calls one connection made that are in flight; its new calls are refused with
   * `overloaded` while over, so one caller cannot take all of maxInFlightBytes from the others.
   */
  maxInFlightBytesPerWorker: number;
  /**
   * Calls, and their bytes, that one client (a token, a supervised instance, or without tokens a
   * remote address: src/engine/client-budgets.ts) has in flight over all its connections; its new
   * calls are refused with `overloaded` while over, so that opening more connections does not take
   * more of maxInFlightTotal / maxInFlightBytes.
   */
  maxInFlightPerClient: number;
  maxInFlightBytesPerClient: number;
  /** Bytes the engine holds per channel before it stops reading the writer (backpressure). */
  channelWindowBytes: number;
  /** Largest frame on a channel socket; a larger one closes that socket (1009) unread. */
  maxChannelFrameBytes: number;
  /** A channel with a side not opened within this ends (`channel_expired`). */
  channelOpenTimeoutMs: number;
  /** Channels one connection may have created and not yet ended (`too_many_channels`). */
  maxChannelsPerWorker: number;
  /** Bytes all channels hold together; at it every channel's writer is held (paused). */
  maxChannelBytes: number;
  /** A channel reader with bytes pending that takes none for this long is dropped (`channel_reader_lost`). */
  channelReaderStallMs: number;
  /** Channels open at both ends outlive the connection that created them by this much (`channel_owner_left`). */
  channelOwnerGraceMs: number;
  /** Cluster mode (docs/cluster.md): several engines sharing one Redis. null: a single engine. */
  cluster: ClusterOptions | null;
  /** Prometheus metrics on http://host:port/metrics (docs/observability.md). null: off. */
  metrics: MetricsOptions | null;
  /** OTLP export of the spans (docs/observability.md). null: off. */
  telemetry: TelemetryOptions | null;
  /** How often `engine::functions-available` checks for changes (engine-triggers.ts); default 5000, as iii. Not in config.yaml: tests shorten it. */
  functionsPollMs?: number;
}

export const DEFAULT_ENGINE_OPTIONS: EngineOptions = {
  host: '127.0.0.1',
  port: DEFAULT_ENGINE_PORT,
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
  invocationTimeoutMs: DEFAULT_INVOCATION_TIMEOUT_MS,
  maxInvocationTimeoutMs: 60 * 60 * 1000,
  shutdownGraceMs: 10_000,
  pingIntervalMs: 20_000,
  logBufferSize: 10_000,
  printEvents: true,
  tracing: true,
  traceBufferSize: 20_000,
  tokens: [],
  allowedOrigins: [],
  namespaceConflicts: 'replicas',
  maxConnections: 10_000,
  maxInFlightPerWorker: 10_000,
  maxInFlightTotal: 100_000,
  handshakeTimeoutMs: 10_000,
  maxRegistrationsPerWorker: 10_000,
  maxStoredValueBytes: 64 * 1024,
  maxStoredBytesPerWorker: 4 * 1024 * 1024,
  maxLogBytes: 32 * 1024 * 1024,
  maxTraceBytes: 16 * 1024 * 1024,
  // Two frames of the largest size: one frame a peer is reading is never a slow consumer.
  maxSendBufferBytes: 32 * 1024 * 1024,
  slowConsumerMs: 5000,
  // Four frames of the largest size a peer may send (four times max_frame_bytes).
  maxPartialFrameBytes: 256 * 1024 * 1024,
  maxInFlightBytes: 256 * 1024 * 1024,
  // A quarter of the engine's: it takes four connections to fill it, and four of the largest frames fit.
  maxInFlightBytesPerWorker: 64 * 1024 * 1024,
  // Half of the engine's: no one client, however many connections it opens, leaves the others nothing.
  maxInFlightPerClient: 50_000,
  maxInFlightBytesPerClient: 128 * 1024 * 1024,
  channelWindowBytes: 1024 * 1024,
  // iii's SDKs send 64 KiB frames; a Python reader (websockets) takes at most 1 MiB.
  maxChannelFrameBytes: 1024 * 1024,
  // iii sweeps a channel whose other side never connects after 5 minutes (CHANNEL_TTL).
  channelOpenTimeoutMs: 5 * 60 * 1000,
  maxChannelsPerWorker: 1024,
  maxChannelBytes: 256 * 1024 * 1024,
  channelReaderStallMs: 5 * 60 * 1000,
  channelOwnerGraceMs: 30_000,
  cluster: null,
  metrics: null,
  telemetry: null,
};

export const ENGINE_VERSION = '0.1.0';
