/**
 * Process entry of the built-in worker svc-queue (`svc worker add svc-queue` starts it).
 * Env: SVC_URL (engine address, default ws://localhost:49134), SVC_WORKER_CONFIG (JSON of the
 * worker's config.yaml entry: store, data_dir, redis_url, redis_key_prefix, max_payload_bytes, subscriber_retention_ms, queues).
 */
import { DEFAULT_ENGINE_URL } from 'svc-sdk';
import { parseQueueConfig } from './config.js';
import { startQueueWorker } from './worker.js';

async function main(): Promise<void> {
  let raw: unknown;
  try {
    raw = process.env.SVC_WORKER_CONFIG ? JSON.parse(process.env.SVC_WORKER_CONFIG) : {};
  } catch (e) {
    throw new Error(`svc-queue: SVC_WORKER_CONFIG is not valid JSON: ${(e as Error).message}`);
  }
  const config = parseQueueConfig(raw);
  const url = process.env.SVC_URL ?? DEFAULT_ENGINE_URL;
  // Do not wait for the engine: the SDK keeps reconnecting, and calls work once it is up.
  const running = await startQueueWorker({ url, config, waitReady: false });
  const where = config.store === 'embedded' ? config.dataDir : config.redisUrl;
  const queues = [...config.queues.keys()].join(', ');
  process.stdout.write(`svc-queue: ${config.store} store at ${where}, queues ${queues}, engine ${url}\n`);
  running.worker.on('connected', () => process.stdout.write(`svc-queue: connected to ${url}\n`));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`svc-queue: ${signal}, shutting down\n`);
    running.shutdown().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`svc-queue: shutdown failed: ${(e as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  const err = e as Error & { code?: string };
  process.stderr.write(`svc-queue: ${err.code ? `[${err.code}] ` : ''}${err.message}\n`);
  process.exit(1);
});
