/**
 * svc-state's configuration: the `config` object of its entry in config.yaml, handed to the process
 * as JSON in env SVC_WORKER_CONFIG. Every key is optional; unknown keys are refused so a typo is
 * an error, not a silently ignored setting.
 */
import { readConfig, STORE_KEYS, type StoreSettings } from '../shared/config.js';
import { DEFAULT_MAX_VALUE_BYTES, StateError } from './store.js';

/** Store settings (shared/config.ts; data_dir default ./data/state, redis_key_prefix svc:state), and: */
export interface StateConfig extends StoreSettings {
  maxValueBytes: number;
}

const KEYS = [...STORE_KEYS, 'max_value_bytes'];

export function parseStateConfig(raw: unknown, cwd = process.cwd()): StateConfig {
  const bad = (msg: string) => new StateError('invalid_config', `svc-state config: ${msg}`);
  const { c, store } = readConfig(raw, { keys: KEYS, cwd, defaults: { dataDir: './data/state', keyPrefix: 'svc:state' }, bad, show: (v) => JSON.stringify(v) });
  const max = c.max_value_bytes ?? DEFAULT_MAX_VALUE_BYTES;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 16) {
    throw bad(`"max_value_bytes" must be an integer of at least 16, got ${JSON.stringify(max)}`);
  }
  return { ...store, maxValueBytes: max };
}
