/**
 * svc-http's configuration (`config:` of the svc-http entry in config.yaml, handed to the process as
 * JSON in SVC_WORKER_CONFIG). Unknown keys are refused so a typo never silently means a default.
 */
import { unknownKeyMessage } from 'svc-sdk/internal';
import { SvcError } from 'svc-sdk';

export interface CorsConfig {
  /** `['*']` allows any origin; otherwise exact origins such as `https://app.example.com`. */
  origins: string[];
  /** Allowed methods in preflight answers (default: the common ones). */
  methods?: string[];
  /** Allowed request headers (default: whatever the preflight asks for). */
  headers?: string[];
  /** Response headers scripts may read. */
  expose_headers?: string[];
  /** Send Access-Control-Allow-Credentials; with `*` the request's origin is echoed instead. */
  credentials?: boolean;
  /** Seconds a browser may cache a preflight answer. */
  max_age?: number;
}

export interface HttpWorkerConfig {
  host: string;
  port: number;
  cors: CorsConfig | null;
  /** Largest request body accepted (after decompression); larger gets 413. */
  bodyLimitBytes: number;
  /** Largest request body of a streaming route (after decompression); larger gets 413. */
  streamBodyLimitBytes: number;
  /**
   * Deadline of each call of a bound function; later gets 504. Unset: the engine's default
   * (`engine.invocation_timeout_ms`).
   */
  timeoutMs?: number;
  /**
   * TCP connections open at once; more are closed as they arrive (Node's server.maxConnections), so
   * that a flood of idle or slow connections holds a bounded amount of memory and descriptors.
   */
  maxConnections: number;
  /**
   * Longest time to receive a request whose body svc-http reads (every route but a streaming one,
   * whose body streams to the function for as long as its call runs: `timeoutMs`); later gets 408.
   */
  requestTimeoutMs: number;
  /** Send one log line per request to the engine's logs. */
  requestLog: boolean;
  /**
   * Which routes' payloads carry the `request_body` and `response` channel refs: `routes` (those
   * bound with `stream: true`) or `all` (every route, for iii programs that stream with iii's helpers).
   */
  streaming: 'routes' | 'all';
  /**
   * Send a failed function's own error message in its 500 response. Off: a generic message with the
   * code and the call's trace_id (the message can hold SQL, paths or secrets); on for development.
   */
  exposeErrors: boolean;
}

/** 1 GiB: a streamed upload is never held, but a budget is still a budget. */
export const DEFAULT_STREAM_BODY_LIMIT = 1024 ** 3;

export const DEFAULT_HTTP_CONFIG: HttpWorkerConfig = {
  host: '127.0.0.1',
  port: 3111,
  cors: null,
  bodyLimitBytes: 1024 * 1024,
  streamBodyLimitBytes: DEFAULT_STREAM_BODY_LIMIT,
  // As the engine's engine.limits.max_connections.
  maxConnections: 10_000,
  // Node's own default for a whole request (server.requestTimeout), which svc-http turns off (worker.ts).
  requestTimeoutMs: 300_000,
  requestLog: true,
  streaming: 'routes',
  exposeErrors: false,
};

/** svc-http's config (SVC_WORKER_CONFIG) is not valid: `invalid_config`, the message names the key. */
export class HttpConfigError extends SvcError {
  declare readonly code: 'invalid_config';
  constructor(message: string) {
    super('invalid_config', message);
    this.name = 'HttpConfigError';
  }
}

const KEYS = ['host', 'port', 'cors', 'body_limit_bytes', 'timeout_ms', 'request_log', 'streaming', 'stream_body_limit_bytes', 'max_connections', 'request_timeout_ms', 'expose_errors'];
const CORS_KEYS = ['origins', 'methods', 'headers', 'expose_headers', 'credentials', 'max_age'];

