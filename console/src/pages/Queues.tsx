import { useRef } from 'react';
import { call, CallError, getBackgroundTracePrefix, poll } from '../api';
import { Empty, ErrorNote, Loading, PageHeader } from '../components';
import { usePoll } from '../hooks';
import { QueueJobs } from './QueueJobs';

export interface QueueRow {
  queue: string;
  configured: boolean;
  waiting: number;
  delayed: number;
  running: number;
  dlq: number;
  completed: number;
  failed: number;
  config: Record<string, unknown> | null;
}

interface Listing {
  queues: QueueRow[];
  topics: Array<{ topic: string; subscribers: Array<{ function_id: string; queue: string; live: boolean }> }>;
  absent_functions: string[];
  at: number;
}

interface InFlight {
  function_id: string;
  in_flight: number;
}

function missingQueue(e: Error | undefined): boolean {
  return e instanceof CallError && e.code === 'function_not_found';
}

/**
 * Durable queues (svc-queue's queue::list): per queue waiting, delayed, running, done per second,
 * failed attempts and the DLQ size; a queue's jobs and DLQ below it. Calls in flight per function
 * (the engine's own view) at the end.
 */
export function QueuesPage({ selected, select }: { selected: string | undefined; select: (q: string) => void }) {
  // Done per second: the change of each queue's completed counter between two polls.
  const last = useRef<{ at: number; completed: Map<string, number> } | null>(null);
  const rates = useRef(new Map<string, number>());
  const { data, error } = usePoll(async () => {
    const l = await poll<Listing>('queue::list');
    const prev = last.current;
    if (prev && l.at > prev.at) {
      for (const q of l.queues) rates.current.set(q.queue, Math.max(0, ((q.completed - (prev.completed.get(q.queue) ?? q.completed)) * 1000) / (l.at - prev.at)));
    }
    last.current = { at: l.at, completed: new Map(l.queues.map((q) => [q.queue, q.completed])) };
    return l;
  });
  // Not the page's own reads (queue::list above, in flight while this one asks): their traces begin with its prefix.
  const calls = usePoll(() => {
    const prefix = getBackgroundTracePrefix();
    return call<{ queues: InFlight[] }>('engine::queues::list', prefix ? { exclude_trace_prefix: prefix } : {}).then((r) => r.queues.filter((x) => x.in_flight > 0));
  });
  const current = data?.queues.find((q) => q.queue === selected);
  return (
    <section data-testid="page-queues">
      <PageHeader title="Queues">{data && <span className="count">{data.queues.reduce((n, q) => n + q.waiting + q.delayed + q.running, 0)} job(s) waiting, delayed or running</span>}</PageHeader>
      {missingQueue(error) ? (
        <Empty testId="queues-missing">
          svc-queue is not running, so there are no durable queues: calls run at once or not at all. Start it with <code>svc worker add svc-queue</code>.
        </Empty>
      ) : (
        <>
          <ErrorNote error={error} />
          {!data ? (
            <Loading error={error} />
          ) : (
            <>
              <table className="grid" data-testid="queues-table">
                <thead>
                  <tr>
                    <th>Queue</th>
                    <th className="num">Waiting</th>
                    <th className="num">Delayed</th>
                    <th className="num">Running</th>
                    <th className="num">Done/s</th>
                    <th className="num">Completed</th>
                    <th className="num">Failed</th>
                    <th className="num">DLQ</th>
                  </tr>
                </thead>
                <tbody>
                  {data.queues.map((q) => (
                    <tr key={q.queue} data-testid="queue-row" data-queue={q.queue} className={`clickable${q.queue === selected ? ' active' : ''}`} onClick={() => select(q.queue)}>
                      <td className="mono">
                        {/* A link: Tab and Enter open a queue's jobs as a click on its row does. */}
                        <a href={`#/queues/${encodeURIComponent(q.queue)}`} data-testid="queue-link">
                          {q.queue}
                        </a>
                        {!q.configured && <span className="sub"> (not configured)</span>}
                      </td>
                      <td className="num" data-testid="queue-waiting">{q.waiting}</td>
                      <td className="num">{q.delayed}</td>
                      <td className="num">{q.running}</td>
                      <td className="num">{(rates.current.get(q.queue) ?? 0).toFixed(1)}</td>
                      <td className="num" data-testid="queue-completed">{q.completed}</td>
                      <td className="num">{q.failed}</td>
                      <td className="num" data-testid="queue-dlq">{q.dlq > 0 ? <span className="badge bad">{q.dlq}</span> : 0}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {data.absent_functions.length > 0 && (
                <p className="sub note" data-testid="queues-absent">
                  Waiting for a worker to provide: <span className="mono">{data.absent_functions.join(', ')}</span> (their jobs wait; no attempt is counted).
                </p>
              )}
              {current ? <QueueJobs key={current.queue} queue={current} /> : <p className="sub note">Select a queue to see its jobs and its dead-letter queue.</p>}
              {data.topics.length > 0 && (
                <>
                  <h2>Topics</h2>
                  <table className="grid" data-testid="topics-table">
                    <thead>
                      <tr>
                        <th>Topic</th>
                        <th>Subscriber</th>
                        <th>Queue</th>
                        <th>Subscribed</th>
                      </tr>
                    </thead>
                    <tbody>
                      {data.topics.flatMap((t) =>
                        t.subscribers.map((s) => (
                          <tr key={`${t.topic}/${s.function_id}/${s.queue}`}>
                            <td className="mono">{t.topic}</td>
                            <td className="mono">{s.function_id}</td>
                            <td className="mono">{s.queue}</td>
                            <td>{s.live ? 'yes' : 'expired'}</td>
                          </tr>
                        )),
                      )}
                    </tbody>
                  </table>
                </>
              )}
            </>
          )}
        </>
      )}
      <h2>Calls in flight</h2>
      {calls.data && calls.data.length === 0 ? (
        <p className="sub">No call is in flight right now.</p>
      ) : (
        <table className="grid" data-testid="calls-table">
          <tbody>
            {(calls.data ?? []).map((c) => (
              <tr key={c.function_id}>
                <td className="mono">{c.function_id}</td>
                <td className="num">{c.in_flight}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
