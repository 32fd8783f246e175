/**
 * svc-cron's configuration: the `config` object of its entry in config.yaml, handed to the process
 * as JSON in env SVC_WORKER_CONFIG. Every key is optional; unknown keys are refused so a typo is an
 * error, not a silently ignored setting.
 */
import { resolve } from 'node:path';
import { CronError, shown } from './errors.js';

export interface CronConfig {
  /** `embedded` (default): LMDB in `dataDir`, shared by the replicas on this machine. `redis`: shared by engines. */
  store: 'embedded' | 'redis';
  dataDir: string;
  redisUrl: string;
  redisKeyPrefix: string;
  /** Bindings one svc-cron process holds at most. */
  maxTriggers: number;
  /** Largest binding config (its JSON text, payload included), in bytes. */
  maxTriggerBytes: number;
  /** Largest sum of the configs of the bindings one process holds, in bytes. */
  maxTotalBytes: number;
  /** Catch-up runs at most this many missed fires of a schedule (the latest ones). */
  maxCatchUpFires: number;
  /** Catch-up looks back at most this far. */
  catchUpWindowMs: number;
}

const KEYS = ['store', 'data_dir', 'redis_url', 'redis_key_prefix', 'max_triggers', 'max_trigger_bytes', 'max_total_bytes', 'max_catch_up_fires', 'catch_up_window_ms'];

export function parseCronConfig(raw: unknown, cwd = process.cwd()): CronConfig {
  const bad = (msg: string): never => {
    throw new CronError('invalid_config', `svc-cron config: ${msg}`);
  };
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) bad(`must be an object, got ${shown(raw)}`);
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) {
    if (!KEYS.includes(k)) bad(`unknown key ${JSON.stringify(k)}; known keys: ${KEYS.join(', ')}`);
  }
  const store = c.store ?? 'embedded';
  if (store !== 'embedded' && store !== 'redis') bad(`"store" must be "embedded" or "redis", got ${shown(store)}`);
  const str = (k: string, def: string): string => {
    const v = c[k] ?? def;
    if (typeof v !== 'string' || v === '') bad(`"${k}" must be a non-empty string, got ${shown(v)}`);
    return v as string;
  };
  const int = (k: string, def: number, min: number): number => {
    const v = c[k] ?? def;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad(`"${k}" must be an integer of at least ${min}, got ${shown(v)}`);
    return v as number;
  };
  return {
    store: store as CronConfig['store'],
    dataDir: resolve(cwd, str('data_dir', './data/cron')),
    redisUrl: str('redis_url', 'redis://127.0.0.1:6379'),
    redisKeyPrefix: str('redis_key_prefix', 'svc:cron'),
    maxTriggers: int('max_triggers', 10_000, 1),
    maxTriggerBytes: int('max_trigger_bytes', 64 * 1024, 256),
    maxTotalBytes: int('max_total_bytes', 64 * 1024 * 1024, 256),
    maxCatchUpFires: int('max_catch_up_fires', 100, 1),
    catchUpWindowMs: int('catch_up_window_ms', 24 * 60 * 60 * 1000, 1000),
  };
}
