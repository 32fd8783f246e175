/**
 * {{worker_name}}: one function, {{worker_name}}::hello {name?} -> {message}.
 *
 * Started by the engine after `svc worker add <this directory>`; `svc dev` restarts it when this
 * file changes. The engine address comes from SVC_URL.
 */
import { Logger, registerWorker, SvcError } from 'svc-sdk';

const worker = registerWorker(process.env.SVC_URL || 'ws://localhost:49134', { workerName: '{{worker_name}}' });
const logger = new Logger();

worker.registerFunction(
  '{{worker_name}}::hello',
  async (data: { name?: unknown } | null) => {
    const name = data?.name ?? 'world';
    if (typeof name !== 'string') throw new SvcError('invalid_payload', `{{worker_name}}::hello: name must be a string, got ${JSON.stringify(name)}`);
    logger.info(`greeting ${name}`);
    return { message: `hello, ${name}` };
  },
  { description: 'Greets name (default world): {message}.' },
);

// On Ctrl-C or SIGTERM (what `svc worker restart/remove` and `svc dev` send): calls in flight
// finish, then the connection closes cleanly, so the engine sees this worker leave rather than a
// dropped connection.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void worker.shutdown().finally(() => process.exit(0)));
}
