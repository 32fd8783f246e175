import { useState } from 'react';
import { call, CallError } from '../api';
import { ErrorNote, isUnreachable, Status } from '../components';
import { usePoll } from '../hooks';

/** A row of engine::supervisor::list (src/supervisor/supervisor.ts describe + control.ts). */
export interface SupervisedWorker {
  name: string;
  runtime: string;
  replicas: number;
  status: string;
  restarts: number;
  connections: number;
  last_error: string | null;
  last_exit: { how: string; at: string; output: string[] } | null;
}

/** The engine's supervised workers (none for an engine without a supervisor), polled every second. */
export function useSupervised() {
  // An engine without a supervisor (a bare engine, another engine of a cluster) has no such function.
  return usePoll(() =>
    call<{ workers: SupervisedWorker[] }>('engine::supervisor::list').then(
      (r) => r.workers,
      (e: unknown) => {
        if (e instanceof CallError && e.code === 'function_not_found') return [] as SupervisedWorker[];
        throw e;
      },
    ),
  );
}

/** Restart / Stop of one supervised worker: engine::supervisor::restart|stop, admin tokens only. */
export function SupervisorActions({ name, stopped, onDone }: { name: string; stopped: boolean; onDone: (error: Error | undefined) => void }) {
  const [busy, setBusy] = useState(false);
  const act = async (fn: 'engine::supervisor::restart' | 'engine::supervisor::stop') => {
    setBusy(true);
    let error: Error | undefined;
    try {
      await call(fn, fn === 'engine::supervisor::restart' ? { name, wait_ms: 10_000 } : { name });
    } catch (e) {
      error = e as Error;
    } finally {
      setBusy(false);
      onDone(error);
    }
  };
  return (
    <span className="actions">
      <button onClick={() => void act('engine::supervisor::restart')} disabled={busy} data-testid="supervised-restart">
        Restart
      </button>{' '}
      {!stopped ? (
        <button className="danger" onClick={() => void act('engine::supervisor::stop')} disabled={busy} data-testid="supervised-stop">
          Stop
        </button>
      ) : null}
    </span>
  );
}

/**
 * The supervised workers that are not (all) connected: starting, restarting, crash-looping, stopped,
 * failed. Without this a crash-looping worker simply disappeared from the Workers page. Restart and
 * Stop call engine::supervisor::restart|stop, which the engine allows admin tokens only.
 */
export function SupervisedWorkers({ supervised }: { supervised: ReturnType<typeof useSupervised> }) {
  const { data, error, refresh } = supervised;
  const [actionError, setActionError] = useState<Error | undefined>();
  const down = (data ?? []).filter((w) => w.status !== 'running' || w.connections < w.replicas);
  const done = (e: Error | undefined) => {
    setActionError(e);
    refresh();
  };
  // The engine away is the banner's to say: an empty "not connected" table under it said nothing.
  if (down.length === 0 && (!error || isUnreachable(error))) return null;
  return (
    <div className="supervised-down" data-testid="supervised-down">
      <h3>Supervised, not connected</h3>
      <ErrorNote error={error ?? actionError} />
      <table className="grid">
        <thead>
          <tr>
            <th>Name</th>
            <th>Status</th>
            <th className="num">Restarts</th>
            <th>Last exit</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {down
            .sort((a, b) => a.name.localeCompare(b.name))
            .map((w) => (
              <tr key={w.name} data-testid="supervised-row" data-name={w.name}>
                <td>
                  <strong>{w.name}</strong>
                  <div className="sub">
                    {w.runtime}
                    {w.replicas > 1 ? ` ×${w.replicas}, ${w.connections} connected` : ''}
                  </div>
                </td>
                <td>
                  <Status value={w.status} />
                </td>
                <td className="num">{w.restarts}</td>
                <td>
                  {w.last_error ? <div data-testid="supervised-error">{w.last_error}</div> : <span className="sub">none</span>}
                  {w.last_exit && w.last_exit.output.length > 0 ? (
                    <pre className="mono sub" data-testid="supervised-output">
                      {w.last_exit.output.join('\n')}
                    </pre>
                  ) : null}
                </td>
                <td>
                  <SupervisorActions name={w.name} stopped={w.status === 'stopped'} onDone={done} />
                </td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
