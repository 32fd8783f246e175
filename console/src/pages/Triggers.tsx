import { useState } from 'react';
import { callAll, CallError, httpRequest, poll, type HttpOutcome } from '../api';
import { Empty, ErrorNote, Loading, PageHeader, RegisteredBy, Status } from '../components';
import { duration, json } from '../format';
import { usePoll } from '../hooks';
import { CronRow, type CronSchedule } from './CronRow';

interface Binding {
  id: string;
  trigger_type: string;
  function_id: string;
  config: Record<string, unknown> | null;
  worker_name: string | null;
  status: string;
}
interface TriggerType {
  id: string;
  description: string | null;
  provider: { worker_id: string; worker_name: string } | string | null;
  /** Who holds the bindings; with binding_mode "all" every live replica (an older engine omits it). */
  providers?: Array<{ worker_id: string; worker_name: string }>;
  binding_mode?: 'one' | 'all';
}

function providerName(t: TriggerType | undefined): string {
  const p = t?.provider ?? null;
  if (!p) return 'no provider (bindings are parked)';
  if (t?.binding_mode === 'all' && t.providers && t.providers.length > 1) {
    return `${t.providers.map((x) => x.worker_name).join(', ')} (each holds every binding)`;
  }
  return typeof p === 'string' ? p : p.worker_name;
}

export function TriggersPage() {
  const { data, error, refresh } = usePoll(async () => {
    const [types, bindings] = await Promise.all([
      callAll<TriggerType>('engine::triggers::list', 'trigger_types'),
      callAll<Binding>('engine::registered-triggers::list', 'triggers'),
    ]);
    // Next and last fires of cron bindings come from svc-cron, when it runs.
    let cron: { schedules: CronSchedule[] | null; error?: Error } = { schedules: null };
    if (types.some((t) => t.id === 'cron' && t.provider)) {
      cron = await poll<{ schedules: CronSchedule[] }>('cron::list').then(
        (r) => ({ schedules: r.schedules }),
        (e: Error) => ({ schedules: null, error: e }),
      );
    }
    return { types, bindings, cron };
  });
  const typeIds = data ? [...new Set([...data.types.map((t) => t.id), ...data.bindings.map((b) => b.trigger_type)])].sort() : [];
  return (
    <section data-testid="page-triggers">
      <PageHeader title="Triggers" />
      <ErrorNote error={error} />
      {!data ? (
        <Loading error={error} />
      ) : typeIds.length === 0 ? (
        <Empty>
          No trigger types and no bindings. svc-http provides the http type (<code>svc worker add svc-http</code>), svc-cron the cron type (<code>svc worker add svc-cron</code>).
        </Empty>
      ) : (
        typeIds.map((id) => {
          const type = data.types.find((t) => t.id === id);
          const bindings = data.bindings.filter((b) => b.trigger_type === id);
          return (
            <div className="card" key={id} data-testid="trigger-type" data-type={id}>
              <h2>
                {id} <span className="sub">provided by {providerName(type)}</span>
              </h2>
              {type?.description && <p className="sub">{type.description}</p>}
              {id === 'cron' && data.cron.error && <ErrorNote error={data.cron.error} />}
              {bindings.length === 0 ? (
                <p className="sub">No bindings of this type.</p>
              ) : id === 'cron' ? (
                <table className="grid" data-testid="cron-table">
                  <thead>
                    <tr>
                      <th>Function</th>
                      <th>Schedule</th>
                      <th className="fold-wide">Registered by</th>
                      <th>Status</th>
                      <th>Next fire</th>
                      <th>Last fire</th>
                      <th />
                    </tr>
                  </thead>
                  <tbody>
                    {bindings.map((b) => (
                      <CronRow key={b.id} b={b} schedule={data.cron.schedules?.find((s) => s.trigger_ids.includes(b.id))} refresh={refresh} />
                    ))}
                  </tbody>
                </table>
              ) : bindings.length === 0 ? (
                <p className="sub">No bindings of this type.</p>
              ) : (
                <table className="grid">
                  <thead>
                    <tr>
                      <th>Function</th>
                      <th>Config</th>
                      <th className="fold-wide">Registered by</th>
                      <th>Status</th>
                      {id === 'http' && <th />}
                    </tr>
                  </thead>
                  <tbody>
                    {bindings.map((b) => (
                      <BindingRow key={b.id} b={b} />
                    ))}
                  </tbody>
                </table>
              )}
            </div>
          );
        })
      )}
    </section>
  );
}

