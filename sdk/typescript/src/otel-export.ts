import type { Context, Span, Tracer } from '@opentelemetry/api';
import type { LoggerProvider } from '@opentelemetry/sdk-logs';
import type { Sampler } from '@opentelemetry/sdk-trace';
import { SvcError } from './errors.js';
import type { LogLevel } from './protocol/log-rows.js';
import type { ErrorBody } from './protocol/messages.js';

/**
 * This worker's own spans, exported with the standard OpenTelemetry packages when the user turns
 * export on (WorkerOptions.otel, or OTEL_TRACES_EXPORTER=otlp): one SERVER span per handled call,
 * a child of the traceparent the engine sent, and one CLIENT span per outgoing call, whose id is
 * the traceparent sent to the engine (so the engine's span of that call is its child); and its
 * Logger lines, with the trace and span ids of the call they were written in.
 *
 * The packages are optional peer dependencies, loaded here with dynamic import only when export is
 * on: a worker without it loads none of them, and its calls pay one `if (tracer)` branch each.
 */

/** The packages export needs; named in the error when one is missing. */
export const OTEL_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/sdk-logs',
  '@opentelemetry/exporter-logs-otlp-proto',
] as const;

/** One span of this worker's, open until `end`. `traceparent` names it, for the calls made under it. */
export interface OpenSpan {
  readonly traceparent: string;
  end(error?: ErrorBody | Error): void;
}

/** What Invoker and Caller use: a span per handled call and per outgoing call; Worker: log lines. */
export interface SpanTracer {
  server(functionId: string, traceparent: string | undefined, workerName: string): OpenSpan;
  client(functionId: string, traceparent: string | undefined): OpenSpan;
  /** A Logger line; `traceparent`: the call it was written in. No-op with OTEL_LOGS_EXPORTER=none. */
  log(level: LogLevel, message: string, data: unknown, functionId: string | undefined, traceparent: string | undefined): void;
  /** Send what is buffered and stop (Worker.shutdown). */
  shutdown(): Promise<void>;
}

/**
 * Whether export is on: the option when given, else the OpenTelemetry environment (an explicit
 * OTEL_TRACES_EXPORTER=otlp), unless OTEL_SDK_DISABLED=true.
 */
export function otelEnabled(option: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (option !== undefined) return option;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return (env.OTEL_TRACES_EXPORTER ?? '').split(',').some((e) => e.trim().toLowerCase() === 'otlp');
}

/** OTEL_BSP_ / OTEL_BLRP_SCHEDULE_DELAY (ms between exports), which the batch processors no longer read themselves. */
function batchDelay(variable: 'OTEL_BSP_SCHEDULE_DELAY' | 'OTEL_BLRP_SCHEDULE_DELAY'): { scheduledDelayMillis?: number } {
  const ms = Number(process.env[variable]);
  return ms > 0 && Number.isFinite(ms) ? { scheduledDelayMillis: ms } : {};
}

type SdkTrace = typeof import('@opentelemetry/sdk-trace');

/**
 * The sampler OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG name, as the OpenTelemetry spec defines
 * them (the TracerProvider no longer reads them itself): `always_on`, `always_off`, `traceidratio`,
 * and their `parentbased_` forms; unset means `parentbased_always_on`. An unknown name or a ratio
 * outside 0..1 is reported through `warn` and the default used, as the spec says.
 */
export function samplerFromEnv(sdk: SdkTrace, env: NodeJS.ProcessEnv = process.env, warn: (message: string) => void = () => {}): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? '').trim().toLowerCase() || 'parentbased_always_on';
  const ratio = (): number => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG;
    const r = raw === undefined || raw.trim() === '' ? 1 : Number(raw);
    if (Number.isFinite(r) && r >= 0 && r <= 1) return r;
    warn(`OTEL_TRACES_SAMPLER_ARG=${JSON.stringify(raw)} is not a ratio between 0 and 1; using 1`);
    return 1;
  };
  const root = (base: string): Sampler | undefined =>
    base === 'always_on' ? new sdk.AlwaysOnSampler() : base === 'always_off' ? new sdk.AlwaysOffSampler() : base === 'traceidratio' ? new sdk.TraceIdRatioBasedSampler(ratio()) : undefined;
  const parentBased = name.startsWith('parentbased_');
  const chosen = root(parentBased ? name.slice('parentbased_'.length) : name);
  if (!chosen) {
    warn(`OTEL_TRACES_SAMPLER=${JSON.stringify(env.OTEL_TRACES_SAMPLER)} is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio; using parentbased_always_on`);
    return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
  return parentBased ? new sdk.ParentBasedSampler({ root: chosen }) : chosen;
}

