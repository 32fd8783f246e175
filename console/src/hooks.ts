import { useCallback, useEffect, useRef, useState } from 'react';

/** Live data: runs `load` now and every `ms` while mounted (never two at once). */
export function usePoll<T>(load: () => Promise<T>, ms = 1000, deps: unknown[] = []): { data: T | undefined; error: Error | undefined; refresh: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const busy = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;
  const run = useCallback(async () => {
    if (busy.current) return;
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