/**
 * The path svc-http serves a binding on: as in iii, an `api_path` without a leading `/` (`orders`)
 * gets one (docs/http.md), so it is shown and requested as `/orders`.
 */
const routePath = (p: unknown): string => {
  const s = typeof p === 'string' ? p.trim() : '';
  return s.startsWith('/') ? s : `/${s}`;
};

function BindingRow({ b }: { b: Binding }) {
  const [open, setOpen] = useState(false);
  const cfg = b.config ?? {};
  const isHttp = b.trigger_type === 'http';
  return (
    <>
      <tr data-testid="binding-row">
        <td className="binding-function">
          <span className="mono">{b.function_id}</span>
          <RegisteredBy name={b.worker_name} />
        </td>
        <td className="mono small binding-config">{isHttp ? `${String(cfg.http_method ?? 'GET')} ${routePath(cfg.api_path)}` : json(cfg, 0)}</td>
        <td className="fold-wide">{b.worker_name ?? '-'}</td>
        <td>
          <Status value={b.status} />
        </td>
        {isHttp && (
          <td className="row-actions">
            <button onClick={() => setOpen(!open)} data-testid="http-test-toggle">
              {open ? 'Close' : 'Test request'}
            </button>
          </td>
        )}
      </tr>
      {open && (
        <tr>
          <td colSpan={5}>
            <HttpTester method={String(cfg.http_method ?? 'GET').toUpperCase()} path={routePath(cfg.api_path)} />
          </td>
        </tr>
      )}
    </>
  );
}

function HttpTester({ method: m0, path: p0 }: { method: string; path: string }) {
  const [method, setMethod] = useState(m0);
  const [path, setPath] = useState(p0);
  const [body, setBody] = useState(m0 === 'GET' || m0 === 'HEAD' ? '' : '{"a": 2, "b": 3}');
  const [out, setOut] = useState<HttpOutcome>();
  const [busy, setBusy] = useState(false);
  const send = async (): Promise<void> => {
    setBusy(true);
    try {
      setOut(await httpRequest(method, routePath(path), body));
    } catch (e) {
      setOut({ ok: false, error: { code: e instanceof CallError ? e.code : 'console_unreachable', message: (e as Error).message } });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="http-tester" data-testid="http-tester">
      <div className="row">
        <select value={method} onChange={(e) => setMethod(e.target.value)} aria-label="method">
          {['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((x) => (
            <option key={x}>{x}</option>
          ))}
        </select>
        <input className="mono grow" value={path} onChange={(e) => setPath(e.target.value)} aria-label="path" />
        <button className="primary" onClick={() => void send()} disabled={busy} data-testid="http-send">
          {busy ? 'Sending…' : 'Send'}
        </button>
      </div>
      {method !== 'GET' && method !== 'HEAD' && (
        <textarea className="code" rows={3} value={body} onChange={(e) => setBody(e.target.value)} spellCheck={false} aria-label="request body" />
      )}
      {out && (
        <div className={`outcome ${out.ok && (out.status ?? 500) < 400 ? 'ok' : 'failed'}`} data-testid="http-outcome">
          {out.ok ? (
            <>
              <div className="outcome-head">
                {out.status} <span className="sub">{out.url} in {duration(out.duration_ms)}</span>
              </div>
              <pre>{prettyBody(out.body ?? '')}</pre>
            </>
          ) : (
            <pre>{json(out.error)}</pre>
          )}
        </div>
      )}
    </div>
  );
}

function prettyBody(b: string): string {
  try {
    return JSON.stringify(JSON.parse(b), null, 2);
  } catch {
    return b;
  }
}
