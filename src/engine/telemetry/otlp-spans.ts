import { SpanKind, SpanStatusCode, TraceFlags, type Attributes } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { ATTR_ERROR_TYPE, ATTR_EXCEPTION_MESSAGE, ATTR_EXCEPTION_STACKTRACE, ATTR_EXCEPTION_TYPE, ATTR_RPC_METHOD, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { ENGINE_VERSION } from '../options.js';
import type { Span } from '../traces.js';
import { grpcExporterOptions, httpExporterOptions } from './otlp-endpoint.js';
import type { TelemetryOptions } from './telemetry-options.js';

/**
 * The engine's spans as OpenTelemetry spans, and the official OTLP exporter that sends them. One
 * span per routed call, named by its function id, a child of the caller's span (traceparent).
 */

const SCOPE = { name: 'svc-engine', version: ENGINE_VERSION };

/** The resource every span of this engine carries: service.name (engine.telemetry.service_name) and version, the engine run. */
export function engineResource(serviceName: string, runId: string): Resource {
  return resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, [ATTR_SERVICE_VERSION]: ENGINE_VERSION, 'service.instance.id': runId });
}

export function toReadableSpan(s: Span, resource: Resource): ReadableSpan {
  const attributes: Attributes = {
    'rpc.system': 'svc',
    [ATTR_RPC_METHOD]: s.function_id,
    'svc.function_id': s.function_id,
    'svc.invocation_id': s.invocation_id,
    'svc.caller.worker': s.caller_worker_name,
    'svc.callee.worker': s.callee_worker_name,
    'svc.callee.worker_id': s.callee_worker_id,
    'svc.status': s.status,
  };
  if (s.caller_worker_id !== null) attributes['svc.caller.worker_id'] = s.caller_worker_id;
  if (s.error) attributes[ATTR_ERROR_TYPE] = s.error.code;
  else if (s.status !== 'ok') attributes[ATTR_ERROR_TYPE] = s.status;
  const context = { traceId: s.trace_id, spanId: s.span_id, traceFlags: TraceFlags.SAMPLED };
  const endTime = millisToHrTime(s.start_ms + s.duration_ms);
  return {
    name: s.function_id,
    // The engine serves the call on behalf of its callee: the server side of the caller's request.
    kind: SpanKind.SERVER,
    spanContext: () => context,
    ...(s.parent_span_id ? { parentSpanContext: { traceId: s.trace_id, spanId: s.parent_span_id, traceFlags: TraceFlags.SAMPLED, isRemote: true } } : {}),
    startTime: millisToHrTime(s.start_ms),
    endTime,
    duration: millisToHrTime(s.duration_ms),
    status: s.status === 'ok' ? { code: SpanStatusCode.UNSET } : { code: SpanStatusCode.ERROR, message: s.error ? `${s.error.code}: ${s.error.message}` : s.status },
    attributes,
    links: [],
    // A failed call as OpenTelemetry's exception event, so trace UIs show the code, message and the
    // callee's stack (Jaeger's and Tempo's error views read these, not the status message).
    events: s.status === 'ok' ? [] : [{ name: 'exception', time: endTime, attributes: exceptionAttributes(s) }],
    ended: true,
    resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

function exceptionAttributes(s: Span): Attributes {
  if (!s.error) return { [ATTR_EXCEPTION_TYPE]: s.status, [ATTR_EXCEPTION_MESSAGE]: `The call of ${s.function_id} ended: ${s.status}` };
  return {
    [ATTR_EXCEPTION_TYPE]: s.error.code,
    [ATTR_EXCEPTION_MESSAGE]: s.error.message,
    ...(s.error.stacktrace ? { [ATTR_EXCEPTION_STACKTRACE]: s.error.stacktrace } : {}),
  };
}

/**
 * The official OTLP span exporter for the protocol. What the options leave out (endpoint, headers,
 * timeout, certificates) the exporter reads from OTEL_EXPORTER_OTLP_* itself.
 */
export function createSpanExporter(o: TelemetryOptions): SpanExporter {
  return o.protocol === 'grpc' ? new GrpcTraceExporter(grpcExporterOptions(o)) : new ProtobufTraceExporter(httpExporterOptions(o, 'v1/traces'));
}
