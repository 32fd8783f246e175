import { DEFAULT_METRICS_OPTIONS, type MetricsOptions } from '../metrics/metrics-server.js';
import { unknownKeyMessage } from 'svc-sdk/internal';
import { ConfigFileError, isMapping } from './config-error.js';

/**
 * `engine.metrics` of config.yaml (docs/observability.md): absent, null or false is off; `true` or
 * a mapping serves Prometheus metrics on http://<host>:<port>/metrics (127.0.0.1:9464 by default).
 */
const METRICS_KEYS = ['host', 'port', 'max_function_series', 'max_error_code_series'];

export function parseMetrics(file: string, raw: unknown): MetricsOptions | null {
  if (raw === undefined || raw === null || raw === false) return null;
  if (raw === true) return { ...DEFAULT_METRICS_OPTIONS };
  if (!isMapping(raw)) throw new ConfigFileError(file, `engine.metrics: must be true, false or a mapping (${METRICS_KEYS.join(', ')}), got ${JSON.stringify(raw)}`);
  const out: MetricsOptions = { ...DEFAULT_METRICS_OPTIONS };
  for (const [k, v] of Object.entries(raw)) {
    switch (k) {
      case 'host':
        if (typeof v !== 'string' || v.length === 0) throw new ConfigFileError(file, `engine.metrics.host: must be a host name or address, got ${JSON.stringify(v)}`);
        out.host = v;
        break;
      case 'port':
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 65535) throw new ConfigFileError(file, `engine.metrics.port: must be an integer port from 0 to 65535, got ${JSON.stringify(v)}`);
        out.port = v;
        break;
      case 'max_function_series':
      case 'max_error_code_series':
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 100_000) throw new ConfigFileError(file, `engine.metrics.${k}: must be an integer from 1 to 100000, got ${JSON.stringify(v)}`);
        if (k === 'max_function_series') out.maxFunctionSeries = v;
        else out.maxErrorCodeSeries = v;
        break;
      default:
        throw new ConfigFileError(file, `engine.metrics.${k}: ${unknownKeyMessage(k, METRICS_KEYS)}`);
    }
  }
  return out;
}
