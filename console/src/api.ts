/** The console server's JSON API (src/console-server/server.ts). */

export interface ErrorBody {
  code: string;
  message: string;
  /** A failed call's: the stack trace the callee's SDK sent (a JavaScript stack, a Python traceback). */
  stacktrace?: string;
}

export class CallError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CallOutcome<T> {
  ok: boolean;
  result?: T;
  error?: ErrorBody;
  duration_ms?: number;
  /** The trace the call started (`engine::traces::get`). */
  trace_id?: string;
}

/** Connection as the page last saw it: the console server, and the engine behind it. */
export type Link = 'ok' | 'engine_down' | 'console_down';
type LinkListener = (l: Link, engineUrl: string) => void;
const listeners = new Set<LinkListener>();
let link: Link = 'ok';
let engineUrl = '';
/** Why the engine refused the console (e.g. a missing token), or the console server this page, from /api/status. */
let linkReason = '';
export function getLinkReason(): string {
  return linkReason;
}
/** Whether this page has seen the engine connected: a page opened while it is down never lost it. */
let engineSeen = false;
export function engineEverSeen(): boolean {
  return engineSeen;
}

function setLink(l: Link): void {
  if (l === link) return;
  link = l;
  for (const f of listeners) f(link, engineUrl);
}

/**
 * Whether the page should leave its periodic reads for now: the engine or the console server is
 * away. Only the shell's status check (/api/status, a 200 either way) keeps asking meanwhile, so the
 * browser's console stays quiet; the pages read again as soon as it says the engine is back.
 */
export function linkIsDown(): boolean {
  return link !== 'ok';
}

/** What a read left for while the link is down throws: the banner says why. */
export function linkDownError(): CallError {
  return link === 'console_down' ? new CallError('console_unreachable', 'The console server is not reachable') : new CallError('engine_unreachable', 'The engine is not reachable');
}

export function onLink(f: LinkListener): () => void {
  listeners.add(f);
  f(link, engineUrl);
  return () => listeners.delete(f);
}

/**
 * The console server's CSRF token (GET /api/session), sent with every other API request. A server
 * restarted since it was fetched answers csrf_token_invalid; the token is then fetched again once.
 */
let session: Promise<string> | null = null;
/** How the trace ids of the page's own periodic reads (poll()) begin, from /api/session. */
let backgroundTracePrefix = '';
export function getBackgroundTracePrefix(): string {
  return backgroundTracePrefix;
}
function csrfToken(): Promise<string> {
  session ??= fetch('/api/session')
    .then((r) => r.json() as Promise<{ csrf_token?: string; background_trace_prefix?: string; error?: ErrorBody }>)
    .then((j) => {
      if (!j.csrf_token) throw new CallError(j.error?.code ?? 'console_unreachable', j.error?.message ?? 'The console server gave no session token');
      backgroundTracePrefix = j.background_trace_prefix ?? '';
      return j.csrf_token;
    });
  // A failed fetch is not kept: the next request tries again.
  session.catch(() => (session = null));
  return session;
}

/** fetch() of the console API with the session's token; throws when the console server does not answer. */
async function api(path: string, init: RequestInit = {}): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const token = await csrfToken();
    const res = await fetch(path, { ...init, headers: { ...(init.headers as Record<string, string>), 'X-CSRF-Token': token } });
    if (res.status !== 403 || attempt > 0) return res;
    const body = (await res.clone().json().catch(() => ({}))) as { error?: ErrorBody };
    if (body.error?.code !== 'csrf_token_invalid') return res;
    session = null;
  }
}

async function post<T>(path: string, body: unknown): Promise<T> {
  let res: Response;
  try {
    res = await api(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  } catch {
    setLink('console_down');
    throw new CallError('console_unreachable', 'The console server is not reachable');
  }
  let json: T & { error?: ErrorBody };
  try {
    json = (await res.json()) as T & { error?: ErrorBody };
  } catch {
    setLink('console_down');
    throw new CallError('console_unreachable', `The console server answered ${res.status} without JSON`);
  }
  // The page asks for the engine being away as a 200 (`engine_down_as_200`): a 503 would put a
  // "Failed to load resource" line in the browser's console for every read while it is away.
  if (res.status === 503 || (json as { engine_down?: unknown }).engine_down === true) {
    setLink('engine_down');
    throw new CallError(json.error?.code ?? 'engine_unreachable', json.error?.message ?? 'The engine is not reachable');
  }
  setLink('ok');
  return json;
}

/** Call a function; the outcome (result or error) with the round-trip duration. Throws only when nothing answered. */
export async function invoke<T = unknown>(function_id: string, payload: unknown = {}, timeout_ms?: number, namespace?: string, background = false): Promise<CallOutcome<T>> {
  return post<CallOutcome<T>>('/api/call', {
    function_id,
    payload,
    ...(timeout_ms ? { timeout_ms } : {}),
    ...(namespace && namespace !== 'default' ? { namespace } : {}),
    ...(background ? { background: true } : {}),
    engine_down_as_200: true,
  });
}

/** Call a function and return its result; throws CallError on any error. */
export async function call<T = unknown>(function_id: string, payload: unknown = {}): Promise<T> {
  const o = await invoke<T>(function_id, payload);
  if (!o.ok) throw new CallError(o.error?.code ?? 'error', o.error?.message ?? 'Call failed');
  return o.result as T;
}

/**
 * Every entry of an engine listing (`engine::functions::list` and the like), page after page: a
 * listing too large for one answer comes in pages, each naming the next (docs/protocol.md).
 */
export async function callAll<T>(function_id: string, key: string, payload: Record<string, unknown> = {}): Promise<T[]> {
  const out: T[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const r = await call<Record<string, unknown>>(function_id, after === undefined ? payload : { ...payload, after });
    out.push(...((r[key] as T[] | undefined) ?? []));
    after = typeof r.next === 'string' ? r.next : undefined;
    if (after === undefined) break;
  }
  return out;
}

/** call() for a page's periodic read: its trace is one the Traces page leaves out unless asked. */
export async function poll<T = unknown>(function_id: string, payload: unknown = {}): Promise<T> {
  const o = await invoke<T>(function_id, payload, undefined, undefined, true);
  if (!o.ok) throw new CallError(o.error?.code ?? 'error', o.error?.message ?? 'Call failed');
  return o.result as T;
}

export interface HttpOutcome {
  ok: boolean;
  url?: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  duration_ms?: number;
  error?: ErrorBody;
}

export function httpRequest(method: string, path: string, body?: string): Promise<HttpOutcome> {
  return post<HttpOutcome>('/api/http', { method, path, ...(body ? { body } : {}) });
}

/** Polled by the app shell: keeps the banner right even on pages that are idle. */
export async function checkStatus(): Promise<void> {
  try {
    const res = await api('/api/status');
    const s = (await res.json()) as { connected: boolean; engine_url: string; error?: { message: string } };
    if (res.status === 403) {
      // The console server refuses this page (e.g. it was restarted without the --allowed-host
      // the page was opened under): say why rather than blame the engine.
      linkReason = s.error?.message ?? '';
      setLink('console_down');
      return;
    }
    engineUrl = s.engine_url;
    linkReason = s.error?.message ?? '';
    if (s.connected) engineSeen = true;
    const next: Link = s.connected ? 'ok' : 'engine_down';
    if (next !== link) setLink(next);
    else for (const f of listeners) f(link, engineUrl);
  } catch (e) {
    // A refusal of /api/session has its reason; a console server that is gone has none.
    linkReason = e instanceof CallError ? e.message : '';
    setLink('console_down');
  }
}
