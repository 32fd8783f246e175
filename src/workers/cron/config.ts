/**
 * svc-cron's configuration: the `config` object of its entry in config.yaml, handed to the process
 * as JSON in env SVC_WORKER_CONFIG. Every key is optional; unknown keys are refused so a typo is an
 * error, not a silently ignored setting.
 */
import { readConfig, STORE_KEYS, type StoreSettings } from '../shared/config.js';
import { CronError, shown } from './errors.js';

/**
 * Store settings (shared/config.ts; data_dir default ./data/cron, shared by the replicas on this
 * machine; redis_key_prefix svc:cron), and:
 */
export interface CronConfig extends StoreSettings {
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

const KEYS = [...STORE_KEYS, 'max_triggers', 'max_trigger_bytes', 'max_total_bytes', 'max_catch_up_fires', 'catch_up_window_ms'];

export function parseCronConfig(raw: unknown, cwd = process.cwd()): CronConfig {
  const bad = (msg: string): never => {
    throw new CronError('invalid_config', `svc-cron config: ${msg}`);
  };
  const { c, store } = readConfig(raw, { keys: KEYS, cwd, defaults: { dataDir: './data/cron', keyPrefix: 'svc:cron' }, bad, show: shown });
  const int = (k: string, def: number, min: number): number => {
    const v = c[k] ?? def;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad(`"${k}" must be an integer of at least ${min}, got ${shown(v)}`);
    return v as number;
  };
  return {
    ...store,
    maxTriggers: int('max_triggers', 10_000, 1),
    maxTriggerBytes: int('max_trigger_bytes', 64 * 1024, 256),
    maxTotalBytes: int('max_total_bytes', 64 * 1024 * 1024, 256),
    maxCatchUpFires: int('max_catch_up_fires', 100, 1),
    catchUpWindowMs: int('catch_up_window_ms', 24 * 60 * 60 * 1000, 1000),
  };
}
