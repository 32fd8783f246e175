import { callAll } from '../api';
import { Empty, ErrorNote, Loading, PageHeader, Status } from '../components';
import { bytes, duration, uptime } from '../format';
import { usePoll } from '../hooks';
import { useState } from 'react';
import { isInternal } from './Functions';
import { SupervisedWorkers, SupervisorActions, useSupervised } from './SupervisedWorkers';

interface WorkerInfo {
  worker_id: string;
  name: string;
  /** iii 0.23+: the namespace its functions are registered in. */
  namespace?: string;
  runtime: string;
  version: string | null;
  pid: number | null;
  status: string;
  functions: string[];
  trigger_types: string[];
  /** null for workers of other engines (cluster mode): their load is not published. */
  in_flight: number | null;
  uptime_ms: number;
  ip: string;
  /** Cluster mode: the node id of the engine the worker is connected to. */
  engine?: string;
  /** What the worker last reported of its process (engine::workers::report); null or absent: nothing yet. */
  process?: ProcessReport | null;
}

interface ProcessReport {
  cpu_user_seconds: number;
  cpu_system_seconds: number;
  rss_bytes: number;
  heap_used_bytes: number | null;
  event_loop_lag_mean_ms: number | null;
  event_loop_lag_max_ms: number | null;
  reported_at: string;
}

/** CPU, memory and loop-lag cells of one worker; '-' until it reports (or for another engine's workers). */
function ProcessCells({ p }: { p: ProcessReport | null | undefined }) {
  if (!p) {
    return (
      <>
        <td className="num">-</td>
        <td className="num">-</td>
        <td className="num">-</td>
      </>
    );
  }
  return (
    <>
      <td className="num" data-testid="worker-cpu" title="CPU time since the process started (user + system)">
        <span className="nowrap">{(p.cpu_user_seconds + p.cpu_system_seconds).toFixed(1)} s</span>
      </td>
      <td className="num" data-testid="worker-rss" title="Resident memory">
        <span className="nowrap">{bytes(p.rss_bytes)}</span>
        {p.heap_used_bytes !== null ? (
          <div className="sub">
            heap <span className="nowrap">{bytes(p.heap_used_bytes)}</span>
          </div>
        ) : null}
      </td>
      <td className="num" data-testid="worker-lag" title="Event-loop lag over the last report interval: mean, max">
        <span className="nowrap">{duration(p.event_loop_lag_mean_ms)}</span>
        {p.event_loop_lag_max_ms !== null ? (
          <div className="sub">
            max <span className="nowrap">{duration(p.event_loop_lag_max_ms)}</span>
          </div>
        ) : null}
      </td>
    </>
  );
}

/** What selects a worker's function on the Functions page: its id, after its namespace unless `default`. */
const functionKey = (w: WorkerInfo, f: string): string => (w.namespace && w.namespace !== 'default' ? `${w.namespace}/${f}` : f);

/** A worker's internal functions (svc-cron's cron::run_now::<process id>): one quiet "+N internal" link, the ids in its title. */
function InternalFunctions({ worker, ids }: { worker: WorkerInfo; ids: string[] }) {
  if (ids.length === 0) return null;
  return (
    <a className="sub internal-count" href={`#/functions/${encodeURIComponent(functionKey(worker, ids[0]!))}`} title={`Internal (metadata.internal), hidden from lists: ${ids.join(', ')}`} data-testid="worker-internal">
      +{ids.length} internal
    </a>
  );
}

