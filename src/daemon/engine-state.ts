import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectStateDir } from '../supervisor/launch.js';
import { isSameProcess } from '../supervisor/process-identity.js';
import type { RecordedInstance } from '../supervisor/supervisor.js';

/**
 * Written by a running engine beside its config.yaml (.svc/engine.json, owner-only), so `svc
 * worker …` can find and talk to it, and so that the next engine of the project can clear what
 * this one started should it die without stopping them (kill -9, a crash).
 */
export interface EngineState {
  pid: number;
  /** processStartToken of the engine process: a recycled pid is not this engine. */
  pid_started?: string | null;
  /** The engine run's id (the prefix of every run secret it issued). */
  run?: string;
  url: string;
  config: string;
  started_at: string;
  /** The supervisor's admin token when the engine requires tokens: lets local `svc worker …` commands in. */
  token?: string;
  /** Presented by the project's own CLI and console (SVC_RUN_SECRET of an engine client). */
  client_secret?: string;
  /** What the engine started and is running now. */
  instances?: RecordedInstance[];
}

function stateFile(configFile: string): string {
  return join(projectStateDir(configFile), 'engine.json');
}

/**
 * Replace the file in one step, readable by the owner only: it holds the supervisor's token and
 * the client secret. Written to a fresh temporary file (mode 0600 applies to a file being created)
 * and renamed over the old one, so the old file's mode, say 0644 from an older svc or a copy, is
 * not kept and a reader never sees half a file.
 */
export function writeEngineState(configFile: string, s: EngineState): void {
  mkdirSync(projectStateDir(configFile), { recursive: true });
  const file = stateFile(configFile);
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  writeFileSync(tmp, JSON.stringify(s, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  // The umask can only take bits away from 0600; this makes the mode exact whatever the umask.
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export function clearEngineState(configFile: string, pid: number): void {
  const s = readRecordedEngineState(configFile);
  if (s && s.pid === pid) rmSync(stateFile(configFile), { force: true });
}

/** What the file says, whether or not its engine still runs; null when there is none or it is unreadable. */
export function readRecordedEngineState(configFile: string): EngineState | null {
  const f = stateFile(configFile);
  if (!existsSync(f)) return null;
  try {
    const s = JSON.parse(readFileSync(f, 'utf8')) as EngineState;
    return typeof s === 'object' && s !== null && typeof s.pid === 'number' ? s : null;
  } catch {
    return null;
  }
}

/** The recorded engine process still runs (the same process, not a later one with its pid). */
export function engineAlive(s: EngineState): boolean {
  return isSameProcess(s.pid, s.pid_started);
}

/** The running engine for this config, or null (no file, or its process is gone). */
export function readEngineState(configFile: string): EngineState | null {
  const s = readRecordedEngineState(configFile);
  return s && engineAlive(s) ? s : null;
}
