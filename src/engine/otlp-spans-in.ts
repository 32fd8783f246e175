/**
 * Spans that iii SDKs send as OpenTelemetry traces: a binary WebSocket frame `OTLP` + an OTLP JSON
 * `ExportTraceServiceRequest` (npm: @opentelemetry/otlp-transformer's JSON serializer; PyPI: the same
 * shape), on the `/otel` socket or the worker's own. An iii worker records a span around each call
 * it serves (`execute <function>`, a child of the engine's span of that call) and names it as the
 * parent of the calls it makes meanwhile; kept in the engine's trace ring, they join the engine's
 * spans in one tree (`engine::traces::*`, the console).
 *
 * The frame comes from an untrusted peer: nothing here throws, every field is checked before use,
 * spans per frame are bounded, and so is each kept string (the name, a failed span's message);
 * attributes and events are not kept.
 */
import { cutString, head } from './budgets.js';
import { arrayOf, attributes, isObject, otlpRequest } from './otlp-json.js';
import type { Span } from './traces.js';

/** The prefix of an OTLP-JSON traces frame. */
export const OTLP_SPANS_PREFIX = 'OTLP';
/** Spans taken from one frame; the rest are dropped (a batch of an iii SDK holds at most 512). */
export const MAX_SPANS_PER_FRAME = 2048;
/** Characters kept of a span's name (shown as its function id). */
const MAX_NAME_CHARS = 256;
const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
/** OTLP `Status.code`: 2 is ERROR (0 unset, 1 ok). */
const STATUS_ERROR = 2;


function hexId(v: unknown, shape: RegExp, zero: string): string | undefined {
  if (typeof v !== 'string') return undefined;
  const id = v.toLowerCase();
  return shape.test(id) && id !== zero ? id : undefined;
}

/** Epoch milliseconds of an OTLP time (nanoseconds as a decimal string or a number), or NaN. */
function millis(v: unknown): number {
  if (typeof v === 'number') return v / 1e6;
  if (typeof v !== 'string' || !/^[0-9]{1,20}$/.test(v)) return NaN;
  // Milliseconds from the leading digits: a nanosecond count overflows a double's exact range.
  return v.length <= 6 ? Number(v) / 1e6 : Number(v.slice(0, -6)) + Number(v.slice(-6)) / 1e6;
}

function serviceName(resource: unknown): string | undefined {
  const name = isObject(resource) ? attributes(resource.attributes)['service.name'] : undefined;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/**
 * The spans of an OTLP-JSON traces request (the frame's bytes after the prefix), as the engine's
 * spans. `worker`: the connection the frame came on, when it is a worker's own; otherwise a span
 * is named by its resource's `service.name`. A span without valid ids or times is skipped.
 */
export function decodeOtlpSpans(json: string, maxValue: number, worker?: { id: string; name: string }): Span[] {
  const req = otlpRequest(json);
  if (!req) return [];
  const out: Span[] = [];
  for (const rs of arrayOf(req.resourceSpans)) {
    if (!isObject(rs)) continue;
    const name = worker?.name ?? serviceName(rs.resource) ?? 'iii worker';
    const id = worker?.id ?? '';
    for (const ss of arrayOf(rs.scopeSpans)) {
      if (!isObject(ss)) continue;
      for (const s of arrayOf(ss.spans)) {
        if (out.length >= MAX_SPANS_PER_FRAME) return out;
        if (!isObject(s)) continue;
        const traceId = hexId(s.traceId, TRACE_ID, ZERO_TRACE_ID);
        const spanId = hexId(s.spanId, SPAN_ID, ZERO_SPAN_ID);
        const start = millis(s.startTimeUnixNano);
        const end = millis(s.endTimeUnixNano);
        if (!traceId || !spanId || !Number.isFinite(start) || !Number.isFinite(end)) continue;
        const status = isObject(s.status) ? s.status : {};
        const failed = status.code === STATUS_ERROR || status.code === 'STATUS_CODE_ERROR';
        const message = typeof status.message === 'string' && status.message !== '' ? status.message : 'the span ended with an error';
        out.push({
          trace_id: traceId,
          span_id: spanId,
          parent_span_id: hexId(s.parentSpanId, SPAN_ID, ZERO_SPAN_ID) ?? null,
          function_id: typeof s.name === 'string' && s.name !== '' ? head(s.name, MAX_NAME_CHARS) : '(unnamed span)',
          invocation_id: '',
          caller_worker_id: id,
          caller_worker_name: name,
          callee_worker_id: id,
          callee_worker_name: name,
          start_ms: start,
          duration_ms: Math.max(0, end - start),
          status: failed ? 'error' : 'ok',
          error: failed ? { code: 'span_error', message: cutString(message, maxValue, 'error message') } : null,
        });
      }
    }
  }
  return out;
}
