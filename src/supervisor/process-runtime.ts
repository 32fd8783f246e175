import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { LIVENESS_FD_ENV } from 'svc-sdk/internal';
import { guardedCommand } from './liveness-guard.js';
import { appendStamped } from './log-stamp.js';
import { killGroup, processStartToken } from './process-identity.js';
import type { ExitInfo, Instance, LaunchSpec, Runtime } from './runtime.js';

/** A command with no shell syntax can be `exec`ed, so the pid we report is the worker's own. */
const SIMPLE_COMMAND = /^[\w@%+=:,./~ -]+$/;
/** After the exit, how long its last output may take to reach the log file (a process that left the group can hold the pipe open). */
const OUTPUT_AFTER_EXIT_MS = 2000;

/**
 * Runs each instance as a child process in its own process group, its stdout and stderr appended
 * to the worker's log file with each line stamped with the time and the replica (log-stamp.ts:
 * the engine reads the output, a chunk at a time, held up by the disk, never buffering it). Stopping
 * signals the whole group, so helpers the worker spawned (npx, tsx) go too: no orphans.
 *
 * stdin is the liveness pipe: its other end is held by this process only and never written, so
 * the worker reads end-of-file exactly when the engine process is gone, however it went (SIGKILL
 * included). SVC_LIVENESS_FD=0 tells the SDKs to watch it and exit (sdk/typescript/src/supervised.ts);
 * for programs that do not, a guard in the group stops them (liveness-guard.ts).
 */
export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;

  async launch(spec: LaunchSpec): Promise<Instance> {
    // Nothing here takes long (the install is the supervisor's step before): only a launch already superseded is refused.
    spec.signal?.throwIfAborted();
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const fd = openSync(spec.logFile, 'a');
    writeSync(fd, `\n=== ${new Date().toISOString()} starting ${spec.name}${spec.replica > 0 ? ` [replica ${spec.replica}]` : ''}: ${spec.command}\n`);
    closeSync(fd);
    const command = guardedCommand(spec.command, SIMPLE_COMMAND.test(spec.command));
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: spec.cwd,
      env: { ...spec.env, [LIVENESS_FD_ENV]: '0' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    // Listened for at once: a spawn that fails (no such cwd; EMFILE while every descriptor is in
    // use, when it also has no stdio) reports it on the next tick, and unheard it ended the engine.
    const spawnFailed = new Promise<ExitInfo>((resolve) => child.once('error', (err) => resolve({ code: 127, signal: `spawn failed: ${err.message}` })));
    if (!child.pid) {
      const info = await spawnFailed;
      throw new Error(`could not start ${spec.name}: ${info.signal ?? 'unknown error'}`);
    }
    const output = child.stdout && child.stderr ? appendStamped(spec.logFile, spec.replica, [child.stdout, child.stderr]) : Promise.resolve();
    // Our end of the liveness pipe: never written, never keeping the engine's event loop alive,
    // closed by the kernel when the engine exits (node opens it close-on-exec, so no other child
    // inherits it and holds it open).
    const liveness = child.stdin!;
    liveness.on('error', () => {
      /* EPIPE once the worker is gone: expected */
    });
    (liveness as unknown as { unref?: () => void }).unref?.();
    const pid = child.pid;
    const started = processStartToken(pid);
    const exited = new Promise<ExitInfo>((resolve) => {
      child.once('exit', (code, signal) => {
        // The leader is gone; take anything it left behind in its group with it.
        killGroup(pid, 'SIGKILL');
        liveness.destroy();
        // Its last lines in the log file before the exit is reported (the report quotes them).
        void outputWritten(output).then(() => resolve({ code, signal }));
      });
      void spawnFailed.then(resolve);
    });
    return {
      pid,
      id: String(pid),
      ...(started ? { started } : {}),
      exited,
      async stop(graceMs: number): Promise<void> {
        killGroup(pid, 'SIGTERM');
        const t = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(t);
      },
    };
  }
}

function outputWritten(output: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((r) => (timer = setTimeout(r, OUTPUT_AFTER_EXIT_MS)));
  return Promise.race([output, late]).finally(() => clearTimeout(timer));
}
