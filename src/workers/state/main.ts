/**
 * Process entry of the built-in worker svc-state (`svc worker add svc-state` starts it).
 * Env: SVC_URL, SVC_WORKER_CONFIG (store, data_dir, redis_url, redis_key_prefix, max_value_bytes);
 * what it does with them: shared/main.ts.
 */
import { runBuiltinProcess } from '../shared/main.js';
import { parseStateConfig } from './config.js';
import { startStateWorker } from './worker.js';

runBuiltinProcess({
  name: 'svc-state',
  parse: (raw) => parseStateConfig(raw),
  start: (url, config) => startStateWorker({ url, config, waitReady: false }),
});
