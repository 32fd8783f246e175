/**
 * The process entry of the built-ins with a store (svc-state, svc-queue, svc-cron), as `svc worker
 * add` starts them. Env: SVC_URL (engine address, default ws://localhost:49134), SVC_WORKER_CONFIG
 * (JSON of the worker's config.yaml entry). The worker starts without waiting for the engine (the
 * SDK keeps reconnecting; calls and bindings come once it is up), says where its store is, and
 * shuts down cleanly on SIGINT and SIGTERM. A start that fails (a bad config, a store that cannot
 * be opened) prints `<name>: [<code>] <message>` and exits 1.
 */
import { DEFAULT_ENGINE_URL, redactAddress, type Worker } from 'svc-sdk';

export interface BuiltinProcess<C extends { store: 'embedded' | 'redis'; dataDir: string; redisUrl: string }> {
  /** svc-state, svc-queue, svc-cron: prefixes every line the process prints. */
  name: string;
  parse(raw: unknown): C;
  start(url: string, config: C): Promise<{ worker: Worker; shutdown(): Promise<void> }>;
  /** Said on the start line after the store, before the engine (e.g. the queues). */
  extra?(config: C): string;
}

export function runBuiltinProcess<C extends { store: 'embedded' | 'redis'; dataDir: string; redisUrl: string }>(p: BuiltinProcess<C>): void {
  const out = (line: string) => process.stdout.write(`${p.name}: ${line}\n`);
  const main = async (): Promise<void> => {
    let raw: unknown;
    try {
      raw = process.env.SVC_WORKER_CONFIG ? JSON.parse(process.env.SVC_WORKER_CONFIG) : {};
    } catch (e) {
      throw Object.assign(new Error(`SVC_WORKER_CONFIG is not valid JSON: ${(e as Error).message}`), { code: 'invalid_config' });
    }
    const config = p.parse(raw);
    const url = process.env.SVC_URL ?? DEFAULT_ENGINE_URL;
    const running = await p.start(url, config);
    const where = config.store === 'embedded' ? config.dataDir : redactAddress(config.redisUrl);
    out(`${config.store} store at ${where}${p.extra ? `, ${p.extra(config)}` : ''}, engine ${redactAddress(url)}`);
    running.worker.on('connected', () => out(`connected to ${redactAddress(url)}`));
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      out(`${signal}, shutting down`);
      running.shutdown().then(
        () => process.exit(0),
        (e: unknown) => {
          process.stderr.write(`${p.name}: shutdown failed: ${(e as Error).message}\n`);
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  };
  main().catch((e: unknown) => {
    const err = e as Error & { code?: string };
    process.stderr.write(`${p.name}: ${err.code ? `[${err.code}] ` : ''}${err.message}\n`);
    process.exit(1);
  });
}
