import type { TokenSpec } from '../engine/auth.js';
import type { EngineOptions } from '../engine/options.js';
import { RESERVED_WORKER_NAMES } from '../engine/worker-names.js';
import { ConfigError } from './config.js';

/**
 * `engine.auth` and `engine.limits` of config.yaml. Token values may name environment variables
 * (`token: ${SVC_ADMIN_TOKEN}`), so secrets need not live in the file.
 */

const LIMIT_KEYS: Record<string, keyof EngineOptions> = {
  max_connections: 'maxConnections',
  max_in_flight_per_worker: 'maxInFlightPerWorker',
  max_in_flight_total: 'maxInFlightTotal',
  handshake_timeout_ms: 'handshakeTimeoutMs',
  max_registrations_per_worker: 'maxRegistrationsPerWorker',
  max_stored_value_bytes: 'maxStoredValueBytes',
  max_stored_bytes_per_worker: 'maxStoredBytesPerWorker',
  max_log_bytes: 'maxLogBytes',
  max_trace_bytes: 'maxTraceBytes',
  max_send_buffer_bytes: 'maxSendBufferBytes',
  slow_consumer_ms: 'slowConsumerMs',
  max_in_flight_bytes: 'maxInFlightBytes',
};

const TOKEN_KEYS = ['name', 'token', 'admin', 'call', 'register', 'trigger_types', 'names'];

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `${NAME}` → the environment variable's value; a missing variable is an error naming it. */
export function expandEnv(file: string, key: string, value: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined || v === '') throw new ConfigError(file, `${key}: environment variable ${name} is not set`);
    return v;
  });
}

export function parseLimits(file: string, raw: unknown, into: EngineOptions): void {
  if (raw === undefined || raw === null) return;
  if (!isMapping(raw)) throw new ConfigError(file, 'engine.limits: must be a mapping');
  for (const [k, v] of Object.entries(raw)) {
    const field = Object.hasOwn(LIMIT_KEYS, k) ? LIMIT_KEYS[k] : undefined;
    if (!field) throw new ConfigError(file, `engine.limits.${k}: unknown key (known: ${Object.keys(LIMIT_KEYS).join(', ')})`);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new ConfigError(file, `engine.limits.${k}: must be a positive integer, got ${JSON.stringify(v)}`);
    (into as unknown as Record<string, unknown>)[field] = v;
  }
}

export function parseAuth(file: string, raw: unknown, env: NodeJS.ProcessEnv = process.env): TokenSpec[] {
  if (raw === undefined || raw === null) return [];
  if (!isMapping(raw)) throw new ConfigError(file, 'engine.auth: must be a mapping with tokens');
  for (const k of Object.keys(raw)) if (k !== 'tokens') throw new ConfigError(file, `engine.auth.${k}: unknown key (known: tokens)`);
  const list = raw.tokens ?? [];
  if (!Array.isArray(list)) throw new ConfigError(file, 'engine.auth.tokens: must be a list');
  const names = new Set<string>();
  return list.map((t, i) => {
    const at = `engine.auth.tokens[${i}]`;
    if (!isMapping(t)) throw new ConfigError(file, `${at}: must be a mapping with name and token`);
    for (const k of Object.keys(t)) if (!TOKEN_KEYS.includes(k)) throw new ConfigError(file, `${at}.${k}: unknown key (known: ${TOKEN_KEYS.join(', ')})`);
    if (typeof t.name !== 'string' || t.name === '') throw new ConfigError(file, `${at}.name: must be a non-empty string`);
    if (names.has(t.name)) throw new ConfigError(file, `${at}.name: ${t.name} is used twice`);
    names.add(t.name);
    if (typeof t.token !== 'string' || t.token === '') throw new ConfigError(file, `${at}.token: must be a non-empty string (or \${ENV_VAR})`);
    const token = expandEnv(file, `${at}.token`, t.token, env);
    if (token.length < 16) throw new ConfigError(file, `${at}.token: must be at least 16 characters (got ${token.length}); use a random secret`);
    const list = (k: string): string[] => {
      const v = t[k] ?? [];
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) throw new ConfigError(file, `${at}.${k}: must be a list of function ids or prefix patterns like "math::*"`);
      return v as string[];
    };
    if (t.admin !== undefined && typeof t.admin !== 'boolean') throw new ConfigError(file, `${at}.admin: must be true or false`);
    const granted = t.names ?? [];
    if (!Array.isArray(granted) || granted.some((n) => typeof n !== 'string' || !RESERVED_WORKER_NAMES.includes(n))) {
      throw new ConfigError(file, `${at}.names: must be a list of reserved worker names (${RESERVED_WORKER_NAMES.join(', ')}); other names need no grant, got ${JSON.stringify(granted)}`);
    }
    return {
      name: t.name,
      token,
      admin: t.admin === true,
      call: list('call'),
      register: list('register'),
      trigger_types: list('trigger_types'),
      ...(granted.length > 0 ? { names: granted as string[] } : {}),
    };
  });
}