export function WorkersPage() {
  const { data: listed, error } = usePoll(async () => {
    const [workers, functions] = await Promise.all([
      callAll<WorkerInfo>('engine::workers::list', 'workers'),
      // Which of their functions are internal (metadata.internal): counted apart, as plumbing.
      callAll<{ function_id: string; namespace?: string; metadata?: unknown }>('engine::functions::list', 'functions', { include_builtins: false }),
    ]);
    const internal = new Set(functions.filter(isInternal).map((f) => `${f.namespace ?? 'default'}/${f.function_id}`));
    return { workers, internal };
  });
  const data = listed?.workers;
  const internalOf = (w: WorkerInfo): Set<string> => new Set(w.functions.filter((f) => listed?.internal.has(`${w.namespace ?? 'default'}/${f}`)));
  const supervised = useSupervised();
  const supervisedNames = new Set((supervised.data ?? []).map((w) => w.name));
  const [actionError, setActionError] = useState<Error | undefined>();
  return (
    <section data-testid="page-workers">
      <PageHeader title="Workers">{data && <span className="count">{data.length} connected</span>}</PageHeader>
      <ErrorNote error={error ?? actionError} />
      <SupervisedWorkers supervised={supervised} />
      {!data ? (
        <Loading error={error} />
      ) : data.length === 0 ? (
        <Empty>
          No workers are connected. Add one with <code>svc worker add ./workers/&lt;name&gt;</code> (or <code>svc-state</code>, <code>svc-http</code>).
        </Empty>
      ) : (
        <table className="grid" data-testid="workers-table">
          <thead>
            <tr>
              <th>Name</th>
              <th className="fold-wide">Runtime</th>
              <th className="fold-wide">PID</th>
              <th>Status</th>
              <th className="worker-functions">Functions</th>
              <th className="num">In flight</th>
              <th className="num">CPU</th>
              <th className="num">Memory</th>
              <th className="num">Loop lag</th>
              <th className="num fold-wide">Uptime</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {[...data]
              .sort((a, b) => a.name.localeCompare(b.name))
              .map((w) => (
                <tr key={w.worker_id} data-testid="worker-row" data-name={w.name}>
                  <td className="worker-name">
                    <strong>{w.name}</strong>
                    <div className="sub mono">
                      {w.worker_id.slice(0, 8)} · {w.ip}
                      {w.engine ? <span data-testid="worker-engine"> · engine {w.engine}</span> : null}
                      {w.namespace && w.namespace !== 'default' ? <span data-testid="worker-namespace"> · namespace {w.namespace}</span> : null}
                    </div>
                    {/* Below 1440 px the Runtime, PID and Uptime columns fold into this line (styles.css). */}
                    <div className="sub fold-narrow" data-testid="worker-folded">
                      <span className="nowrap">
                        {w.runtime}
                        {w.version ? ` ${w.version}` : ''}
                      </span>{' '}
                      · <span className="nowrap">pid {w.pid ?? '-'}</span> · <span className="nowrap">up {uptime(w.uptime_ms)}</span>
                    </div>
                  </td>
                  <td className="fold-wide">
                    {w.runtime}
                    {w.version ? <span className="sub"> {w.version}</span> : null}
                  </td>
                  <td className="mono fold-wide">{w.pid ?? '-'}</td>
                  <td>
                    <Status value={w.status} />
                  </td>
                  <td>
                    {w.functions.length === 0 && w.trigger_types.length === 0 ? <span className="sub">none</span> : null}
                    {w.functions
                      .filter((f) => !internalOf(w).has(f))
                      .map((f) => (
                        <a key={f} className="chip mono" href={`#/functions/${encodeURIComponent(functionKey(w, f))}`}>
                          {f}
                        </a>
                      ))}
                    <InternalFunctions worker={w} ids={[...internalOf(w)]} />
                    {w.trigger_types.map((t) => (
                      <span key={t} className="chip chip-trigger" title="trigger type provided">
                        ⚡ {t}
                      </span>
                    ))}
                  </td>
                  <td className="num">{w.in_flight ?? '-'}</td>
                  <ProcessCells p={w.process} />
                  <td className="num fold-wide">
                    <span className="nowrap">{uptime(w.uptime_ms)}</span>
                  </td>
                  <td className="row-actions">
                    {supervisedNames.has(w.name) ? (
                      <SupervisorActions
                        name={w.name}
                        stopped={false}
                        onDone={(e) => {
                          setActionError(e);
                          supervised.refresh();
                        }}
                      />
                    ) : null}
                  </td>
                </tr>
              ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
