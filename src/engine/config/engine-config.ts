import { unknownKeyMessage } from 'svc-sdk/internal';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions } from '../options.js';
import { normalizeOrigin } from '../origin.js';
import { parseAuth } from './auth-config.js';
import { parseCluster } from './cluster-config.js';
import { ConfigFileError, isMapping } from './config-error.js';
import { parseMetrics } from './metrics-config.js';
import { parseTelemetry } from './telemetry-config.js';

/**
 * config.yaml's `engine:` block → EngineOptions: every key checked, unknown keys refused, absent
 * keys taking DEFAULT_ENGINE_OPTIONS. The rest of the file (YAML, `workers:`) is read by
 * src/daemon/config-file.ts.
 */

type ValueKind = 'port' | 'host' | 'positive' | 'bool' | 'origins' | 'conflicts';

/** engine: key → EngineOptions field, with the check each value must pass. */
export const ENGINE_KEYS: Readonly<Record<string, { field: keyof EngineOptions; kind: ValueKind }>> = {
  host: { field: 'host', kind: 'host' },
  port: { field: 'port', kind: 'port' },
  max_frame_bytes: { field: 'maxFrameBytes', kind: 'positive' },
  invocation_timeout_ms: { field: 'invocationTimeoutMs', kind: 'positive' },
  max_invocation_timeout_ms: { field: 'maxInvocationTimeoutMs', kind: 'positive' },
  shutdown_grace_ms: { field: 'shutdownGraceMs', kind: 'positive' },
  ping_interval_ms: { field: 'pingIntervalMs', kind: 'positive' },
  log_buffer_size: { field: 'logBufferSize', kind: 'positive' },
  print_events: { field: 'printEvents', kind: 'bool' },
  tracing: { field: 'tracing', kind: 'bool' },
  trace_buffer_size: { field: 'traceBufferSize', kind: 'positive' },
  allowed_origins: { field: 'allowedOrigins', kind: 'origins' },
  namespace_conflicts: { field: 'namespaceConflicts', kind: 'conflicts' },
};

/** engine.limits: key → EngineOptions field; every one a positive integer. */
export const LIMIT_KEYS: Readonly<Record<string, keyof EngineOptions>> = {
  max_connections: 'maxConnections',
  max_in_flight_per_worker: 'maxInFlightPerWorker',
  max_in_flight_total: 'maxInFlightTotal',
  handshake_timeout_ms: 'handshakeTimeoutMs',
  max_registrations_per_worker: 'maxRegistrationsPerWorker',
  max_stored_value_bytes: 'maxStoredValueBytes',
  max_stored_bytes_per_worker: 'maxStoredBytesPerWorker',
  max_log_bytes: 'maxLogBytes',
  max_trace_bytes: 'maxTraceBytes',
  max_send_buffer_bytes: 'maxSendBufferBytes',
  slow_consumer_ms: 'slowConsumerMs',
  max_partial_frame_bytes: 'maxPartialFrameBytes',
  max_in_flight_bytes: 'maxInFlightBytes',
  max_in_flight_bytes_per_worker: 'maxInFlightBytesPerWorker',
  max_in_flight_per_client: 'maxInFlightPerClient',
  max_in_flight_bytes_per_client: 'maxInFlightBytesPerClient',
  channel_window_bytes: 'channelWindowBytes',
  max_channel_frame_bytes: 'maxChannelFrameBytes',
  channel_open_timeout_ms: 'channelOpenTimeoutMs',
  max_channels_per_worker: 'maxChannelsPerWorker',
  max_channel_bytes: 'maxChannelBytes',
  channel_reader_stall_ms: 'channelReaderStallMs',
  channel_owner_grace_ms: 'channelOwnerGraceMs',
};

/** The blocks inside `engine:` with parsers of their own. */
const NESTED_KEYS = ['auth', 'limits', 'cluster', 'metrics', 'telemetry'];

/**
 * Parse the `engine:` block (`raw` as YAML gave it; absent is `{}`). Throws ConfigFileError naming
 * `file` and the key. `${ENV}` in token values and cluster settings is read from `env`.
 */
