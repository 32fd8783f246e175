import { useEffect, useRef, useState } from 'react';
import { call, CallError, linkDownError, linkIsDown, onLink } from '../api';
import { Empty, ErrorNote, Level, PageHeader } from '../components';
import { clock, json } from '../format';

interface LogLine {
  seq: number;
  time: string;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  source: 'worker' | 'engine';
  worker_id?: string;
  worker_name?: string;
  function_id?: string;
  invocation_id?: string;
  trace_id?: string;
  data?: unknown;
}

/**
 * A failed call's error line carries the worker's stack trace as `data.stacktrace`: shown as lines
 * of its own (as `svc logs` prints it), not inside the one-line JSON of the data, where its `\n`s
 * would be escapes and its paths would widen the table past the window. `data`: what is left to
 * show as JSON (undefined when nothing is).
 */
function splitStack(data: unknown): { data: unknown; stack: string | undefined } {
  if (data === undefined || data === null) return { data: undefined, stack: undefined };
  const s = typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>).stacktrace : undefined;
  if (typeof s !== 'string' || s === '') return { data, stack: undefined };
  const { stacktrace: _shown, ...others } = data as Record<string, unknown>;
  return { data: Object.keys(others).length > 0 ? others : undefined, stack: s };
}

function MessageCell({ line: l, openTrace }: { line: LogLine; openTrace: (id: string) => void }) {
  const { data, stack } = splitStack(l.data);
  return (
    <td className="log-message">
      <span className="msg">{l.message}</span>
      {data !== undefined && <code className="data">{json(data, 0)}</code>}
      {l.trace_id && (
        <button className="link" onClick={() => openTrace(l.trace_id!)} title={`trace ${l.trace_id}`}>
          trace
        </button>
      )}
      {stack !== undefined && (
        <details className="log-stack">
          <summary>stack trace</summary>
          <pre className="mono" data-testid="log-stack">{stack}</pre>
        </details>
      )}
    </td>
  );
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const KEEP = 2000;

/** Live: the newest lines first fetched, then every second only the lines after the last seq. */
export function LogsPage({ openTrace }: { openTrace: (id: string) => void }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<Error>();
  const [worker, setWorker] = useState('');
  const [level, setLevel] = useState<string>('debug');
  const [text, setText] = useState('');
  const [paused, setPaused] = useState(false);
  const last = useRef(0);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;

  useEffect(() => {
    let stop = false;
    let busy = false;
    let recheck = false;
    let wasDown = false;
    const offLink = onLink((l) => {
      if (l !== 'ok') recheck = wasDown = true;
      else if (wasDown) {
        // Back: read at once rather than on the next tick.
        wasDown = false;
        void tick();
      }
    });
    const tick = async (): Promise<void> => {
      if (busy || pausedRef.current) return;
      // Nothing is asked while the engine or the console server is away (the banner says so).
      if (linkIsDown()) {
        setError(linkDownError());
        return;
      }
      busy = true;
      try {
        if (recheck && last.current) {
          // After the engine was away: a restarted engine numbers its lines from 1 again.
          const newest = await call<{ logs: LogLine[] }>('engine::logs::list', { limit: 1 });
          recheck = false;
          if ((newest.logs.at(-1)?.seq ?? 0) < last.current) {
            last.current = 0;
            setLines([]);
          }
        }
        const { logs } = await call<{ logs: LogLine[] }>('engine::logs::list', last.current ? { since_seq: last.current, limit: KEEP } : { limit: KEEP });
        if (stop) return;
        if (logs.length > 0) {
          last.current = logs.at(-1)!.seq;
          setLines((prev) => [...prev, ...logs].slice(-KEEP));
        }
        setLoaded(true);
        setError(undefined);
      } catch (e) {
        if (!stop) setError(e as Error);
      } finally {
        busy = false;
      }
    };
    void tick();
    const t = setInterval(() => void tick(), 1000);
    return () => {
      stop = true;
      offLink();
      clearInterval(t);
    };
  }, []);

  const minLevel = LEVELS.indexOf(level as LogLine['level']);
  const needle = text.toLowerCase();
  const shown = lines.filter(
    (l) =>
      LEVELS.indexOf(l.level) >= minLevel &&
      (!worker || (worker === 'engine' ? l.source === 'engine' : l.worker_name === worker)) &&
      (!needle || l.message.toLowerCase().includes(needle) || (l.function_id ?? '').toLowerCase().includes(needle)),
  );
  const workers = [...new Set(lines.filter((l) => l.source === 'worker' && l.worker_name).map((l) => l.worker_name!))].sort();

  return (
    <section data-testid="page-logs">
      <PageHeader title="Logs">
        <select value={worker} onChange={(e) => setWorker(e.target.value)} aria-label="worker" data-testid="log-worker">
          <option value="">all workers</option>
          <option value="engine">engine</option>
          {workers.map((w) => (
            <option key={w} value={w}>
              {w}
            </option>
          ))}
        </select>
        <select value={level} onChange={(e) => setLevel(e.target.value)} aria-label="minimum level" data-testid="log-level">
          {LEVELS.map((l) => (
            <option key={l} value={l}>
              {l === 'debug' ? 'all levels' : `${l} and above`}
            </option>
          ))}
        </select>
        <input placeholder="filter text" value={text} onChange={(e) => setText(e.target.value)} aria-label="text" data-testid="log-text" />
        <button onClick={() => setPaused(!paused)}>{paused ? 'Resume' : 'Pause'}</button>
      </PageHeader>
      <ErrorNote error={error instanceof CallError ? error : undefined} />
      {!loaded ? null : shown.length === 0 ? (
        <Empty>{lines.length === 0 ? 'No log lines yet. Workers log with Logger; the engine logs workers joining and leaving.' : 'No lines match the filters.'}</Empty>
      ) : (
        <table className="grid logs" data-testid="logs-table">
          <thead>
            <tr>
              <th>Time</th>
              <th>Level</th>
              <th>Worker</th>
              <th>Function</th>
              <th>Message</th>
            </tr>
          </thead>
          <tbody>
            {[...shown].reverse().map((l) => (
              <tr key={l.seq} data-testid="log-row" className={`log-${l.level}`}>
                <td className="mono small nowrap">{clock(l.time)}</td>
                <td>
                  <Level value={l.level} />
                </td>
                <td className="log-worker">{l.source === 'engine' ? <em>engine</em> : l.worker_name}</td>
                <td className="mono small">{l.function_id ?? ''}</td>
                <MessageCell line={l} openTrace={openTrace} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
