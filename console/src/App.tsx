import { useEffect, useState } from 'react';
import { checkStatus, engineEverSeen, getLinkReason, onLink, type Link } from './api';
import { useHashRoute } from './hooks';
import { FunctionsPage } from './pages/Functions';
import { LogsPage } from './pages/Logs';
import { QueuesPage } from './pages/Queues';
import { StatePage } from './pages/State';
import { TracesPage } from './pages/Traces';
import { TriggersPage } from './pages/Triggers';
import { WorkersPage } from './pages/Workers';

const PAGES = [
  { id: 'workers', title: 'Workers' },
  { id: 'functions', title: 'Functions' },
  { id: 'triggers', title: 'Triggers' },
  { id: 'queues', title: 'Queues' },
  { id: 'logs', title: 'Logs' },
  { id: 'traces', title: 'Traces' },
  { id: 'state', title: 'State' },
] as const;

function useLink(): [Link, string] {
  const [state, setState] = useState<[Link, string]>(['ok', '']);
  useEffect(() => {
    const off = onLink((l, url) => setState([l, url]));
    void checkStatus();
    const t = setInterval(() => void checkStatus(), 1000);
    return () => {
      off();
      clearInterval(t);
    };
  }, []);
  return state;
}

export function App() {
  const [route, go] = useHashRoute();
  const [link, engineUrl] = useLink();
  const page = PAGES.find((p) => p.id === route[0]) ?? PAGES[0];
  const arg = route[1];

  return (
    <div className="shell">
      <nav className="sidebar">
        <div className="brand">
          svc <span>console</span>
        </div>
        {PAGES.map((p) => (
          <a key={p.id} href={`#/${p.id}`} className={p.id === page.id ? 'active' : ''} data-testid={`nav-${p.id}`}>
            {p.title}
          </a>
        ))}
        <div className="engine-link" data-testid="engine-link" title={engineUrl}>
          <span className={`dot dot-${link}`} />
          {link === 'ok' ? 'engine connected' : link === 'engine_down' ? 'engine unreachable' : 'console offline'}
          <div className="engine-url">{engineUrl}</div>
        </div>
      </nav>
      <main className={link === 'ok' ? '' : 'stale'}>
        {link === 'engine_down' && (
          <div className="banner" role="alert" data-testid="banner">
            {getLinkReason() ? (
              <>
                {getLinkReason()}. Start <code>svc console</code> with <code>SVC_TOKEN</code> set to a token of this engine (docs/security.md).
              </>
            ) : (
              engineEverSeen() ? (
                <>Connection to the engine lost{engineUrl ? ` (${engineUrl})` : ''}. Retrying every second; what you see may be out of date.</>
              ) : (
                <>
                  Cannot reach the engine{engineUrl ? ` at ${engineUrl}` : ''}: is <code>svc --config config.yaml</code> running? (<code>svc console --address</code> picks another.) Retrying every second.
                </>
              )
            )}
          </div>
        )}
        {link === 'console_down' && (
          <div className="banner" role="alert" data-testid="banner">
            {getLinkReason() ? (
              <>The console server refused this page: {getLinkReason()}</>
            ) : (
              <>
                The console server is not reachable (was <code>svc console</code> stopped?). Retrying every second.
              </>
            )}
          </div>
        )}
        {page.id === 'workers' && <WorkersPage />}
        {page.id === 'functions' && <FunctionsPage selected={arg} select={(id) => go(`functions/${encodeURIComponent(id)}`)} />}
        {page.id === 'triggers' && <TriggersPage />}
        {page.id === 'queues' && <QueuesPage selected={arg} select={(q) => go(`queues/${encodeURIComponent(q)}`)} />}
        {page.id === 'logs' && <LogsPage openTrace={(id) => go(`traces/${id}`)} />}
        {page.id === 'traces' && <TracesPage traceId={arg} open={(id) => go(id ? `traces/${id}` : 'traces')} />}
        {page.id === 'state' && <StatePage scope={arg} selectScope={(s) => go(`state/${encodeURIComponent(s)}`)} />}
      </main>
    </div>
  );
}
