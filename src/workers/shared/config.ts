/**
 * What the configs of the built-ins with a store (svc-state, svc-queue, svc-cron) share: the
 * `config` object of their config.yaml entry (handed to the process as JSON in SVC_WORKER_CONFIG),
 * with unknown keys refused so that a typo is an error rather than a setting silently ignored, and
 * the store settings every one of them has.
 */
import { unknownKeyMessage } from 'svc-sdk/internal';
import { resolve } from 'node:path';

export interface StoreSettings {
  /** `embedded` (default): LMDB in `dataDir`. `redis`: shared by replicas and engines. */
  store: 'embedded' | 'redis';
  dataDir: string;
  redisUrl: string;
  /** Prefix of the Redis keys, so several projects can share one Redis. */
  redisKeyPrefix: string;
}

export const STORE_KEYS = ['store', 'data_dir', 'redis_url', 'redis_key_prefix'];

export interface ConfigReader {
  /** The config object itself. */
  c: Record<string, unknown>;
  store: StoreSettings;
}

/**
 * Read a built-in's config: `raw` must be an object (absent: all defaults) whose keys are all in
 * `keys`. `bad` makes the worker's own invalid_config error of a message, `show` shows a value in
 * it. Store settings default to the embedded store in `defaults.dataDir` (relative to `cwd`).
 */
export function readConfig(
  raw: unknown,
  o: { keys: string[]; cwd: string; defaults: { dataDir: string; keyPrefix: string }; bad: (message: string) => Error; show: (v: unknown) => string },
): ConfigReader {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw o.bad(`must be an object, got ${o.show(raw)}`);
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) {
    if (!o.keys.includes(k)) throw o.bad(unknownKeyMessage(k, o.keys));
  }
  const store = c.store ?? 'embedded';
  if (store !== 'embedded' && store !== 'redis') throw o.bad(`"store" must be "embedded" or "redis", got ${o.show(store)}`);
  const str = (k: string, def: string): string => {
    const v = c[k] ?? def;
    if (typeof v !== 'string' || v === '') throw o.bad(`"${k}" must be a non-empty string, got ${o.show(v)}`);
    return v;
  };
  return {
    c,
    store: {
      store,
      dataDir: resolve(o.cwd, str('data_dir', o.defaults.dataDir)),
      redisUrl: str('redis_url', 'redis://127.0.0.1:6379'),
      redisKeyPrefix: str('redis_key_prefix', o.defaults.keyPrefix),
    },
  };
}
