import { createEmptyMetadata } from '@opentelemetry/otlp-grpc-exporter-base';
import type { TelemetryOptions } from './telemetry-options.js';

/**
 * The options every official OTLP exporter of one signal gets from engine.telemetry: the
 * collector's address and headers. What they leave out, the exporter reads from
 * OTEL_EXPORTER_OTLP_[SIGNAL_]* itself.
 */

/**
 * How long one export request may take. The exporters' own default (10 s) outlives the engine's
 * stop budget: a collector that accepts and never answers kept the stopped daemon's process alive
 * for seconds after "engine stopped". OTEL_EXPORTER_OTLP_[SIGNAL_]TIMEOUT still wins when set.
 */
export const EXPORT_TIMEOUT_MS = 2000;

function timeoutMillis(): { timeoutMillis?: number } {
  const fromEnv = Object.keys(process.env).some((k) => /^OTEL_EXPORTER_OTLP_(?:\w+_)?TIMEOUT$/.test(k));
  return fromEnv ? {} : { timeoutMillis: EXPORT_TIMEOUT_MS };
}

/** http/protobuf: the base endpoint (as OTEL_EXPORTER_OTLP_ENDPOINT) with the signal's path appended. */
export function httpExporterOptions(o: TelemetryOptions, path: 'v1/traces' | 'v1/logs' | 'v1/metrics'): { url?: string; headers?: Record<string, string>; timeoutMillis?: number } {
  return { ...(o.endpoint ? { url: `${o.endpoint.replace(/\/+$/, '')}/${path}` } : {}), ...(o.headers ? { headers: o.headers } : {}), ...timeoutMillis() };
}

/** grpc: the endpoint as given, headers as gRPC metadata. */
export function grpcExporterOptions(o: TelemetryOptions): { url?: string; metadata?: ReturnType<typeof createEmptyMetadata>; timeoutMillis?: number } {
  let metadata;
  if (o.headers) {
    metadata = createEmptyMetadata();
    for (const [k, v] of Object.entries(o.headers)) metadata.set(k, v);
  }
  return { ...(o.endpoint ? { url: o.endpoint } : {}), ...(metadata ? { metadata } : {}), ...timeoutMillis() };
}
