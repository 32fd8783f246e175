/**
 * Process entry of the built-in worker svc-cron (`svc worker add svc-cron` starts it).
 * Env: SVC_URL (engine address, default ws://localhost:49134), SVC_WORKER_CONFIG (JSON of the
 * worker's config.yaml entry: store, data_dir, redis_url, redis_key_prefix, budgets; docs/cron.md).
 */
import { DEFAULT_ENGINE_URL } from 'svc-sdk';
import { parseCronConfig } from './config.js';
import { startCronWorker } from './worker.js';

async function main(): Promise<void> {
  let raw: unknown;
  try {
    raw = process.env.SVC_WORKER_CONFIG ? JSON.parse(process.env.SVC_WORKER_CONFIG) : {};
  } catch (e) {
    throw Object.assign(new Error(`SVC_WORKER_CONFIG is not valid JSON: ${(e as Error).message}`), { code: 'invalid_config' });
  }
  const config = parseCronConfig(raw);
  const url = process.env.SVC_URL ?? DEFAULT_ENGINE_URL;
  // Do not wait for the engine: the SDK keeps reconnecting, and bindings arrive once it is up.
  const running = await startCronWorker({ url, config, waitReady: false });
  const where = config.store === 'embedded' ? config.dataDir : config.redisUrl;
  process.stdout.write(`svc-cron: ${config.store} store at ${where}, engine ${url}\n`);
  running.worker.on('connected', () => process.stdout.write(`svc-cron: connected to ${url}\n`));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`svc-cron: ${signal}, shutting down\n`);
    running.shutdown().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`svc-cron: shutdown failed: ${(e as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: unknown) => {
  const err = e as Error & { code?: string };
  process.stderr.write(`svc-cron: ${err.code ? `[${err.code}] ` : ''}${err.message}\n`);
  process.exit(1);
});
