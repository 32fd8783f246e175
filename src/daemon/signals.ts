import type { Daemon } from './daemon.js';
import { FATAL_EXIT_CODE, guardProcess } from './process-guard.js';

/**
 * Run the daemon as this process's one job: SIGINT or SIGTERM stops it gracefully; an error that
 * escapes every handler is logged instead of ending the process (process-guard.ts), and a
 * persistent one stops it with exit status 70. Resolves once the daemon has stopped.
 */
export function runUntilSignalled(daemon: Daemon): Promise<void> {
  return new Promise<void>((done) => {
    const stop = (reason: string): void => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      void daemon.stop(reason).then(() => done());
    };
    const onInt = (): void => stop('SIGINT');
    const onTerm = (): void => stop('SIGTERM');
    guardProcess({
      log: (message) => daemon.engine.event('error', message),
      fatal: (why) => {
        process.exitCode = FATAL_EXIT_CODE;
        stop(`fatal error (${why})`);
      },
    });
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
  });
}
