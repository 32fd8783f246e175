/**
 * engine.telemetry (docs/observability.md): OTLP export of the engine's spans and log lines. What config.yaml
 * leaves out is taken from the OpenTelemetry environment variables, as the OpenTelemetry
 * specification says (the exporters read OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT,
 * certificates themselves; protocol, service name and sampler are read here).
 */

export type OtlpProtocol = 'http/protobuf' | 'grpc';
export const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'grpc'];

export interface TelemetryOptions {
  /** Base URL of the collector (`http://collector:4318`; grpc: `http://collector:4317`); undefined: from the environment, else the exporter's default (localhost). */
  endpoint?: string;
  protocol: OtlpProtocol;
  /** Sent with every export (an API key of a hosted backend); undefined: OTEL_EXPORTER_OTLP_HEADERS. */
  headers?: Record<string, string>;
  serviceName: string;
  /** Fraction of traces exported, 0–1, by trace id: every span of a trace is exported, or none. */
  samplingRatio: number;
  /** Spans per export request. */
  maxBatchSpans: number;
  /** How often the rings are read for new spans and log lines (ms). */
  exportIntervalMs: number;
  /** Export the log lines too (workers' Loggers and the engine's own events), with their trace ids. */
  logs: boolean;
  /** Export the engine's metrics too (what /metrics shows), every metricsIntervalMs. */
  metrics: boolean;
  metricsIntervalMs: number;
}

export const DEFAULT_TELEMETRY: Omit<TelemetryOptions, 'endpoint' | 'headers'> = {
  protocol: 'http/protobuf',
  serviceName: 'svc-engine',
  samplingRatio: 1,
  maxBatchSpans: 512,
  exportIntervalMs: 1000,
  logs: true,
  metrics: true,
  metricsIntervalMs: 60_000,
};

/**
 * The engine's telemetry when config.yaml says nothing of it: on when the environment names a
 * collector (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), off otherwise
 * and whenever OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export function telemetryFromEnv(env: NodeJS.ProcessEnv): TelemetryOptions | null {
  if (!exportAllowedByEnv(env)) return null;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return null;
  return withEnvDefaults({}, env);
}

/** OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn export off, whatever the file says. */
export function exportAllowedByEnv(env: NodeJS.ProcessEnv): boolean {
  return env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true' && env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() !== 'none';
}

/** OTEL_LOGS_EXPORTER=none keeps the log lines home; OTEL_METRICS_EXPORTER=none the metrics. */
function allowedByEnv(env: NodeJS.ProcessEnv, signal: 'LOGS' | 'METRICS'): boolean {
  return env[`OTEL_${signal}_EXPORTER`]?.trim().toLowerCase() !== 'none';
}

/** What config.yaml gave, completed from the environment, then the defaults. */
export function withEnvDefaults(given: Partial<TelemetryOptions>, env: NodeJS.ProcessEnv): TelemetryOptions {
  const envProtocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  const envRatio = samplerRatioFromEnv(env);
  const envInterval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return {
    ...DEFAULT_TELEMETRY,
    ...(envProtocol && (OTLP_PROTOCOLS as readonly string[]).includes(envProtocol) ? { protocol: envProtocol as OtlpProtocol } : {}),
    ...(env.OTEL_SERVICE_NAME?.trim() ? { serviceName: env.OTEL_SERVICE_NAME.trim() } : {}),
    ...(envRatio !== undefined ? { samplingRatio: envRatio } : {}),
    ...(Number.isInteger(envInterval) && envInterval > 0 ? { metricsIntervalMs: envInterval } : {}),
    ...given,
    logs: (given.logs ?? true) && allowedByEnv(env, 'LOGS'),
    metrics: (given.metrics ?? true) && allowedByEnv(env, 'METRICS'),
  };
}

/** OTEL_TRACES_SAMPLER=traceidratio or parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG; always_off is 0. */
function samplerRatioFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (sampler === 'always_off' || sampler === 'parentbased_always_off') return 0;
  if (sampler !== 'traceidratio' && sampler !== 'parentbased_traceidratio') return undefined;
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG);
  return Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
}

/**
 * The line the daemon prints at start when export is on, beside the metrics one, so that an
 * operator sees where spans go before the first failure says so: `telemetry: OTLP export of spans,
 * log lines and metrics to http://collector:4318 (http/protobuf)`. The address is the one the
 * exporters use: the config's, else the environment's traces endpoint (which the exporter takes
 * as is) or base endpoint, else their default. Passwords and keys in it are hidden by `redact`.
 */
export function describeTelemetry(t: TelemetryOptions, env: NodeJS.ProcessEnv, redact: (address: string) => string): string {
  const signals = ['spans', ...(t.logs ? ['log lines'] : []), ...(t.metrics ? ['metrics'] : [])];
  const what = signals.length === 1 ? signals[0] : `${signals.slice(0, -1).join(', ')} and ${signals.at(-1)}`;
  const where = t.endpoint ?? (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || `http://localhost:${t.protocol === 'grpc' ? 4317 : 4318}`);
  const sampled = t.samplingRatio < 1 ? `, sampling ${t.samplingRatio} of traces` : '';
  return `telemetry: OTLP export of ${what} to ${redact(where)} (${t.protocol}${sampled})`;
}
