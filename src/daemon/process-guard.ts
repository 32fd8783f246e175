/**
 * The engine daemon's last line of defence. Every path a peer's frame takes catches its own errors
 * and answers them (the router, the call and answer writers, builtins, trigger hand-over, cluster
 * forwarding); an error that still escapes is a bug of ours. Node's default then ends the process,
 * which would end every call in flight and leave supervised workers without their engine, so the
 * daemon logs it and keeps running where that is safe:
 *
 * - An unhandled rejection: the promise chain that failed is over, and no engine table is changed
 *   across an `await` (each change happens in one synchronous turn), so nothing is left half-done.
 *   Logged; the engine keeps running.
 * - An uncaught exception: it ended one callback (a socket event, a timer) part-way, so the usual
 *   casualty is one frame or one session's clean-up; that is logged with the stack and the engine
 *   keeps running. What is not
 *   safe is to go on when the error keeps coming back (a broken invariant, a stream that fails on
 *   every write) or when Node reports its own internals broken: then the engine stops as on
 *   SIGTERM and exits with status 70, so that whatever runs it restarts it from a clean state.
 */

/** More than this many uncaught exceptions within REPEAT_WINDOW_MS: the fault is persistent. */
const MAX_REPEATS = 5;
const REPEAT_WINDOW_MS = 60_000;
/** Errors after which Node itself is in an unknown state. */
const FATAL_CODES = new Set(['ERR_INTERNAL_ASSERTION']);
export const FATAL_EXIT_CODE = 70;

export interface GuardOptions {
  /** Where the lines go: the engine's log (engine.event). Must not throw; a throw is ignored. */
  log: (message: string) => void;
  /** Stop for good (a graceful stop, then exit FATAL_EXIT_CODE). Called at most once. */
  fatal: (why: string) => void;
}

/** Install the handlers; returns their removal (tests). */
export function guardProcess(opts: GuardOptions): () => void {
  const recent: number[] = [];
  let inHandler = false;
  let gaveUp = false;
  const log = (message: string): void => {
    if (inHandler) return; // the log itself failed (a closed stdout): do not loop
    inHandler = true;
    try {
      opts.log(message);
    } catch {
      /* nowhere left to report it */
    } finally {
      inHandler = false;
    }
  };
  const onRejection = (reason: unknown): void => {
    log(`unhandled promise rejection (a bug in svc; the engine keeps running): ${describe(reason)}`);
  };
  const onException = (err: Error, origin: string): void => {
    const now = Date.now();
    while (recent.length > 0 && now - recent[0]! > REPEAT_WINDOW_MS) recent.shift();
    recent.push(now);
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    const fatal = (code !== undefined && FATAL_CODES.has(code)) || recent.length > MAX_REPEATS;
    log(`uncaught exception in ${origin === 'unhandledRejection' ? 'a promise' : 'a callback'} (a bug in svc${fatal ? '' : '; the engine keeps running'}): ${describe(err)}`);
    if (fatal && !gaveUp) {
      gaveUp = true;
      const why = recent.length > MAX_REPEATS ? `${recent.length} uncaught exceptions within ${REPEAT_WINDOW_MS / 1000} s` : `Node reported ${code}`;
      log(`stopping the engine: ${why}; exiting with status ${FATAL_EXIT_CODE} so that it is restarted from a clean state`);
      opts.fatal(why);
    }
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return () => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  };
}

function describe(v: unknown): string {
  if (v instanceof Error) return v.stack ?? `${v.name}: ${v.message}`;
  try {
    return String(v);
  } catch {
    return '(an unprintable value)';
  }
}
