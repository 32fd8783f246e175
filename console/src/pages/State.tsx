import { useState } from 'react';
import { call, CallError, poll } from '../api';
import { Empty, ErrorNote, Loading, PageHeader } from '../components';
import { json, parseStateValue, stateValueDraft, stateValueHint } from '../format';
import { usePoll } from '../hooks';

interface Entry {
  key: string;
  value: unknown;
}

/** One page of `state::list` (docs/state.md): a scope of any size is shown a page at a time. */
interface Page {
  entries: Entry[];
  next_cursor: string | null;
}

const PAGE_SIZE = 100;

function missingState(e: Error | undefined): boolean {
  return e instanceof CallError && e.code === 'function_not_found';
}

export function StatePage({ scope, selectScope }: { scope: string | undefined; selectScope: (s: string) => void }) {
  const groups = usePoll(() => poll<{ groups: string[] }>('state::list_groups').then((r) => r.groups));
  const [newScope, setNewScope] = useState('');
  if (missingState(groups.error)) {
    return (
      <section data-testid="page-state">
        <PageHeader title="State" />
        <Empty>svc-state is not running, so there is no state to show. Start it with <code>svc worker add svc-state</code>.</Empty>
      </section>
    );
  }
  const scopes = groups.data ?? [];
  return (
    <section data-testid="page-state">
      <PageHeader title="State" />
      <ErrorNote error={groups.error} />
      {!groups.data ? (
        <Loading error={groups.error} />
      ) : (
        <div className="split">
          <div>
            {scopes.length === 0 && <p className="sub pad">No scopes hold any key yet.</p>}
            <ul className="list" data-testid="scope-list">
              {[...new Set([...scopes, ...(scope && !scopes.includes(scope) ? [scope] : [])])].map((s) => (
                <li key={s}>
                  <button className={s === scope ? 'active' : ''} onClick={() => selectScope(s)} data-testid="scope-item" data-scope={s}>
                    <span className="mono">{s}</span>
                  </button>
                </li>
              ))}
            </ul>
            <form
              className="row pad"
              onSubmit={(e) => {
                e.preventDefault();
                if (newScope.trim()) selectScope(newScope.trim());
                setNewScope('');
              }}
            >
              <input placeholder="open scope…" value={newScope} onChange={(e) => setNewScope(e.target.value)} aria-label="scope" />
            </form>
          </div>
          <div className="detail">{scope ? <ScopeEntries key={scope} scope={scope} /> : <Empty>Select a scope to see its keys.</Empty>}</div>
        </div>
      )}
    </section>
  );
}

function ScopeEntries({ scope }: { scope: string }) {
  // The cursor of every page shown so far, the current one last: "previous" goes back one.
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const { data: page, error, refresh } = usePoll(() => poll<Page>('state::list', { scope, limit: PAGE_SIZE, ...(cursor !== null ? { cursor } : {}) }), 1000, [scope, cursor]);
  const data = page?.entries;
  const first = (cursors.length - 1) * PAGE_SIZE + 1;
  const [editing, setEditing] = useState<string | null>(null);
  const [draft, setDraft] = useState('');
  const [newKey, setNewKey] = useState('');
  const [newValue, setNewValue] = useState('');
  const [problem, setProblem] = useState<string>();

  const save = async (key: string, text: string): Promise<void> => {
    const p = parseStateValue(text);
    if (!p.ok) {
      setProblem(p.message);
      return;
    }
    try {
      await call('state::set', { scope, key, value: p.value });
      setProblem(undefined);
      setEditing(null);
      setNewKey('');
      setNewValue('');
      refresh();
    } catch (e) {
      setProblem((e as Error).message);
    }
  };
  const cancel = (): void => {
    setEditing(null);
    setProblem(undefined);
  };
  const remove = async (key: string): Promise<void> => {
    if (!window.confirm(`Delete ${scope}/${key}?`)) return;
    try {
      await call('state::delete', { scope, key });
      refresh();
    } catch (e) {
      setProblem((e as Error).message);
    }
  };

  return (
    <div data-testid="scope-entries">
      <h2 className="mono">{scope}</h2>
      <ErrorNote error={error} />
      {problem && (
        <div className="error-note" role="alert">
          {problem}
        </div>
      )}
      {(cursors.length > 1 || page?.next_cursor) && (
        <div className="row pager" data-testid="state-pager">
          <button onClick={() => setCursors((c) => c.slice(0, -1))} disabled={cursors.length === 1} data-testid="state-prev">
            ← Previous
          </button>
          <span className="sub" data-testid="state-page">
            {data && data.length > 0 ? `keys ${first}–${first + data.length - 1}` : 'no keys here'}
          </span>
          <button onClick={() => page?.next_cursor && setCursors((c) => [...c, page.next_cursor])} disabled={!page?.next_cursor} data-testid="state-next">
            Next →
          </button>
        </div>
      )}
      {!data ? (
        <Loading error={error} />
      ) : data.length === 0 ? (
        <Empty>{cursors.length > 1 ? 'No more keys.' : 'This scope holds no keys.'}</Empty>
      ) : (
        <table className="grid" data-testid="state-table">
          <thead>
            <tr>
              <th className="state-key">Key</th>
              <th>Value</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.map((e) => (
              <tr key={e.key} data-testid="state-row" data-key={e.key}>
                <td className="mono state-key">{e.key}</td>
                <td>
                  {editing === e.key ? (
                    <>
                      <textarea
                        className="code"
                        rows={4}
                        value={draft}
                        onChange={(x) => setDraft(x.target.value)}
                        onKeyDown={(x) => {
                          // Escape leaves the value as it is; Ctrl+Enter (⌘+Enter) saves.
                          if (x.key === 'Escape') {
                            x.preventDefault();
                            cancel();
                          } else if (x.key === 'Enter' && (x.ctrlKey || x.metaKey)) {
                            x.preventDefault();
                            void save(e.key, draft);
                          }
                        }}
                        autoFocus
                        spellCheck={false}
                        aria-label="value"
                      />
                      <div className="sub" data-testid="state-value-hint">
                        {stateValueHint(draft)} · Esc cancels, Ctrl+Enter saves
                      </div>
                    </>
                  ) : (
                    <pre className="value" data-testid="state-value">{json(e.value)}</pre>
                  )}
                </td>
                <td className="nowrap">
                  {editing === e.key ? (
                    <>
                      <button className="primary" onClick={() => void save(e.key, draft)}>
                        Save
                      </button>{' '}
                      <button onClick={cancel}>Cancel</button>
                    </>
                  ) : (
                    <>
                      <button
                        onClick={() => {
                          setEditing(e.key);
                          setDraft(stateValueDraft(e.value));
                          setProblem(undefined);
                        }}
                      >
                        Edit
                      </button>{' '}
                      <button className="danger" onClick={() => void remove(e.key)}>
                        Delete
                      </button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        className="row add-key"
        onSubmit={(e) => {
          e.preventDefault();
          if (newKey.trim()) void save(newKey.trim(), newValue);
        }}
      >
        <input placeholder="new key" value={newKey} onChange={(e) => setNewKey(e.target.value)} aria-label="new key" />
        <input className="mono grow" placeholder='value: 42, {"a": 1} or text' value={newValue} onChange={(e) => setNewValue(e.target.value)} aria-label="new value" />
        <button type="submit">Set</button>
      </form>
      {newValue.trim() !== '' && (
        <div className="sub" data-testid="new-value-hint">
          {stateValueHint(newValue)}
        </div>
      )}
    </div>
  );
}
