/**
 * Seconds a guard leaves a worker to exit by itself once the engine is gone (svc-sdk workers watch
 * the pipe themselves and shut down on their own), then the seconds from SIGTERM to SIGKILL.
 */
export const GUARD_SELF_EXIT_S = 2;
export const GUARD_TERM_GRACE_S = 10;

/**
 * `command` as a runtime starts it (`/bin/sh -c <this>`), with a guard for programs that do not
 * watch the liveness pipe themselves: one written against the iii SDK, a shell script, anything.
 * The guard is a background shell in the instance's process group that reads stdin, the liveness
 * pipe, until it ends (the engine process is gone, however it went), then gives the worker
 * GUARD_SELF_EXIT_S to exit by itself, sends SIGTERM to the whole group, and SIGKILL
 * GUARD_TERM_GRACE_S later. It ignores SIGTERM itself so that it outlives its own signal; the
 * runtimes' SIGKILL of the group, once the worker has exited, ends it. While the engine runs it
 * only waits on a read.
 *
 * `exec`: the command has no shell syntax and replaces the shell, so the pid the runtime reports
 * stays the worker's own. A background list reads /dev/null unless told otherwise (POSIX), hence
 * stdin saved on descriptor 3 first, which the worker itself does not inherit.
 */
export function guardedCommand(command: string, exec: boolean): string {
  const guard = `(trap '' TERM; while read -r _; do :; done <&3; sleep ${GUARD_SELF_EXIT_S}; kill -TERM 0; sleep ${GUARD_TERM_GRACE_S}; kill -KILL 0) >/dev/null 2>&1 &`;
  return `exec 3<&0; ${guard} exec 3<&-; ${exec ? `exec ${command}` : command}`;
}