export function parseEngineConfig(file: string, raw: unknown, env: NodeJS.ProcessEnv = process.env): EngineOptions {
  const engine: EngineOptions = { ...DEFAULT_ENGINE_OPTIONS };
  const block = raw ?? {};
  if (!isMapping(block)) throw new ConfigFileError(file, '"engine" must be a mapping');
  for (const [key, value] of Object.entries(block)) {
    if (key === 'auth') {
      engine.tokens = parseAuth(file, value, env);
      continue;
    }
    if (key === 'limits') {
      parseLimits(file, value, engine);
      continue;
    }
    if (key === 'cluster') {
      engine.cluster = parseCluster(file, value, env);
      continue;
    }
    if (key === 'telemetry') {
      if (value !== undefined && value !== null) engine.telemetry = parseTelemetry(file, value, env);
      continue;
    }
    if (key === 'metrics') {
      engine.metrics = parseMetrics(file, value);
      continue;
    }
    const spec = Object.hasOwn(ENGINE_KEYS, key) ? ENGINE_KEYS[key] : undefined;
    if (!spec) throw new ConfigFileError(file, `engine.${key}: ${unknownKeyMessage(key, [...Object.keys(ENGINE_KEYS), ...NESTED_KEYS])}`);
    (engine as unknown as Record<string, unknown>)[spec.field] = checkValue(file, `engine.${key}`, spec.kind, value);
  }
  // Without engine.telemetry, the OTEL_* environment decides (telemetry-config.ts).
  if (!Object.hasOwn(block, 'telemetry') || block.telemetry === null) engine.telemetry = engine.tracing ? parseTelemetry(file, undefined, env) : null;
  if (engine.telemetry && !engine.tracing && Object.hasOwn(block, 'telemetry')) {
    throw new ConfigFileError(file, 'engine.telemetry: exports the spans engine.tracing records, but engine.tracing is false');
  }
  return engine;
}

function parseLimits(file: string, raw: unknown, into: EngineOptions): void {
  if (raw === undefined || raw === null) return;
  if (!isMapping(raw)) throw new ConfigFileError(file, 'engine.limits: must be a mapping');
  for (const [k, v] of Object.entries(raw)) {
    const field = Object.hasOwn(LIMIT_KEYS, k) ? LIMIT_KEYS[k] : undefined;
    if (!field) throw new ConfigFileError(file, `engine.limits.${k}: ${unknownKeyMessage(k, Object.keys(LIMIT_KEYS))}`);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new ConfigFileError(file, `engine.limits.${k}: must be a positive integer, got ${JSON.stringify(v)}`);
    (into as unknown as Record<string, unknown>)[field] = v;
  }
}

function checkValue(file: string, key: string, kind: ValueKind, v: unknown): unknown {
  switch (kind) {
    case 'port':
      if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535) return v;
      throw new ConfigFileError(file, `${key}: must be an integer port from 0 to 65535, got ${JSON.stringify(v)}`);
    case 'host':
      if (typeof v === 'string' && v.length > 0) return v;
      throw new ConfigFileError(file, `${key}: must be a host name or address, got ${JSON.stringify(v)}`);
    case 'positive':
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v;
      throw new ConfigFileError(file, `${key}: must be a positive number, got ${JSON.stringify(v)}`);
    case 'bool':
      if (typeof v === 'boolean') return v;
      throw new ConfigFileError(file, `${key}: must be true or false, got ${JSON.stringify(v)}`);
    case 'conflicts':
      if (v === 'replicas' || v === 'exclusive') return v;
      throw new ConfigFileError(file, `${key}: must be "replicas" (the default: workers exporting one function id share its calls) or "exclusive" (iii 0.23's registrationrejected), got ${JSON.stringify(v)}`);
    case 'origins': {
      const hint = 'must be a list of web origins like "https://app.example.com" (scheme, host and port; no path, no "*")';
      if (!Array.isArray(v)) throw new ConfigFileError(file, `${key}: ${hint}, got ${JSON.stringify(v)}`);
      return v.map((o: unknown, i) => {
        const normal = typeof o === 'string' ? normalizeOrigin(o) : null;
        if (normal === null) throw new ConfigFileError(file, `${key}[${i}]: ${hint}, got ${JSON.stringify(o)}`);
        return normal;
      });
    }
  }
}
