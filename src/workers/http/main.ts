/**
 * Process entry of the built-in worker svc-http (`svc worker add svc-http` runs this).
 * Env: SVC_URL (engine, default ws://localhost:49134); SVC_WORKER_CONFIG (JSON object, the
 * `config:` of its config.yaml entry: host, port, cors, body_limit_bytes, timeout_ms, request_log, streaming, stream_body_limit_bytes, max_connections, request_timeout_ms, expose_errors).
 */
import { HttpConfigError, parseHttpWorkerConfig } from './config.js';
import { startHttpWorker } from './worker.js';

async function main(): Promise<void> {
  let raw: unknown;
  try {
    raw = process.env.SVC_WORKER_CONFIG ? JSON.parse(process.env.SVC_WORKER_CONFIG) : undefined;
  } catch (e) {
    throw new HttpConfigError(`svc-http: SVC_WORKER_CONFIG is not valid JSON: ${(e as Error).message}`);
  }
  const config = parseHttpWorkerConfig(raw);
  const url = process.env.SVC_URL ?? 'ws://localhost:49134';
  const handle = await startHttpWorker({ ...config, url });
  process.stdout.write(`svc-http listening on http://${handle.host}:${handle.port} (engine ${url})\n`);

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`svc-http: ${signal}, shutting down\n`);
    handle.shutdown().then(
      () => process.exit(0),
      (e) => {
        process.stderr.write(`svc-http: shutdown failed: ${(e as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: Error & { code?: string }) => {
  process.stderr.write(e.code === 'invalid_config' ? `${e.message}\n` : `svc-http: ${e.message}\n`);
  // 2: the configuration is wrong (retrying will not help); 1: anything else.
  process.exit(e.code === 'invalid_config' ? 2 : 1);
});