/** Validate the snake_case config object; absent keys take DEFAULT_HTTP_CONFIG. Throws HttpConfigError. */
export function parseHttpWorkerConfig(raw: unknown): HttpWorkerConfig {
  if (raw === undefined || raw === null) return { ...DEFAULT_HTTP_CONFIG };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new HttpConfigError('svc-http config must be an object');
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) {
    if (!KEYS.includes(k)) throw new HttpConfigError(`svc-http config: ${unknownKeyMessage(k, KEYS)}`);
  }
  const out = { ...DEFAULT_HTTP_CONFIG };
  if (c.host !== undefined) {
    if (typeof c.host !== 'string' || c.host.length === 0) throw new HttpConfigError('svc-http config: host must be a non-empty string');
    out.host = c.host;
  }
  if (c.port !== undefined) out.port = int(c.port, 'port', 0, 65535);
  if (c.body_limit_bytes !== undefined) out.bodyLimitBytes = int(c.body_limit_bytes, 'body_limit_bytes', 1, 1024 ** 3);
  if (c.stream_body_limit_bytes !== undefined) out.streamBodyLimitBytes = int(c.stream_body_limit_bytes, 'stream_body_limit_bytes', 1, 2 ** 50);
  if (c.timeout_ms !== undefined) out.timeoutMs = int(c.timeout_ms, 'timeout_ms', 1, 24 * 3600 * 1000);
  if (c.max_connections !== undefined) out.maxConnections = int(c.max_connections, 'max_connections', 1, 1_000_000);
  if (c.request_timeout_ms !== undefined) out.requestTimeoutMs = int(c.request_timeout_ms, 'request_timeout_ms', 1, 24 * 3600 * 1000);
  if (c.request_log !== undefined) {
    if (typeof c.request_log !== 'boolean') throw new HttpConfigError('svc-http config: request_log must be true or false');
    out.requestLog = c.request_log;
  }
  if (c.expose_errors !== undefined) {
    if (typeof c.expose_errors !== 'boolean') throw new HttpConfigError('svc-http config: expose_errors must be true or false');
    out.exposeErrors = c.expose_errors;
  }
  if (c.streaming !== undefined) {
    if (c.streaming !== 'routes' && c.streaming !== 'all') throw new HttpConfigError(`svc-http config: streaming must be "routes" or "all", got ${JSON.stringify(c.streaming)}`);
    out.streaming = c.streaming;
  }
  if (c.cors !== undefined && c.cors !== null && c.cors !== false) out.cors = parseCors(c.cors);
  return out;
}

function parseCors(raw: unknown): CorsConfig {
  if (raw === true) return { origins: ['*'] };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new HttpConfigError('svc-http config: cors must be an object {origins, methods?, headers?, expose_headers?, credentials?, max_age?}');
  }
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) {
    if (!CORS_KEYS.includes(k)) throw new HttpConfigError(`svc-http config: unknown cors key "${k}"; known keys: ${CORS_KEYS.join(', ')}`);
  }
  const out: CorsConfig = { origins: strings(c.origins ?? ['*'], 'cors.origins') };
  if (out.origins.length === 0) throw new HttpConfigError('svc-http config: cors.origins must list at least one origin (or "*")');
  if (c.methods !== undefined) out.methods = strings(c.methods, 'cors.methods').map((m) => m.toUpperCase());
  if (c.headers !== undefined) out.headers = strings(c.headers, 'cors.headers');
  if (c.expose_headers !== undefined) out.expose_headers = strings(c.expose_headers, 'cors.expose_headers');
  if (c.credentials !== undefined) {
    if (typeof c.credentials !== 'boolean') throw new HttpConfigError('svc-http config: cors.credentials must be true or false');
    out.credentials = c.credentials;
  }
  if (c.max_age !== undefined) out.max_age = int(c.max_age, 'cors.max_age', 0, 7 * 24 * 3600);
  return out;
}

function strings(v: unknown, name: string): string[] {
  if (typeof v === 'string') return [v];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x.length > 0)) {
    throw new HttpConfigError(`svc-http config: ${name} must be a list of non-empty strings`);
  }
  return v as string[];
}

function int(v: unknown, name: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new HttpConfigError(`svc-http config: ${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}
