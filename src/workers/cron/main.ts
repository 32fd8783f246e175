/**
 * Process entry of the built-in worker svc-cron (`svc worker add svc-cron` starts it).
 * Env: SVC_URL, SVC_WORKER_CONFIG (store, data_dir, redis_url, redis_key_prefix, budgets;
 * docs/cron.md); what it does with them: shared/main.ts.
 */
import { runBuiltinProcess } from '../shared/main.js';
import { parseCronConfig } from './config.js';
import { startCronWorker } from './worker.js';

runBuiltinProcess({
  name: 'svc-cron',
  parse: (raw) => parseCronConfig(raw),
  start: (url, config) => startCronWorker({ url, config, waitReady: false }),
});
