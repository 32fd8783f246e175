import { Flags } from '@oclif/core';
import { InvocationError } from 'svc-sdk';
import type { EngineState } from '../daemon/engine-state.js';
import { printable } from '../engine/printable.js';
import { formatError, withClient } from './client.js';

/** `--wait` of `svc worker add|restart`: how long to wait for the worker to register. */
export const waitFlag = Flags.integer({
  summary: 'Seconds to wait for the worker to register; it exiting first is a failure (exit 1). 0: do not wait.',
  default: 15,
  min: 0,
  max: 300,
});

/** What engine::supervisor::add|restart answer (src/supervisor/control.ts). */
export interface StartedWorker {
  pid: number | null;
  pids: number[];
  instances: Array<string | null>;
  status: string;
  ready: boolean;
  /** add only: it ran before the call, which left it alone. */
  already_running?: boolean;
  /** The URLs its connected instances serve (svc-http's, with the port it bound). */
  urls?: string[];
}

interface ExitRow {
  name: string;
  last_exit: { how: string; output: string[] } | null;
}

/**
 * Have the engine start or restart worker `name` and wait for it to register. A worker that exits
 * first is reported with how it exited and its last lines of output, and the command exits 1: a
 * worker that cannot start is never announced as started.
 */
export async function startWorker(
  engine: EngineState,
  function_id: 'engine::supervisor::add' | 'engine::supervisor::restart',
  payload: { name: string; force: boolean },
  waitSeconds: number,
): Promise<StartedWorker> {
  const token = process.env.SVC_TOKEN ?? engine.token;
  try {
    return await withClient(engine.url, (w) => w.trigger<StartedWorker>({ function_id, payload: { ...payload, wait_ms: waitSeconds * 1000 }, timeoutMs: 600_000 + waitSeconds * 1000 }), 5000, token);
  } catch (e) {
    process.stderr.write(formatError(e) + '\n');
    if (e instanceof InvocationError && e.code === 'worker_start_failed') {
      const rows = await withClient(engine.url, (w) => w.trigger<{ workers: ExitRow[] }>({ function_id: 'engine::supervisor::list' }), 5000, token).catch(() => ({ workers: [] as ExitRow[] }));
      const exit = rows.workers.find((r) => r.name === payload.name)?.last_exit;
      if (exit && exit.output.length > 0) {
        process.stderr.write(`last output of ${payload.name} (${exit.how}):\n${exit.output.map((l) => `  │ ${printable(l)}\n`).join('')}`);
      }
      process.stderr.write(`full log: svc worker logs ${payload.name}\n`);
      // It stays in config.yaml and the engine keeps retrying it (until it crash-loops): say how to go on.
      process.stderr.write(`fix it, then: svc worker restart ${payload.name}   (or svc worker remove ${payload.name})\n`);
    }
    process.exit(1);
  }
}

/**
 * Where the worker's instances run, the way `worker add|restart` print it: `pid 5395`, or with
 * several replicas `pids 5395, 5396`; a container worker's short ids (`container 3f2a…`,
 * `containers 3f2a…, 9b1c…`) since a container has no pid here. Every replica is named: a user
 * who sees one pid of two looks for the other in vain.
 */
export function whereItRuns(d: StartedWorker): string {
  const several = (one: string, items: readonly string[]): string => `${items.length === 1 ? one : `${one}s`} ${items.join(', ')}`;
  const pids = d.pids.length > 0 ? d.pids : d.pid ? [d.pid] : [];
  if (pids.length > 0) return several('pid', pids.map(String));
  const ids = d.instances.filter((i): i is string => i !== null).map((i) => i.slice(0, 12));
  return several('container', ids.length > 0 ? ids : ['?']);
}

/** `, serving http://127.0.0.1:40123` for a worker whose instances serve URLs (svc-http), else nothing. */
export function whatItServes(d: StartedWorker): string {
  return d.urls && d.urls.length > 0 ? printable(`, serving ${d.urls.join(', ')}`) : '';
}
