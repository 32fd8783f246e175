import { exportAllowedByEnv, OTLP_PROTOCOLS, telemetryFromEnv, withEnvDefaults, type OtlpProtocol, type TelemetryOptions } from '../telemetry/telemetry-options.js';
import { unknownKeyMessage } from 'svc-sdk/internal';
import { ConfigFileError, expandEnv, isMapping } from './config-error.js';

/**
 * `engine.telemetry` of config.yaml (docs/observability.md): OTLP export of the engine's spans and log lines.
 * Absent: on when OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) is set, else off; false: off;
 * true or a mapping: on, what it leaves out taken from the OTEL_* environment variables. Header
 * values may name environment variables (`${HONEYCOMB_API_KEY}`).
 */
const TELEMETRY_KEYS = ['endpoint', 'protocol', 'headers', 'service_name', 'sampling_ratio', 'logs', 'metrics', 'metrics_interval_ms', 'max_batch_spans', 'export_interval_ms'];

export function parseTelemetry(file: string, raw: unknown, env: NodeJS.ProcessEnv = process.env): TelemetryOptions | null {
  if (raw === undefined || raw === null) return telemetryFromEnv(env);
  if (raw === false) return null;
  if (raw !== true && !isMapping(raw)) throw new ConfigFileError(file, `engine.telemetry: must be true, false or a mapping (${TELEMETRY_KEYS.join(', ')}), got ${JSON.stringify(raw)}`);
  const given: Partial<TelemetryOptions> = {};
  for (const [k, v] of Object.entries(raw === true ? {} : raw)) {
    const key = `engine.telemetry.${k}`;
    switch (k) {
      case 'endpoint':
        if (typeof v !== 'string' || !/^https?:\/\/[^/\s]+/.test(v)) throw new ConfigFileError(file, `${key}: must be an http:// or https:// URL (the collector's base address), got ${JSON.stringify(v)}`);
        given.endpoint = expandEnv(file, key, v, env);
        break;
      case 'protocol':
        if (typeof v !== 'string' || !(OTLP_PROTOCOLS as readonly string[]).includes(v)) throw new ConfigFileError(file, `${key}: must be one of ${OTLP_PROTOCOLS.join(', ')}, got ${JSON.stringify(v)}`);
        given.protocol = v as OtlpProtocol;
        break;
      case 'headers': {
        if (!isMapping(v)) throw new ConfigFileError(file, `${key}: must be a mapping of header names to strings, got ${JSON.stringify(v)}`);
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(v)) {
          if (typeof value !== 'string') throw new ConfigFileError(file, `${key}.${name}: must be a string, got ${JSON.stringify(value)}`);
          headers[name] = expandEnv(file, `${key}.${name}`, value, env);
        }
        given.headers = headers;
        break;
      }
      case 'service_name':
        if (typeof v !== 'string' || v.trim() === '') throw new ConfigFileError(file, `${key}: must be a non-empty string, got ${JSON.stringify(v)}`);
        given.serviceName = v;
        break;
      case 'sampling_ratio':
        if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new ConfigFileError(file, `${key}: must be a number from 0 to 1, got ${JSON.stringify(v)}`);
        given.samplingRatio = v;
        break;
      case 'logs':
      case 'metrics':
        if (typeof v !== 'boolean') throw new ConfigFileError(file, `${key}: must be true or false, got ${JSON.stringify(v)}`);
        given[k] = v;
        break;
      case 'metrics_interval_ms':
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 100 || v > 3_600_000) throw new ConfigFileError(file, `${key}: must be an integer from 100 to 3600000, got ${JSON.stringify(v)}`);
        given.metricsIntervalMs = v;
        break;
      case 'max_batch_spans':
      case 'export_interval_ms':
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 100_000) throw new ConfigFileError(file, `${key}: must be an integer from 1 to 100000, got ${JSON.stringify(v)}`);
        if (k === 'max_batch_spans') given.maxBatchSpans = v;
        else given.exportIntervalMs = v;
        break;
      default:
        throw new ConfigFileError(file, `${key}: ${unknownKeyMessage(k, TELEMETRY_KEYS)}`);
    }
  }
  return exportAllowedByEnv(env) ? withEnvDefaults(given, env) : null;
}
