/**
 * svc-state's configuration: the `config` object of its entry in config.yaml, handed to the process
 * as JSON in env SVC_WORKER_CONFIG. Every key is optional; unknown keys are refused so a typo is
 * an error, not a silently ignored setting.
 */
import { resolve } from 'node:path';
import { DEFAULT_MAX_VALUE_BYTES, StateError } from './store.js';

export interface StateConfig {
  /** `embedded` (default): LMDB in `data_dir`. `redis`: a Redis server shared by engines. */
  store: 'embedded' | 'redis';
  /** Absolute directory of the embedded store (default ./data/state under the working directory). */
  dataDir: string;
  redisUrl: string;
  /** Prefix of the Redis keys (default svc:state), so several projects can share one Redis. */
  redisKeyPrefix: string;
  maxValueBytes: number;
}

const KEYS = ['store', 'data_dir', 'redis_url', 'redis_key_prefix', 'max_value_bytes'];

export function parseStateConfig(raw: unknown, cwd = process.cwd()): StateConfig {
  const bad = (msg: string) => new StateError('invalid_config', `svc-state config: ${msg}`);
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw bad(`must be an object, got ${JSON.stringify(raw)}`);
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) {
    if (!KEYS.includes(k)) throw bad(`unknown key ${JSON.stringify(k)}; known keys: ${KEYS.join(', ')}`);
  }
  const store = c.store ?? 'embedded';
  if (store !== 'embedded' && store !== 'redis') throw bad(`"store" must be "embedded" or "redis", got ${JSON.stringify(store)}`);
  const str = (k: string, def: string): string => {
    const v = c[k] ?? def;
    if (typeof v !== 'string' || v === '') throw bad(`"${k}" must be a non-empty string, got ${JSON.stringify(v)}`);
    return v;
  };
  const max = c.max_value_bytes ?? DEFAULT_MAX_VALUE_BYTES;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 16) {
    throw bad(`"max_value_bytes" must be an integer of at least 16, got ${JSON.stringify(max)}`);
  }
  return {
    store,
    dataDir: resolve(cwd, str('data_dir', './data/state')),
    redisUrl: str('redis_url', 'redis://127.0.0.1:6379'),
    redisKeyPrefix: str('redis_key_prefix', 'svc:state'),
    maxValueBytes: max,
  };
}
