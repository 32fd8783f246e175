import { useState } from 'react';
import { call, getBackgroundTracePrefix } from '../api';
import { Empty, ErrorNote, Loading, PageHeader, Status } from '../components';
import { clock, duration } from '../format';
import { usePoll } from '../hooks';

interface TraceSummary {
  trace_id: string;
  root: { function_id: string; caller_worker_name: string; callee_worker_name: string; status: string; duration_ms: number };
  start: string;
  duration_ms: number;
  span_count: number;
  error_count: number;
  workers: string[];
}
interface Span {
  span_id: string;
  parent_span_id: string | null;
  function_id: string;
  invocation_id: string;
  caller_worker_name: string;
  callee_worker_name: string;
  start_ms: number;
  start: string;
  duration_ms: number;
  status: string;
  /** `stacktrace`: the callee's stack trace (a JS stack, a Python traceback), when it sent one. */
  error: { code: string; message: string; stacktrace?: string } | null;
  depth: number;
}

export function TracesPage({ traceId, open }: { traceId: string | undefined; open: (id: string | null) => void }) {
  return traceId ? <TraceDetail id={traceId} back={() => open(null)} /> : <TraceList open={open} />;
}

const SHOWN = 100;

function TraceList({ open }: { open: (id: string) => void }) {
  // The console's own periodic reads (state::list, queue::list, cron::list… every second) are
  // traces too; left out unless asked, they do not push the system's own traces off the list.
  const [reads, setReads] = useState(false);
  const { data, error } = usePoll(
    async () => {
      const r = await call<{ tracing: boolean; traces: TraceSummary[] }>('engine::traces::list', { limit: reads ? SHOWN : SHOWN * 5 });
      const prefix = getBackgroundTracePrefix();
      const own = (t: TraceSummary): boolean => prefix !== '' && t.trace_id.startsWith(prefix);
      return { ...r, traces: (reads ? r.traces : r.traces.filter((t) => !own(t))).slice(0, SHOWN) };
    },
    1000,
    [reads],
  );
  return (
    <section data-testid="page-traces">
      <PageHeader title="Traces">
        <label className="toggle">
          <input type="checkbox" data-testid="show-console-reads" checked={reads} onChange={(e) => setReads(e.target.checked)} /> show the console&apos;s own reads
        </label>
        {data && <span className="count">{data.traces.length} recent</span>}
      </PageHeader>
      <ErrorNote error={error} />
      {!data ? (
        <Loading error={error} />
      ) : !data.tracing ? (
        <Empty>Tracing is off in this engine (engine.tracing: false in config.yaml).</Empty>
      ) : data.traces.length === 0 ? (
        <Empty>No traces yet. Every call routed by the engine is recorded: call a function, or send an HTTP request.</Empty>
      ) : (
        <table className="grid clickable" data-testid="traces-table">
          <thead>
            <tr>
              <th>Started</th>
              <th>Root function</th>
              <th>Called by</th>
              <th className="num">Spans</th>
              <th>Workers</th>
              <th className="num">Duration</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {data.traces.map((t) => (
              <tr key={t.trace_id} onClick={() => open(t.trace_id)} data-testid="trace-row" data-root={t.root.function_id} data-spans={t.span_count}>
                <td className="mono small nowrap">{clock(t.start)}</td>
                <td className="mono">
                  {/* A link, so that the keyboard (Tab, Enter) and a new tab reach the trace too; the row's click is the mouse's shortcut. */}
                  <a href={`#/traces/${t.trace_id}`} data-testid="trace-link">
                    {t.root.function_id}
                  </a>
                </td>
                <td>{t.root.caller_worker_name}</td>
                <td className="num">{t.span_count}</td>
                <td className="small">{t.workers.join(', ')}</td>
                <td className="num">{duration(t.duration_ms)}</td>
                <td>
                  <Status value={t.error_count > 0 ? (t.root.status === 'ok' ? 'error' : t.root.status) : 'ok'} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function TraceDetail({ id, back }: { id: string; back: () => void }) {
  const { data, error } = usePoll(() => call<{ trace_id: string; spans: Span[] }>('engine::traces::get', { trace_id: id }), 2000, [id]);
  const spans = data?.spans ?? [];
  const t0 = Math.min(...spans.map((s) => s.start_ms));
  const t1 = Math.max(...spans.map((s) => s.start_ms + s.duration_ms));
  const total = Math.max(t1 - t0, 0.001);
  return (
    <section data-testid="page-trace">
      <PageHeader title="Trace">
        <button onClick={back}>← All traces</button>
      </PageHeader>
      <div className="mono sub">{id}</div>
      <ErrorNote error={error} />
      {!data && !error ? (
        <Loading error={error} />
      ) : data ? (
        <>
          <p className="sub" data-testid="trace-summary">
            {`${plural(spans.length, 'span')} across ${plural(new Set(spans.map((s) => s.callee_worker_name)).size, 'worker')}, ${duration(total)} from first start to last end.`}
          </p>
          <div className="waterfall" data-testid="waterfall">
            <div className="wf-head">
              <div>Function</div>
              <div>Worker</div>
              <div className="num">Duration</div>
              <div className="wf-axis">
                <span>0</span>
                <span>{duration(total / 2)}</span>
                <span>{duration(total)}</span>
              </div>
            </div>
            {spans.map((s) => {
              const left = ((s.start_ms - t0) / total) * 100;
              const width = Math.min(Math.max((s.duration_ms / total) * 100, 0.4), 100 - left);
              return (
                <div className="wf-row" key={s.span_id} data-testid="span-row" data-function={s.function_id} data-status={s.status}>
                  <div className="wf-name mono" style={{ paddingLeft: `${12 + s.depth * 16}px` }} title={`span ${s.span_id}, invocation ${s.invocation_id}`}>
                    {s.depth > 0 ? '└ ' : ''}
                    {s.function_id}
                  </div>
                  <div className="wf-worker small">
                    {s.callee_worker_name}
                    <div className="sub">from {s.caller_worker_name}</div>
                  </div>
                  <div className="num small">
                    {duration(s.duration_ms)}
                    {s.status !== 'ok' ? <div><Status value={s.status} /></div> : null}
                  </div>
                  <div className="wf-track">
                    <div className="wf-lane">
                      <div className={`wf-bar bar-${s.status}`} style={{ left: `${left}%`, width: `${width}%` }} title={`starts at +${duration(s.start_ms - t0)}, lasts ${duration(s.duration_ms)}`} />
                    </div>
                  </div>
                  {s.error && (
                    <div className="wf-error" data-testid="span-error">
                      <code>{s.error.code}</code> {s.error.message}
                      {s.error.stacktrace ? (
                        <details open className="wf-stack">
                          <summary>Stack trace from {s.callee_worker_name}</summary>
                          <pre className="mono" data-testid="span-stack">{s.error.stacktrace}</pre>
                        </details>
                      ) : null}
                    </div>
                  )}
                </div>
              );
            })}
          </div>
        </>
      ) : null}
    </section>
  );
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
