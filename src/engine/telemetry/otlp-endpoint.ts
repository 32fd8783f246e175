import { createEmptyMetadata } from '@opentelemetry/otlp-grpc-exporter-base';
import type { TelemetryOptions } from './telemetry-options.js';

/**
 * The options every official OTLP exporter of one signal gets from engine.telemetry: the
 * collector's address and headers. What they leave out, the exporter reads from
 * OTEL_EXPORTER_OTLP_[SIGNAL_]* itself.
 */

/** http/protobuf: the base endpoint (as OTEL_EXPORTER_OTLP_ENDPOINT) with the signal's path appended. */
export function httpExporterOptions(o: TelemetryOptions, path: 'v1/traces' | 'v1/logs' | 'v1/metrics'): { url?: string; headers?: Record<string, string> } {
  return { ...(o.endpoint ? { url: `${o.endpoint.replace(/\/+$/, '')}/${path}` } : {}), ...(o.headers ? { headers: o.headers } : {}) };
}

/** grpc: the endpoint as given, headers as gRPC metadata. */
export function grpcExporterOptions(o: TelemetryOptions): { url?: string; metadata?: ReturnType<typeof createEmptyMetadata> } {
  let metadata;
  if (o.headers) {
    metadata = createEmptyMetadata();
    for (const [k, v] of Object.entries(o.headers)) metadata.set(k, v);
  }
  return { ...(o.endpoint ? { url: o.endpoint } : {}), ...(metadata ? { metadata } : {}) };
}
