/**
 * Logger lines that iii SDKs send as OpenTelemetry logs: a binary WebSocket frame `LOGS` + an OTLP
 * JSON `ExportLogsServiceRequest` (npm: @opentelemetry/otlp-transformer's JSON serializer; PyPI: the
 * same shape, ids as lowercase hex), on the `/otel` socket or the worker's own. Decoded here into
 * the engine's log lines, so `svc logs` and the console show an iii worker's `logger.info` as they
 * show svc-sdk's. The frame comes from an untrusted peer: nothing here throws, every field is
 * checked before use, and the lines of one frame are bounded in count (their bytes are bounded by
 * the frame's size and, per value, by the log ring's budgets where they are stored).
 */
import { cutString, boundValue } from './budgets.js';
import { LINE_OVERHEAD } from './logs.js';
import type { LogRing } from './hot/log-ring.js';
import type { SpanRing } from './hot/span-ring.js';
import { decodeOtlpSpans, OTLP_SPANS_PREFIX } from './otlp-spans-in.js';
import { anyValue, arrayOf, attributes, isObject, otlpRequest } from './otlp-json.js';

/** The prefix of an OTLP-JSON logs frame. (`OTLP`: spans, otlp-spans-in.ts; `MTRC`: metrics, not stored.) */
export const OTLP_LOGS_PREFIX = 'LOGS';
/** Lines taken from one frame; the rest are dropped (a batch of an iii SDK holds at most 512). */
export const MAX_LINES_PER_FRAME = 2048;
const TRACE_ID = /^[0-9a-f]{32}$/;
const ZERO_TRACE_ID = '0'.repeat(32);
/** Attributes of a Logger line that say who and where, not what: not part of its data. */
const NOT_DATA = ['service.name', 'trace_id', 'span_id'];

/** One line decoded from an OTLP log record. */
export interface OtlpLogLine {
  /** debug 0, info 1, warn 2, error 3 (as LogRing takes it). */
  level: number;
  message: string;
  /** The Logger's `service.name` attribute, else the resource's `service.name`. */
  workerName: string | undefined;
  traceId: string | undefined;
  data: unknown;
}

/** OTLP severity numbers: 1–8 trace and debug, 9–12 info, 13–16 warn, 17–24 error and fatal. */
function levelOf(severityNumber: unknown, severityText: unknown): number {
  if (typeof severityNumber === 'number' && severityNumber > 0) {
    return severityNumber <= 8 ? 0 : severityNumber <= 12 ? 1 : severityNumber <= 16 ? 2 : 3;
  }
  const text = typeof severityText === 'string' ? severityText.toLowerCase() : '';
  if (text.startsWith('warn')) return 2;
  if (text.startsWith('err') || text.startsWith('fatal')) return 3;
  if (text.startsWith('debug') || text.startsWith('trace')) return 0;
  return 1;
}

/**
 * The lines of an OTLP-JSON logs request (the frame's bytes after the prefix). Anything that is not
 * one yields no lines; a record without a body is skipped.
 */
export function decodeOtlpLogs(json: string): OtlpLogLine[] {
  const req = otlpRequest(json);
  if (!req) return [];
  const lines: OtlpLogLine[] = [];
  for (const rl of arrayOf(req.resourceLogs)) {
    if (!isObject(rl)) continue;
    const resource = attributes(isObject(rl.resource) ? rl.resource.attributes : undefined);
    const resourceName = typeof resource['service.name'] === 'string' ? resource['service.name'] : undefined;
    for (const sl of arrayOf(rl.scopeLogs)) {
      if (!isObject(sl)) continue;
      for (const r of arrayOf(sl.logRecords)) {
        if (lines.length >= MAX_LINES_PER_FRAME) return lines;
        if (!isObject(r)) continue;
        const body = anyValue(r.body);
        if (body === null || body === undefined) continue;
        const attrs = attributes(r.attributes);
        const name = attrs['service.name'];
        // npm's Logger repeats the record's ids as attributes: they are the line's trace id, not its data.
        const attrTraceId = attrs.trace_id;
        for (const k of NOT_DATA) delete attrs[k];
        // The Logger's structured data travels as the attribute log.data; other attributes are kept as data too.
        const data = 'log.data' in attrs && Object.keys(attrs).length === 1 ? attrs['log.data'] : Object.keys(attrs).length > 0 ? attrs : undefined;
        const rawTraceId = typeof r.traceId === 'string' && r.traceId !== '' ? r.traceId : attrTraceId;
        const traceId = typeof rawTraceId === 'string' ? rawTraceId.toLowerCase() : undefined;
        lines.push({
          level: levelOf(r.severityNumber, r.severityText),
          message: typeof body === 'string' ? body : JSON.stringify(body),
          workerName: typeof name === 'string' && name !== '' ? name : resourceName,
          traceId: traceId !== undefined && TRACE_ID.test(traceId) && traceId !== ZERO_TRACE_ID ? traceId : undefined,
          data,
        });
      }
    }
  }
  return lines;
}

/**
 * Store one telemetry frame: its lines (`LOGS` + OTLP JSON) in the log ring, its spans (`OTLP` +
 * OTLP JSON) in the trace ring (none when tracing is off); metrics, and a frame over
 * `maxFrameBytes`, are ignored. Values over `maxValue` are cut with a marker, as svc-sdk's are.
 * `worker`: the connection the frame came on, when it is a worker's own (the `/otel` socket
 * belongs to no worker: its lines and spans are named by their `service.name`).
 */
export function storeTelemetryFrame(
  frame: Buffer,
  sinks: { logs: LogRing; traces: SpanRing | null },
  limits: { maxValue: number; maxFrameBytes: number },
  worker?: { id: string; name: string },
): void {
  if (frame.length <= OTLP_LOGS_PREFIX.length || frame.length > limits.maxFrameBytes) return;
  const prefix = frame.toString('latin1', 0, OTLP_LOGS_PREFIX.length);
  if (prefix === OTLP_SPANS_PREFIX) {
    if (sinks.traces) for (const span of decodeOtlpSpans(frame.toString('utf8', OTLP_SPANS_PREFIX.length), limits.maxValue, worker)) sinks.traces.add(span);
    return;
  }
  if (prefix !== OTLP_LOGS_PREFIX) return;
  const logs = sinks.logs;
  const maxValue = limits.maxValue;
  const ms = Date.now();
  for (const line of decodeOtlpLogs(frame.toString('utf8', OTLP_LOGS_PREFIX.length))) {
    const text = cutString(line.message, maxValue, 'message');
    const bounded = boundValue(line.data, maxValue, 'data');
    const size = text.length + bounded.size + LINE_OVERHEAD;
    logs.addLine(line.level, false, text, worker?.id, worker?.name ?? line.workerName, undefined, undefined, line.traceId, bounded.value, ms, size);
  }
}
