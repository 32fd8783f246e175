import { randomBytes } from 'node:crypto';
import { renameSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import type { WorkerState } from './worker-events.js';

/** While connected the file is touched this often, so a probe can tell a hung event loop by its age. */
export const READY_FILE_REFRESH_MS = 5000;

/**
 * A file that says whether this worker is ready, for orchestrators' exec probes (Kubernetes:
 * `svc deploy kubernetes` sets SVC_READY_FILE and probes it): `ready <name>` while the engine has
 * accepted the connection and the worker's functions are registered, `not ready: <state>` otherwise.
 * The file is written from the worker's event loop and touched every READY_FILE_REFRESH_MS while
 * ready: a probe that also checks its age (docs/deploy.md) fails for a loop that no longer runs.
 * A file and not a port: nothing listens, so nothing outside the pod can reach it.
 */
export class ReadyFile {
  private timer: NodeJS.Timeout | undefined;
  private failed = false;

  constructor(
    readonly path: string,
    private readonly workerName: string,
    private readonly report: (e: Error) => void,
  ) {}

  /**
   * Keep the file in step with `worker` from now on. Written at once, not at start(): a program
   * stuck before start() would have no file, and its probe would ask the engine instead. For the
   * same reason a worker closed by an error (`refused`: a final refusal, a malformed URL) keeps its
   * file, saying `not ready: closed`: its process lives on without a worker.
   */
  follow(worker: { readonly state: WorkerState; on(event: 'state', listener: (state: WorkerState) => void): unknown }, refused: () => boolean): void {
    this.update(worker.state);
    worker.on('state', (state) => (state === 'closed' && !refused() ? this.remove() : this.update(state)));
  }

  /** The worker's state changed. */
  update(state: WorkerState): void {
    const ready = state === 'connected';
    this.write(ready ? `ready ${this.workerName}\n` : `not ready: ${state}\n`);
    if (ready && this.timer === undefined) {
      this.timer = setInterval(() => this.touch(), READY_FILE_REFRESH_MS);
      this.timer.unref();
    } else if (!ready && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** The worker is closed: the file goes (a restarted process writes it anew). */
  remove(): void {
    this.update('closed');
    unlinkQuietly(this.path);
  }

  /**
   * Whole or not at all: a probe never reads half a line (write aside, then rename over). The file
   * aside has a name nobody can guess and is created here (`wx`: O_EXCL, which follows no link), so
   * a link someone left in a shared directory such as /tmp is never written through.
   */
  private write(text: string): void {
    const aside = `${this.path}.${randomBytes(8).toString('hex')}.tmp`;
    let created = false;
    try {
      writeFileSync(aside, text, { flag: 'wx', mode: 0o644 });
      created = true;
      renameSync(aside, this.path);
    } catch (e) {
      if (created) unlinkQuietly(aside);
      this.fail(e as Error);
    }
  }

  private touch(): void {
    const now = new Date();
    try {
      utimesSync(this.path, now, now);
    } catch (e) {
      this.fail(e as Error);
    }
  }

  /** Reported once: a path that cannot be written stays so, and the worker works on without the file. */
  private fail(e: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.report(new Error(`svc: cannot write the ready file ${this.path} (SVC_READY_FILE): ${e.message}`));
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** WorkerOptions.readyFile, else env SVC_READY_FILE (blank reads as unset); undefined: no file. */
export function readyFilePath(option: string | undefined): string | undefined {
  const path = option ?? process.env.SVC_READY_FILE;
  return path !== undefined && path.trim() !== '' ? path : undefined;
}
