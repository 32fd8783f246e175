import { useState } from 'react';
import { call, poll } from '../api';
import { Empty, ErrorNote, Loading } from '../components';
import { json, when } from '../format';
import { usePoll } from '../hooks';
import type { QueueRow } from './Queues';

type JobState = 'dlq' | 'waiting' | 'delayed' | 'running';

interface Job {
  id: string;
  function_id: string;
  data: unknown;
  attempts: number;
  failures: number;
  group: string | null;
  topic: string | null;
  enqueued_at: number;
  at: number | null;
  error: { code: string; message: string } | null;
  history: Array<{ attempt: number; at: number; duration_ms: number; code: string; message: string }>;
}

const STATES: Array<[JobState, string]> = [
  ['dlq', 'Dead-letter queue'],
  ['waiting', 'Waiting'],
  ['delayed', 'Delayed'],
  ['running', 'Running'],
];

/** A job's moment: the time if today, else the date too (a dead-lettered job may wait for days). */
const time = (ms: number | null): string => (ms === null ? '-' : when(new Date(ms).toISOString()));

/** One queue's jobs by state; the DLQ with buttons to redrive or delete one job or all. */
export function QueueJobs({ queue }: { queue: QueueRow }) {
  const [state, setState] = useState<JobState>('dlq');
  const [problem, setProblem] = useState<string>();
  const [done, setDone] = useState<string>();
  // The list and its count come from one call (svc-queue reads them together), so they agree.
  const { data, error, refresh } = usePoll(() => poll<{ total: number; jobs: Job[] }>('queue::jobs', { queue: queue.queue, state, limit: 100 }), 1000, [queue.queue, state]);
  const act = async (fn: 'queue::dlq::redrive' | 'queue::dlq::delete', id: string | null, what: string): Promise<void> => {
    if (id === null && !window.confirm(`${what} every dead-lettered job of ${queue.queue}?`)) return;
    try {
      const r = await call<{ redriven?: number; deleted?: number }>(fn, { queue: queue.queue, ...(id ? { id } : {}) });
      setDone(`${what}: ${r.redriven ?? r.deleted ?? 0} job(s)`);
      setProblem(undefined);
      refresh();
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  return (
    <div className="detail queue-detail" data-testid="queue-detail">
      <div className="row">
        <h2 className="mono grow">{queue.queue}</h2>
        {STATES.map(([s, label]) => (
          <button key={s} className={s === state ? 'primary' : ''} onClick={() => setState(s)} data-testid={`jobs-${s}`}>
            {label} ({queue[s]})
          </button>
        ))}
      </div>
      {queue.config && <p className="sub mono">{Object.entries(queue.config).filter(([, v]) => v !== null).map(([k, v]) => `${k}: ${String(v)}`).join(' · ')}</p>}
      <ErrorNote error={error} />
      {problem && (
        <div className="error-note" role="alert">
          {problem}
        </div>
      )}
      {done && <p className="sub" data-testid="queue-action-done">{done}</p>}
      {!data ? (
        <Loading error={error} />
      ) : data.total === 0 ? (
        <Empty testId="jobs-empty">{state === 'dlq' ? 'The dead-letter queue is empty.' : `No ${state} jobs.`}</Empty>
      ) : (
        <>
          <div className="row">
            <span className="sub grow" data-testid="jobs-total">
              {data.total} {state === 'dlq' ? 'dead-lettered' : state} job(s){data.total > data.jobs.length ? `, the first ${data.jobs.length} shown` : ''}
            </span>
            {state === 'dlq' && (
              <>
                <button onClick={() => void act('queue::dlq::redrive', null, 'Redrive all')} data-testid="redrive-all">
                  Redrive all
                </button>
                <button className="danger" onClick={() => void act('queue::dlq::delete', null, 'Delete all')} data-testid="delete-all">
                  Delete all
                </button>
              </>
            )}
          </div>
          <table className="grid" data-testid="jobs-table">
            <thead>
              <tr>
                <th>Job</th>
                <th>Function</th>
                <th>Payload</th>
                <th className="num">Attempts</th>
                <th>{state === 'dlq' ? 'Last error' : state === 'delayed' ? 'Due' : state === 'running' ? 'Lease until' : 'Enqueued'}</th>
                {state === 'dlq' && <th />}
              </tr>
            </thead>
            <tbody>
              {data.jobs.map((j) => (
                <tr key={j.id} data-testid="job-row" data-id={j.id}>
                  <td className="mono">
                    {j.id}
                    {j.group !== null && <div className="sub">group {j.group}</div>}
                    {j.topic !== null && <div className="sub">topic {j.topic}</div>}
                  </td>
                  <td className="mono">{j.function_id}</td>
                  <td>
                    <pre className="value payload" data-testid="job-payload">{json(j.data, 0)}</pre>
                  </td>
                  <td className="num" data-testid="job-attempts">{j.attempts}</td>
                  <td>
                    {state === 'dlq' && j.error ? (
                      <div data-testid="job-error" title={j.history.map((h) => `#${h.attempt} ${h.code}: ${h.message}`).join('\n')}>
                        <code>{j.error.code}</code> {j.error.message.split('\n')[0]}
                        <div className="sub">failed at {time(j.at)} after {j.history.length} recorded attempt(s)</div>
                      </div>
                    ) : (
                      time(state === 'waiting' ? j.enqueued_at : j.at)
                    )}
                  </td>
                  {state === 'dlq' && (
                    <td className="nowrap">
                      <button onClick={() => void act('queue::dlq::redrive', j.id, 'Redrive')} data-testid="job-redrive">
                        Redrive
                      </button>{' '}
                      <button className="danger" onClick={() => void act('queue::dlq::delete', j.id, 'Delete')} data-testid="job-delete">
                        Delete
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
