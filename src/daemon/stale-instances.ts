import { processStartToken } from '../supervisor/process-identity.js';
import type { RecordedInstance } from '../supervisor/supervisor.js';
import type { EngineState } from './engine-state.js';

/** How long stale processes get to exit on SIGTERM before they are killed. */
const STALE_TERM_GRACE_MS = 2000;

/**
 * Stop the worker processes an earlier engine of this project recorded in .svc/engine.json and
 * left running (it was killed with SIGKILL or crashed, so it never stopped them). Only a process
 * that is still the one recorded is touched: its pid runs and has the start time recorded with it
 * (a pid the OS has since given to another program does not match). Each leads its own process
 * group, so the helpers it started go with it: SIGTERM to the group, SIGKILL after a grace period.
 * Containers are not handled here: DockerRuntime.removeStale removes every container labelled
 * with the project. Returns the instances it stopped.
 */
export async function stopStaleProcesses(previous: EngineState, graceMs = STALE_TERM_GRACE_MS): Promise<RecordedInstance[]> {
  const stale = (previous.instances ?? []).filter(
    (i) => i.runtime === 'process' && typeof i.pid === 'number' && typeof i.started === 'string' && processStartToken(i.pid) === i.started,
  );
  if (stale.length === 0) return [];
  for (const i of stale) signalGroup(i.pid!, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  let left = stale;
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = left.filter((i) => processStartToken(i.pid!) === i.started);
  }
  for (const i of left) signalGroup(i.pid!, 'SIGKILL');
  return stale;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Not a group leader any more (or already gone): the process itself.
    try {
      process.kill(pid, signal);
    } catch {
      /* gone */
    }
  }
}

/** The one line a starting engine prints about what it stopped. */
export function describeStopped(stopped: RecordedInstance[], previous: EngineState, configName: string): string {
  const what = stopped.map((i) => `${i.worker}${i.replica > 0 ? ` [${i.replica}]` : ''} (pid ${i.pid})`).join(', ');
  return `stopped ${stopped.length} worker process(es) left running by an earlier engine of ${configName} (pid ${previous.pid}, which did not stop them): ${what}`;
}
