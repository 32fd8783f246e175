import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectStateDir } from './launch.js';

/** Written by a running engine beside its config.yaml, so `svc worker …` can find and talk to it. */
export interface EngineState {
  pid: number;
  url: string;
  config: string;
  started_at: string;
  /** The supervisor's admin token when the engine requires tokens: lets local `svc worker …` commands in. */
  token?: string;
}

function stateFile(configFile: string): string {
  return join(projectStateDir(configFile), 'engine.json');
}

export function writeEngineState(configFile: string, s: EngineState): void {
  mkdirSync(projectStateDir(configFile), { recursive: true });
  // Readable by the owner only: it may hold the supervisor's token.
  writeFileSync(stateFile(configFile), JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
}

export function clearEngineState(configFile: string, pid: number): void {
  const s = readEngineState(configFile);
  if (s && s.pid === pid) rmSync(stateFile(configFile), { force: true });
}

/** The running engine for this config, or null (no file, or its process is gone). */
export function readEngineState(configFile: string): EngineState | null {
  const f = stateFile(configFile);
  if (!existsSync(f)) return null;
  try {
    const s = JSON.parse(readFileSync(f, 'utf8')) as EngineState;
    process.kill(s.pid, 0);
    return s;
  } catch {
    return null;
  }
}
