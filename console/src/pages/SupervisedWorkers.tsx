import { useState } from 'react';
import { call, CallError } from '../api';
import { ErrorNote, Status } from '../components';
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

/**
 * The supervised workers that are not (all) connected: starting, restarting, crash-looping, stopped,
 * failed. Without this a crash-looping worker simply disappeared from the Workers page. Restart and
 * Stop call engine::supervisor::restart|stop, which the engine allows admin tokens only.
 */
export function SupervisedWorkers() {
  // An engine without a supervisor (a bare engine, another engine of a cluster) has no such function.
  const { data, error, refresh } = usePoll(() =>
    call<{ workers: SupervisedWorker[] }>('engine::supervisor::list').then(
      (r) => r.workers,
      (e: unknown) => {
        if (e instanceof CallError && e.code === 'function_not_found') return [] as SupervisedWorker[];
        throw e;
      },
    ),
  );
  const [busy, setBusy] = useState<string | null>(null);
  const [actionError, setActionError] = useState<Error | undefined>();
  const down = (data ?? []).filter((w) => w.status !== 'running' || w.connections < w.replicas);
  const act = async (fn: 'engine::supervisor::restart' | 'engine::supervisor::stop', name: string) => {
    setBusy(name);
    setActionError(undefined);
    try {
      await call(fn, { name, wait_ms: fn === 'engine::supervisor::restart' ? 10_000 : undefined });
    } catch (e) {
      setActionError(e as Error);
    } finally {
      setBusy(null);
      refresh();
    }
  };
  if (down.length === 0 && !error) return null;
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
                  <button onClick={() => void act('engine::supervisor::restart', w.name)} disabled={busy !== null} data-testid="supervised-restart">
                    Restart
                  </button>{' '}
                  {w.status !== 'stopped' ? (
                    <button className="danger" onClick={() => void act('engine::supervisor::stop', w.name)} disabled={busy !== null} data-testid="supervised-stop">
                      Stop
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
