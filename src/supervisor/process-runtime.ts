import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ExitInfo, Instance, LaunchSpec, Runtime } from './runtime.js';

/** A command with no shell syntax can be `exec`ed, so the pid we report is the worker's own. */
const SIMPLE_COMMAND = /^[\w@%+=:,./~ -]+$/;

/**
 * Runs each instance as a child process in its own process group, with stdout and stderr going
 * straight to the worker's log file (nothing passes through the engine's event loop). Stopping
 * signals the whole group, so helpers the worker spawned (npx, tsx) go too: no orphans.
 */
export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;

  async launch(spec: LaunchSpec): Promise<Instance> {
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const fd = openSync(spec.logFile, 'a');
    writeSync(fd, `\n=== ${new Date().toISOString()} starting ${spec.name}${spec.replica > 0 ? ` [replica ${spec.replica}]` : ''}: ${spec.command}\n`);
    const command = SIMPLE_COMMAND.test(spec.command) ? `exec ${spec.command}` : spec.command;
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    closeSync(fd);
    const pid = child.pid;
    const exited = new Promise<ExitInfo>((resolve) => {
      child.once('exit', (code, signal) => {
        // The leader is gone; take anything it left behind in its group with it.
        if (pid) killGroup(pid, 'SIGKILL');
        resolve({ code, signal });
      });
      child.once('error', (err) => resolve({ code: 127, signal: `spawn failed: ${err.message}` }));
    });
    if (!pid) {
      const info = await exited;
      throw new Error(`could not start ${spec.name}: ${info.signal ?? 'unknown error'}`);
    }
    return {
      pid,
      id: String(pid),
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

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}
