import { useCallback, useEffect, useRef, useState } from 'react';
import { linkDownError, linkIsDown, onLink, type Link } from './api';

/**
 * Calls `f` when the link comes back (the engine or the console server answering again after it was
 * away), so that a page reads at once instead of on its next tick.
 */
export function useLinkBack(f: () => void): void {
  const fRef = useRef(f);
  fRef.current = f;
  useEffect(() => {
    let previous: Link | undefined;
    return onLink((l) => {
      if (l === 'ok' && previous !== undefined && previous !== 'ok') fRef.current();
      previous = l;
    });
  }, []);
}

/**
 * Live data: runs `load` now and every `ms` while mounted (never two at once). While the engine or
 * the console server is away it reads nothing (the error says which is away, for the page's
 * "nothing to show" note) and reads again as soon as the link is back.
 */
export function usePoll<T>(load: () => Promise<T>, ms = 1000, deps: unknown[] = []): { data: T | undefined; error: Error | undefined; refresh: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const busy = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;
  const run = useCallback(async () => {
    if (busy.current) return;
    if (linkIsDown()) {
      setError(linkDownError());
      return;
    }
    busy.current = true;
    try {
      const d = await loadRef.current();
      setData(d);
      setError(undefined);
    } catch (e) {
      setError(e as Error);
    } finally {
      busy.current = false;
    }
  }, []);
  useEffect(() => {
    setData(undefined);
    setError(undefined);
    void run();
    const t = setInterval(() => void run(), ms);
    return () => clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [ms, run, ...deps]);
  useLinkBack(() => void run());
  return { data, error, refresh: () => void run() };
}

/** `#/page/arg` routing: survives reloads, needs nothing from the server. */
export function useHashRoute(): [string[], (path: string) => void] {
  const parse = (): string[] => window.location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [parts, setParts] = useState(parse);
  useEffect(() => {
    const f = (): void => setParts(parse());
    window.addEventListener('hashchange', f);
    return () => window.removeEventListener('hashchange', f);
  }, []);
  return [parts, (path: string) => (window.location.hash = '#/' + path)];
}
