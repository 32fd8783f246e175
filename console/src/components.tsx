import type { ReactNode } from 'react';
import { CallError } from './api';

/** What a page shows when there is nothing to list: a sentence and what to do about it. */
export function Empty({ children, testId }: { children: ReactNode; testId?: string }) {
  return (
    <div className="empty" data-testid={testId ?? 'empty'}>
      {children}
    </div>
  );
}

/** Whether `error` is the engine or the console server being away, which the banner says. */
export function isUnreachable(error: Error | undefined): boolean {
  return error instanceof CallError && (error.code === 'console_unreachable' || error.code === 'engine_unreachable');
}

/** An error from a load or a call, with its code. Engine-down errors are left to the banner. */
export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  if (isUnreachable(error)) return null;
  return (
    <div className="error-note" role="alert">
      {error instanceof CallError ? <code>{error.code}</code> : null} {error.message}
    </div>
  );
}

/**
 * Nothing loaded yet. With the engine (or the console server) away, the page will not load until it
 * is back: say so, instead of "Loading…" for as long as it stays away.
 */
export function Loading({ error }: { error?: Error | undefined }) {
  if (isUnreachable(error)) {
    return (
      <div className="loading" data-testid="loading-unreachable">
        Nothing to show until the engine answers (see above).
      </div>
    );
  }
  return <div className="loading">Loading…</div>;
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-header">
      <h1>{title}</h1>
      <div className="page-actions">{children}</div>
    </div>
  );
}

export function Status({ value }: { value: string }) {
  return <span className={`status status-${value}`}>{value}</span>;
}

export function Level({ value }: { value: string }) {
  return <span className={`level level-${value}`}>{value.toUpperCase()}</span>;
}

/** A trigger binding's worker, under its function: below 1440 px it stands in for the Registered by column (styles.css, fold-narrow). */
export function RegisteredBy({ name }: { name: string | null }) {
  return <div className="sub fold-narrow">by {name ?? '-'}</div>;
}
