import { useState } from 'react';
import { callAll, CallError, invoke, type CallOutcome } from '../api';
import { Empty, ErrorNote, Loading, PageHeader } from '../components';
import { duration, json, parseJson } from '../format';
import { usePoll } from '../hooks';

interface FunctionInfo {
  function_id: string;
  /** iii 0.23+: the namespace it is registered in (`default` unless its worker named one). */
  namespace?: string;
  description: string | null;
  request_format: unknown;
  response_format: unknown;
  builtin: boolean;
  /** What its worker registered with it; `{internal: true}` marks a worker's own plumbing (docs/protocol.md). */
  metadata?: unknown;
  /** `engine`: cluster mode, the node id of the engine the worker is connected to. */
  workers: Array<{ worker_id: string; worker_name: string; engine?: string }>;
  in_flight: number;
}

/** What selects a function: its id, prefixed with its namespace when that is not `default` (one id may be in several). */
const keyOf = (f: FunctionInfo): string => (f.namespace && f.namespace !== 'default' ? `${f.namespace}/${f.function_id}` : f.function_id);

/**
 * Whether `f` is plumbing rather than a function for users: an engine builtin (`engine::*`), or
 * one its worker registered with `metadata.internal` (svc-cron's `cron::run_now::<process id>`).
 */
export const isInternal = (f: { builtin?: boolean; metadata?: unknown }): boolean =>
  f.builtin === true || (typeof f.metadata === 'object' && f.metadata !== null && (f.metadata as { internal?: unknown }).internal === true);

/** A worker's name, with its engine in cluster mode. */
const servedBy = (w: { worker_name: string; engine?: string }): string => (w.engine ? `${w.worker_name} @ ${w.engine}` : w.worker_name);

export function FunctionsPage({ selected, select }: { selected: string | undefined; select: (id: string) => void }) {
  const [internal, setInternal] = useState(false);
  const { data: all, error } = usePoll(
    () => callAll<FunctionInfo>('engine::functions::list', 'functions', { include_builtins: internal }),
    1000,
    [internal],
  );
  const data = internal ? all : all?.filter((f) => !isInternal(f));
  // A link to an internal function (from the Workers page) shows it, as the switch would.
  const current = all?.find((f) => keyOf(f) === selected);
  return (
    <section data-testid="page-functions">
      <PageHeader title="Functions">
        <label className="toggle" title="engine::* builtins, and functions a worker registered as internal (metadata.internal), such as svc-cron's cron::run_now::<process id>">
          <input type="checkbox" checked={internal} onChange={(e) => setInternal(e.target.checked)} data-testid="show-internal" /> show internal functions
        </label>
      </PageHeader>
      <ErrorNote error={error} />
      {!data ? (
        <Loading error={error} />
      ) : data.length === 0 ? (
        <Empty>No functions are registered. Workers register them when they connect.</Empty>
      ) : (
        <div className="split">
          <ul className="list" data-testid="function-list">
            {[...data]
              .sort((a, b) => keyOf(a).localeCompare(keyOf(b)))
              .map((f) => (
                <li key={keyOf(f)}>
                  <button className={keyOf(f) === selected ? 'active' : ''} onClick={() => select(keyOf(f))} data-testid="function-item" data-id={f.function_id}>
                    <span className="mono">{f.function_id}</span>
                    {f.namespace && f.namespace !== 'default' && <span className="badge" data-testid="function-namespace">{f.namespace}</span>}
                    {!f.builtin && isInternal(f) && (
                      <span className="badge badge-internal" data-testid="function-internal">
                        internal
                      </span>
                    )}
                    <span className="sub">{f.builtin ? 'engine' : f.workers.map(servedBy).join(', ')}</span>
                    {f.in_flight > 0 && <span className="badge">{f.in_flight} in flight</span>}
                  </button>
                </li>
              ))}
          </ul>
          <div className="detail detail-sticky" data-testid="function-detail-panel">
            {current ? (
              <FunctionDetail key={keyOf(current)} f={current} />
            ) : selected ? (
              <Empty>Function {selected} is not registered (any more).</Empty>
            ) : (
              <Empty>Select a function to see it and invoke it.</Empty>
            )}
          </div>
        </div>
      )}
    </section>
  );
}

function FunctionDetail({ f }: { f: FunctionInfo }) {
  const [payload, setPayload] = useState('{}');
  const [outcome, setOutcome] = useState<CallOutcome<unknown>>();
  const [problem, setProblem] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const run = async (): Promise<void> => {
    const p = parseJson(payload);
    setOutcome(undefined);
    if (!p.ok) {
      setProblem(new CallError('invalid_json', p.message));
      return;
    }
    setProblem(undefined);
    setBusy(true);
    try {
      setOutcome(await invoke(f.function_id, p.value, undefined, f.namespace));
    } catch (e) {
      setProblem(e as Error);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div data-testid="function-detail">
      <h2 className="mono">{f.function_id}</h2>
      {f.description && <p>{f.description}</p>}
      <dl className="facts">
        <dt>Namespace</dt>
        <dd data-testid="detail-namespace">{f.namespace ?? 'default'}</dd>
        <dt>Served by</dt>
        <dd>{f.builtin ? 'the engine' : f.workers.map(servedBy).join(', ') || 'nobody'}</dd>
        <dt>In flight</dt>
        <dd>{f.in_flight}</dd>
        {f.request_format ? (
          <>
            <dt>Request format</dt>
            <dd>
              <pre>{json(f.request_format)}</pre>
            </dd>
          </>
        ) : null}
      </dl>
      <h3>Invoke</h3>
      <textarea
        className="code"
        rows={6}
        value={payload}
        onChange={(e) => setPayload(e.target.value)}
        spellCheck={false}
        data-testid="payload"
        aria-label="JSON payload"
      />
      <div className="row">
        <button className="primary" onClick={() => void run()} disabled={busy} data-testid="invoke">
          {busy ? 'Invoking…' : 'Invoke'}
        </button>
      </div>
      {problem && (
        <div className="error-note" role="alert">
          <code>{problem instanceof CallError ? problem.code : 'error'}</code> {problem.message}
        </div>
      )}
      {outcome && (
        <div className={`outcome ${outcome.ok ? 'ok' : 'failed'}`} data-testid="outcome">
          <div className="outcome-head">
            {outcome.ok ? 'Result' : 'Error'} <span className="sub" data-testid="duration">in {duration(outcome.duration_ms)}</span>
            {outcome.trace_id && (
              <a className="outcome-trace" href={`#/traces/${outcome.trace_id}`} data-testid="outcome-trace">
                trace
              </a>
            )}
          </div>
          {outcome.ok || !outcome.error ? (
            <pre data-testid="result">{json(outcome.ok ? outcome.result : outcome.error)}</pre>
          ) : (
            <>
              {/* The error as a line, its stack trace as lines: not one JSON string of `\n` escapes. */}
              <pre data-testid="result">
                <code>{outcome.error.code}</code> {outcome.error.message}
              </pre>
              {outcome.error.stacktrace && (
                <details open className="wf-stack">
                  <summary>Stack trace from {f.workers.map(servedBy).join(', ') || 'the worker'}</summary>
                  <pre className="mono" data-testid="outcome-stack">{outcome.error.stacktrace}</pre>
                </details>
              )}
            </>
          )}
        </div>
      )}
    </div>
  );
}
