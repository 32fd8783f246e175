/**
 * Process entry of the built-in worker svc-queue (`svc worker add svc-queue` starts it).
 * Env: SVC_URL, SVC_WORKER_CONFIG (store, data_dir, redis_url, redis_key_prefix, max_payload_bytes,
 * subscriber_retention_ms, queues); what it does with them: shared/main.ts.
 */
import { runBuiltinProcess } from '../shared/main.js';
import { parseQueueConfig } from './config.js';
import { startQueueWorker } from './worker.js';

runBuiltinProcess({
  name: 'svc-queue',
  parse: (raw) => parseQueueConfig(raw),
  start: (url, config) => startQueueWorker({ url, config, waitReady: false }),
  extra: (config) => `queues ${[...config.queues.keys()].join(', ')}`,
});