/** OpenTelemetry's SeverityNumber of each Logger level (DEBUG, INFO, WARN, ERROR). */
const SEVERITY: Record<LogLevel, number> = { debug: 5, info: 9, warn: 13, error: 17 };

function jsonOrString(data: unknown): string {
  try {
    return JSON.stringify(data) ?? String(data);
  } catch {
    return String(data);
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Load the packages and start a tracer provider with a batching OTLP (http/protobuf) exporter and
 * the sampler of OTEL_TRACES_SAMPLER (samplerFromEnv), and
 * a logger provider beside it (unless OTEL_LOGS_EXPORTER=none). The exporters read their endpoint,
 * headers and timeout from OTEL_EXPORTER_OTLP_[TRACES_|LOGS_]* themselves;
 * service.name is OTEL_SERVICE_NAME, else the worker's name. Rejects with `otel_unavailable`,
 * naming the packages to install, when one is missing.
 */
export async function loadSpanTracer(workerName: string): Promise<SpanTracer> {
  let mods;
  try {
    mods = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/exporter-trace-otlp-proto'),
      import('@opentelemetry/sdk-logs'),
      import('@opentelemetry/exporter-logs-otlp-proto'),
    ]);
  } catch (e) {
    throw new SvcError('otel_unavailable', `OpenTelemetry export is on (WorkerOptions.otel or OTEL_TRACES_EXPORTER=otlp) but its packages could not be loaded (${(e as Error).message}); install ${OTEL_PACKAGES.join(' ')}`);
  }
  const [api, resources, sdk, exporter, sdkLogs, logExporter] = mods;
  const resource = resources.resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? workerName });
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplerFromEnv(sdk, process.env, (m) => process.emitWarning(m, { code: 'SVC_OTEL_SAMPLER' })),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new exporter.OTLPTraceExporter(), ...batchDelay('OTEL_BSP_SCHEDULE_DELAY') })],
  });
  const tracer: Tracer = provider.getTracer('svc-sdk');
  const logsOn = !(process.env.OTEL_LOGS_EXPORTER ?? '').split(',').some((e) => e.trim().toLowerCase() === 'none');
  const logProvider = logsOn
    ? new sdkLogs.LoggerProvider({ resource, processors: [new sdkLogs.BatchLogRecordProcessor({ exporter: new logExporter.OTLPLogExporter(), ...batchDelay('OTEL_BLRP_SCHEDULE_DELAY') })] })
    : undefined;
  const logger: ReturnType<LoggerProvider['getLogger']> | undefined = logProvider?.getLogger('svc-sdk');

  const parentContext = (traceparent: string | undefined): Context => {
    const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
    if (!m) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true });
  };
  const open = (span: Span): OpenSpan => {
    const sc = span.spanContext();
    return {
      traceparent: `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`,
      end(error) {
        if (error) {
          const code = (error as { code?: unknown }).code;
          if (typeof code === 'string') span.setAttribute('error.type', code);
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
        }
        span.end();
      },
    };
  };
  return {
    server(functionId, traceparent, name) {
      const attributes = { 'rpc.system': 'svc', 'rpc.method': functionId, 'svc.function_id': functionId, 'svc.worker': name };
      return open(tracer.startSpan(functionId, { kind: api.SpanKind.SERVER, attributes }, parentContext(traceparent)));
    },
    client(functionId, traceparent) {
      const attributes = { 'rpc.system': 'svc', 'rpc.method': functionId, 'svc.function_id': functionId };
      return open(tracer.startSpan(functionId, { kind: api.SpanKind.CLIENT, attributes }, parentContext(traceparent)));
    },
    log(level, message, data, functionId, traceparent) {
      if (!logger) return;
      const attributes: Record<string, string> = { 'svc.worker': workerName };
      if (functionId !== undefined) attributes['svc.function_id'] = functionId;
      if (data !== undefined) attributes['svc.data'] = jsonOrString(data);
      logger.emit({ severityNumber: SEVERITY[level], severityText: level.toUpperCase(), body: message, attributes, context: parentContext(traceparent) });
    },
    shutdown: async () => {
      await Promise.all([provider.shutdown(), logProvider?.shutdown()]);
    },
  };
}
