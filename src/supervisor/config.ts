import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions } from '../engine/options.js';
import { normalizeOrigin } from '../engine/origin.js';
import { parseAuth, parseLimits } from './auth-config.js';
import { parseCluster } from './cluster-config.js';

/**
 * config.yaml: the engine block and the workers the engine supervises. Parsed with `yaml` as a
 * Document so that `svc worker add` can append to it with the user's comments kept.
 */

export class ConfigError extends Error {
  readonly code = 'invalid_config';
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
  }
}

export const DEFAULT_CONFIG_YAML = `# svc configuration (docs/configuration.md lists every key)
engine:
  # Interface and port of the WebSocket server workers connect to.
  host: 127.0.0.1
  port: 49134
  # Largest frame a worker may send; larger ones get a frame_too_large error.
  max_frame_bytes: 8388608
  # Default deadline of a call; callers may ask for another one per call.
  invocation_timeout_ms: 30000
  # On Ctrl-C / SIGTERM, how long calls in flight may finish.
  shutdown_grace_ms: 10000

# Workers the engine starts and supervises (\`svc worker add <dir|svc-state|svc-http|svc-queue>\` appends here).
workers: []
`;

/** engine: key in YAML → EngineOptions field, with the check each value must pass. */
type ValueKind = 'port' | 'host' | 'positive' | 'bool' | 'origins';
const ENGINE_KEYS: Record<string, { field: keyof EngineOptions; kind: ValueKind }> = {
  host: { field: 'host', kind: 'host' },
  port: { field: 'port', kind: 'port' },
  max_frame_bytes: { field: 'maxFrameBytes', kind: 'positive' },
  invocation_timeout_ms: { field: 'invocationTimeoutMs', kind: 'positive' },
  max_invocation_timeout_ms: { field: 'maxInvocationTimeoutMs', kind: 'positive' },
  shutdown_grace_ms: { field: 'shutdownGraceMs', kind: 'positive' },
  ping_interval_ms: { field: 'pingIntervalMs', kind: 'positive' },
  log_buffer_size: { field: 'logBufferSize', kind: 'positive' },
  print_events: { field: 'printEvents', kind: 'bool' },
  tracing: { field: 'tracing', kind: 'bool' },
  trace_buffer_size: { field: 'traceBufferSize', kind: 'positive' },
  allowed_origins: { field: 'allowedOrigins', kind: 'origins' },
};

const TOP_LEVEL_KEYS = ['engine', 'workers'];

export interface LoadedConfig {
  file: string;
  created: boolean;
  engine: EngineOptions;
  /** Raw worker entries; validated by the supervisor. */
  workers: unknown[];
}

/** Read config.yaml, creating it with defaults when missing. Throws ConfigError naming the key. */
export function loadConfig(file: string, opts: { create?: boolean } = {}): LoadedConfig {
  let created = false;
  if (!existsSync(file)) {
    if (opts.create === false) throw new ConfigError(file, 'file not found');
    writeFileSync(file, DEFAULT_CONFIG_YAML);
    created = true;
  }
  const text = readFileSync(file, 'utf8');
  return { ...parseConfig(file, text), created };
}

export function parseConfig(file: string, text: string): Omit<LoadedConfig, 'created'> {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const pos = e.linePos?.[0];
    throw new ConfigError(file, `invalid YAML${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}: ${e.message.split('\n')[0]}`);
  }
  const root: unknown = doc.toJS() ?? {};
  if (typeof root !== 'object' || root === null || Array.isArray(root)) throw new ConfigError(file, 'the top level must be a mapping (engine:, workers:)');
  const r = root as Record<string, unknown>;
  for (const key of Object.keys(r)) {
    if (!TOP_LEVEL_KEYS.includes(key)) throw new ConfigError(file, `${key}: unknown top-level key (known: ${TOP_LEVEL_KEYS.join(', ')})`);
  }
  const engine: EngineOptions = { ...DEFAULT_ENGINE_OPTIONS };
  const e = r.engine ?? {};
  if (typeof e !== 'object' || e === null || Array.isArray(e)) throw new ConfigError(file, '"engine" must be a mapping');
  for (const [key, value] of Object.entries(e as Record<string, unknown>)) {
    if (key === 'auth') {
      engine.tokens = parseAuth(file, value);
      continue;
    }
    if (key === 'limits') {
      parseLimits(file, value, engine);
      continue;
    }
    if (key === 'cluster') {
      engine.cluster = parseCluster(file, value);
      continue;
    }
    const spec = Object.hasOwn(ENGINE_KEYS, key) ? ENGINE_KEYS[key] : undefined;
    if (!spec) throw new ConfigError(file, `engine.${key}: unknown key (known: ${[...Object.keys(ENGINE_KEYS), 'auth', 'limits', 'cluster'].join(', ')})`);
    (engine as unknown as Record<string, unknown>)[spec.field] = checkValue(file, `engine.${key}`, spec.kind, value);
  }
  const workers = r.workers ?? [];
  if (!Array.isArray(workers)) throw new ConfigError(file, '"workers" must be a list');
  return { file, engine, workers };
}

function checkValue(file: string, key: string, kind: ValueKind, v: unknown): unknown {
  switch (kind) {
    case 'port':
      if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535) return v;
      throw new ConfigError(file, `${key}: must be an integer port from 0 to 65535, got ${JSON.stringify(v)}`);
    case 'host':
      if (typeof v === 'string' && v.length > 0) return v;
      throw new ConfigError(file, `${key}: must be a host name or address, got ${JSON.stringify(v)}`);
    case 'positive':
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v;
      throw new ConfigError(file, `${key}: must be a positive number, got ${JSON.stringify(v)}`);
    case 'bool':
      if (typeof v === 'boolean') return v;
      throw new ConfigError(file, `${key}: must be true or false, got ${JSON.stringify(v)}`);
    case 'origins': {
      const hint = 'must be a list of web origins like "https://app.example.com" (scheme, host and port; no path, no "*")';
      if (!Array.isArray(v)) throw new ConfigError(file, `${key}: ${hint}, got ${JSON.stringify(v)}`);
      return v.map((o: unknown, i) => {
        const normal = typeof o === 'string' ? normalizeOrigin(o) : null;
        if (normal === null) throw new ConfigError(file, `${key}[${i}]: ${hint}, got ${JSON.stringify(o)}`);
        return normal;
      });
    }
  }
}
