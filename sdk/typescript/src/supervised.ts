import { fstatSync } from 'node:fs';

/**
 * A worker the engine started (config.yaml `workers:`) must not outlive that engine, nor serve
 * another one. The supervisor tells the SDK so through the environment:
 *
 * - SVC_RUN_SECRET: the secret of this instance, presented at connect (header x-svc-run-secret).
 *   An engine that did not issue it, i.e. any other run than the one that started us, refuses the
 *   connection with close code 4410 (`stale_worker`): our engine is gone, so the process exits.
 * - SVC_LIVENESS_FD=0: stdin is a pipe whose other end only the engine holds. It never carries
 *   data; end-of-file means the engine process is gone (killed with SIGKILL, crashed), and the
 *   process exits. stdin, not an extra descriptor, because every launcher between the engine and
 *   the SDK passes stdin on (`/bin/sh -c`, npm, npx, tsx, a venv's python), while Node's
 *   child_process passes only the descriptors it lists and Python's subprocess closes all but 0-2.
 *
 * "Exits" means: SIGTERM to this process, so that the program's own SIGTERM handler shuts it down
 * as when the supervisor stops it, and, should that not end the process, exit after
 * ENGINE_GONE_EXIT_MS.
 */
export const RUN_SECRET_ENV = 'SVC_RUN_SECRET';
export const LIVENESS_FD_ENV = 'SVC_LIVENESS_FD';
/** How long the program's SIGTERM handler has to end the process before the SDK exits it. */
export const ENGINE_GONE_EXIT_MS = 10_000;

let gone = false;
let watching = false;

/** True when the engine that started this process gave it a run secret (it is supervised). */
export function startedByEngine(): boolean {
  return Boolean(process.env[RUN_SECRET_ENV]);
}

/**
 * The engine that started this process is gone: say why on stderr, then SIGTERM ourselves, with a
 * forced exit after ENGINE_GONE_EXIT_MS. Runs once.
 */
export function engineGone(why: string): void {
  if (gone) return;
  gone = true;
  process.stderr.write(`svc-sdk: ${why}; this process was started by that engine, so it exits\n`);
  setTimeout(() => process.exit(1), ENGINE_GONE_EXIT_MS).unref();
  process.kill(process.pid, 'SIGTERM');
}

/**
 * When SVC_LIVENESS_FD names stdin and stdin is a pipe or socket, read it until end-of-file and
 * then call engineGone. Idempotent; never keeps the process alive by itself (the handle is unref'd).
 */
export function watchEngineLiveness(): void {
  if (watching || process.env[LIVENESS_FD_ENV] !== '0') return;
  let kind: string;
  try {
    const st = fstatSync(0);
    kind = st.isFIFO() || st.isSocket() ? 'pipe' : 'other';
  } catch {
    kind = 'closed';
  }
  // Anything else (a terminal, /dev/null, a file) is not the engine's pipe: a worker started by
  // hand with the variable set, or a start command that redirects stdin. Nothing to watch.
  if (kind !== 'pipe') return;
  watching = true;
  const stdin = process.stdin as NodeJS.ReadStream & { unref?: () => void };
  const onEnd = (): void => engineGone('the engine that started this worker is gone (its liveness pipe on stdin closed)');
  stdin.on('data', () => {
    /* the engine never writes; anything a program wrote to our stdin is discarded */
  });
  stdin.once('end', onEnd);
  stdin.once('error', onEnd);
  stdin.resume();
  stdin.unref?.();
}
