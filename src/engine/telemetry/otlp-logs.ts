import { SeverityNumber, TraceFlags, type Attributes } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as ProtobufLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import type { Resource } from '@opentelemetry/resources';
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs';
import type { LogEntry } from '../logs.js';
import { ENGINE_VERSION } from '../options.js';
import { grpcExporterOptions, httpExporterOptions } from './otlp-endpoint.js';
import type { TelemetryOptions } from './telemetry-options.js';

/** The engine's log lines (workers' Loggers and its own events) as OpenTelemetry log records. */

const SCOPE = { name: 'svc-engine', version: ENGINE_VERSION };
const SEVERITY: Record<LogEntry['level'], SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
};
const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * `spanIdOf`: the span of the call a line was logged in (from its invocation id, when this engine
 * minted it), so that a backend shows the line under that span; else the line carries its trace only.
 */
export function toLogRecord(e: LogEntry, resource: Resource, spanIdOf: (invocationId: string) => string | undefined): ReadableLogRecord {
  const attributes: Attributes = { 'svc.source': e.source };
  if (e.worker_name !== undefined) attributes['svc.worker'] = e.worker_name;
  if (e.worker_id !== undefined) attributes['svc.worker_id'] = e.worker_id;
  if (e.function_id !== undefined) attributes['svc.function_id'] = e.function_id;
  if (e.invocation_id !== undefined) attributes['svc.invocation_id'] = e.invocation_id;
  // Within max_stored_value_bytes already: the ring stored it.
  if (e.data !== undefined) attributes['svc.data'] = JSON.stringify(e.data);
  const time = millisToHrTime(Date.parse(e.time));
  const spanId = e.invocation_id === undefined ? undefined : spanIdOf(e.invocation_id);
  return {
    hrTime: time,
    hrTimeObserved: time,
    ...(e.trace_id !== undefined && TRACE_ID.test(e.trace_id) ? { spanContext: { traceId: e.trace_id, spanId: spanId ?? '', traceFlags: TraceFlags.SAMPLED } } : {}),
    severityText: e.level.toUpperCase(),
    severityNumber: SEVERITY[e.level],
    body: e.message,
    resource,
    instrumentationScope: SCOPE,
    attributes,
    droppedAttributesCount: 0,
  };
}

/** The official OTLP log exporter for the protocol; what the options leave out it reads from OTEL_EXPORTER_OTLP_* itself. */
export function createLogExporter(o: TelemetryOptions): LogRecordExporter {
  return o.protocol === 'grpc' ? new GrpcLogExporter(grpcExporterOptions(o)) : new ProtobufLogExporter(httpExporterOptions(o, 'v1/logs'));
}
