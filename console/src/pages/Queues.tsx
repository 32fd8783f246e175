import { call } from '../api';
import { Empty, ErrorNote, Loading, PageHeader } from '../components';
import { usePoll } from '../hooks';

interface Queue {
  function_id: string;
  in_flight: number;
  waiting: number;
}

/**
 * Per function: calls in flight (sent to a worker, not answered yet) and waiting (queued before
 * dispatch; the engine dispatches at once, so 0 until durable queues exist).
 */
export function QueuesPage() {
  const { data, error } = usePoll(async () => {
    const [q, f] = await Promise.all([
      call<{ queues: Queue[] }>('engine::queues::list'),
      call<{ functions: Array<{ function_id: string }> }>('engine::functions::list', { include_builtins: false }),
    ]);
    const byId = new Map<string, Queue>(f.functions.map((x) => [x.function_id, { function_id: x.function_id, in_flight: 0, waiting: 0 }]));
    for (const x of q.queues) byId.set(x.function_id, x);
    return { rows: [...byId.values()].sort((a, b) => b.in_flight + b.waiting - (a.in_flight + a.waiting) || a.function_id.localeCompare(b.function_id)), durable: f.functions.some((x) => x.function_id === 'engine::queue::enqueue') };
  });
  const busy = data?.rows.reduce((n, r) => n + r.in_flight + r.waiting, 0) ?? 0;
  return (
    <section data-testid="page-queues">
      <PageHeader title="Queues">{data && <span className="count">{busy} call(s) in flight or waiting</span>}</PageHeader>
      <ErrorNote error={error} />
      {!data ? (
        <Loading />
      ) : data.rows.length === 0 ? (
        <Empty>No functions are registered, so nothing can be queued.</Empty>
      ) : (
        <table className="grid" data-testid="queues-table">
          <thead>
            <tr>
              <th>Function</th>
              <th className="num">In flight</th>
              <th className="num">Waiting</th>
              <th>Load</th>
            </tr>
          </thead>
          <tbody>
            {data.rows.map((r) => (
              <tr key={r.function_id} data-testid="queue-row">
                <td className="mono">{r.function_id}</td>
                <td className="num">{r.in_flight}</td>
                <td className="num">{r.waiting}</td>
                <td>
                  <div className="meter">
                    <div style={{ width: `${Math.min(100, (r.in_flight + r.waiting) * 4)}%` }} />
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="sub note">
        Durable queues: {data?.durable ? 'a worker provides engine::queue::enqueue.' : 'none (no worker provides engine::queue::enqueue).'}
      </p>
    </section>
  );
}
