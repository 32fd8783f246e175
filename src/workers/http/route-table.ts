/**
 * The dynamic route table of svc-http: which function answers which method and path.
 *
 * Bindings come and go at runtime (a worker registers a trigger, leaves, reconnects), and express
 * cannot unmount routes, so svc-http serves everything through one catch-all and matches here.
 * Patterns use the express 5 syntax (path-to-regexp 8: `:name`, `*name`, `{optional}`); each is
 * compiled once when bound, never per request. Lookup per method is an exact-path Map for static
 * routes, then the compiled matchers of the routes whose first segment fits, most specific first.
 */
import { match as compileMatcher, parse, pathToRegexp, type MatchFunction, type ParamData } from 'path-to-regexp';
import { SvcError } from 'svc-sdk';
import { hasLoneSurrogate } from '../shared/describe.js';

/** Methods a route may be bound to. CONNECT is missing on purpose: it opens a proxy tunnel, never reaches a route. */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];
const METHOD_SET = new Set<string>(HTTP_METHODS);
const MAX_PATH_CHARS = 2048;

/** A refused binding; the SDK sends `code` and `message` back to the worker that registered it. */
export class TriggerConfigError extends SvcError {
  declare readonly code: 'invalid_trigger_config' | 'route_conflict';
  constructor(code: 'invalid_trigger_config' | 'route_conflict', message: string) {
    super(code, message);
    this.name = 'TriggerConfigError';
  }
}

export interface HttpTriggerConfig {
  /** Normalized: percent-encoded non-ASCII, no trailing slash (except `/`). */
  apiPath: string;
  method: HttpMethod;
  /** `stream: true`: the payload carries the `request_body` and `response` channel refs (docs/http.md). */
  stream: boolean;
}

/** Validate an `http` trigger's config `{api_path, http_method, stream?}`; throws TriggerConfigError. */
export function parseHttpTriggerConfig(config: unknown): HttpTriggerConfig {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new TriggerConfigError('invalid_trigger_config', `http trigger config must be an object {api_path, http_method}, got ${describe(config)}`);
  }
  const { api_path, http_method, stream } = config as { api_path?: unknown; http_method?: unknown; stream?: unknown };
  if (typeof api_path !== 'string' || api_path.trim().length === 0) {
    throw new TriggerConfigError('invalid_trigger_config', `http trigger config: api_path must be a non-empty string such as "/users/:id", got ${describe(api_path)}`);
  }
  if (api_path.length > MAX_PATH_CHARS) {
    throw new TriggerConfigError('invalid_trigger_config', `http trigger config: api_path is ${api_path.length} characters, the limit is ${MAX_PATH_CHARS}`);
  }
  if (/[?#]/.test(api_path)) {
    throw new TriggerConfigError('invalid_trigger_config', `http trigger config: api_path ${JSON.stringify(api_path)} must not contain "?" or "#"; query parameters arrive in query_params`);
  }
  if (typeof http_method !== 'string' || !METHOD_SET.has(http_method.toUpperCase())) {
    throw new TriggerConfigError(
      'invalid_trigger_config',
      `http trigger config: http_method must be one of ${HTTP_METHODS.join(', ')} (any case), got ${describe(http_method)}`,
    );
  }
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw new TriggerConfigError('invalid_trigger_config', `http trigger config: stream must be true or false, got ${describe(stream)}`);
  }
  return { apiPath: normalizeApiPath(api_path), method: http_method.toUpperCase() as HttpMethod, stream: stream === true };
}

/**
 * iii clients (its own console among them) bind paths such as `_console/status` without the
 * leading slash, so one is added. Requests are matched on their percent-encoded path, so a pattern
 * written with raw non-ASCII characters or spaces is encoded the way clients send it; existing
 * `%XX` escapes stay as written.
 */
/** A UTF-16 surrogate not in a pair (with the u flag, a pair is one code point and does not match). */

function normalizeApiPath(raw: string): string {
  const p = raw.startsWith('/') ? raw : '/' + raw;
  if (hasLoneSurrogate(p)) throw new TriggerConfigError('invalid_trigger_config', `http trigger config: api_path ${JSON.stringify(raw)} is not valid Unicode (it holds a lone surrogate)`);
  const encoded = p.replace(/[^\x21-\x7e]+/gu, (s) => encodeURIComponent(s));
  return encoded.length > 1 && encoded.endsWith('/') ? encoded.slice(0, -1) : encoded;
}

/** Strip one trailing slash so `/users/1/` finds `/users/:id`, as registration strips it from patterns. */
export function normalizeRequestPath(p: string): string {
  return p.length > 1 && p.charCodeAt(p.length - 1) === 47 ? p.slice(0, -1) : p;
}

export interface Route {
  triggerId: string;
  functionId: string;
  method: HttpMethod;
  /** The pattern as bound (normalized). */
  apiPath: string;
  /** The payload carries channel refs (trigger config `stream: true`). */
  stream: boolean;
  /** Whatever registered this route (the SDK's binding object); removal can be limited to it. */
  readonly source: unknown;
  /** Two patterns that match exactly the same paths share this key (`/u/:id` and `/u/:name`). */
  readonly key: string;
  /** The literal path for a pattern without parameters, else null. */
  readonly staticPath: string | null;
  readonly matcher: MatchFunction<ParamData> | null;
  /** Per segment: 0 static, 1 parameter, 2 wildcard or optional group; compared lexicographically. */
  readonly rank: number[];
  readonly seq: number;
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

interface MethodRoutes {
  byKey: Map<string, Route>;
  static: Map<string, Route>;
  /** Dynamic routes by their first segment when it is static text; '' holds those starting with a parameter. */
  buckets: Map<string, Route[]>;
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class RouteTable {
  private readonly byId = new Map<string, Route>();
  /**
   * Bindings of a route's function that a later binding of the same function to the same route
   * replaced, by `method key`, oldest first: replicas of one worker each bind the route, and when
   * the serving binding goes, the newest of these serves again instead of the route vanishing.
   */
  private readonly standby = new Map<string, Route[]>();
  private readonly standbyById = new Map<string, Route>();
  private readonly methods = new Map<HttpMethod, MethodRoutes>();
  private seq = 0;

  get size(): number {
    return this.byId.size;
  }

  /**
   * Bind a route. Throws TriggerConfigError(`invalid_trigger_config`) for a bad config and
   * (`route_conflict`) when another function already answers this method and pattern. A binding of
   * the same function to the same route replaces the earlier one, so replays after a reconnect are
   * idempotent even when the old binding's removal arrives late; the earlier one stands by and
   * serves again if the newer one is removed first (another replica of the worker left).
   */
  add(binding: { id: string; function_id: string; config: unknown }, source: unknown = binding): Route {
    const { apiPath, method, stream } = parseHttpTriggerConfig(binding.config);
    let key: string;
    let matcher: MatchFunction<ParamData>;
    let staticPath: string | null;
    try {
      const tokens = parse(apiPath).tokens;
      // All plain text (escapes such as `\:` resolved): served from the exact-path Map.
      staticPath = tokens.every((t) => t.type === 'text') ? tokens.map((t) => (t.type === 'text' ? t.value : '')).join('') : null;
      key = pathToRegexp(apiPath, { sensitive: true, trailing: false }).regexp.source;
      matcher = compileMatcher(apiPath, { sensitive: true, trailing: false, decode: decodeURIComponent });
    } catch (e) {
      throw new TriggerConfigError('invalid_trigger_config', `http trigger config: api_path ${JSON.stringify(apiPath)} is not a valid route pattern: ${(e as Error).message}`);
    }
    const existing = this.methods.get(method)?.byKey.get(key);
    if (existing && existing.triggerId !== binding.id && existing.functionId !== binding.function_id) {
      const same = existing.apiPath === apiPath ? '' : ` (same as ${existing.apiPath})`;
      throw new TriggerConfigError(
        'route_conflict',
        `${method} ${apiPath}${same} is already bound to function ${existing.functionId} (trigger ${existing.triggerId}); ` +
          `unregister that trigger first or choose another path or method`,
      );
    }
    const prior = this.byId.get(binding.id);
    if (prior && prior !== existing) this.removeRoute(prior);
    this.dropStandby(binding.id);
    if (existing) {
      this.removeRoute(existing);
      if (existing.triggerId !== binding.id) this.pushStandby(existing);
    }
    // Fetched after the removals: removing a method's last route drops its table.
    const table = this.tableFor(method);

    const route: Route = {
      triggerId: binding.id,
      functionId: binding.function_id,
      method,
      apiPath,
      stream,
      source,
      key,
      staticPath,
      matcher: staticPath === null ? matcher : null,
      rank: rankOf(apiPath),
      seq: this.seq++,
    };
    this.insertRoute(route, table);
    return route;
  }

  /**
   * Remove the route of trigger `triggerId`. With `source`, only when that route was added from
   * the same source, so a stale removal cannot take down the binding that replaced it.
   */
  remove(triggerId: string, source?: unknown): Route | undefined {
    const waiting = this.standbyById.get(triggerId);
    if (waiting && (source === undefined || waiting.source === source)) {
      this.dropStandby(triggerId);
      return waiting;
    }
    const route = this.byId.get(triggerId);
    if (!route || (source !== undefined && route.source !== source)) return undefined;
    this.removeRoute(route);
    const next = this.standby.get(standbyKey(route))?.pop();
    if (next) {
      this.standbyById.delete(next.triggerId);
      if (this.standby.get(standbyKey(route))?.length === 0) this.standby.delete(standbyKey(route));
      this.insertRoute(next, this.tableFor(next.method));
    }
    return route;
  }

  /** The binding serving `route`'s method and pattern now (after a removal: the one that stood by, if any). */
  servingAfter(route: Route): Route | undefined {
    return this.methods.get(route.method)?.byKey.get(route.key);
  }

  /** Whether trigger `triggerId` is a binding standing by (replaced by a newer one of its function). */
  isStandby(triggerId: string): boolean {
    return this.standbyById.has(triggerId);
  }

  /**
   * The route for a request. `path` is the percent-encoded request path; parameters come back
   * decoded. HEAD falls back to the GET route. Throws URIError for a malformed escape in a parameter.
   */
  match(method: string, path: string): RouteMatch | null {
    const p = normalizeRequestPath(path);
    const found = this.matchIn(method, p);
    if (found || method !== 'HEAD') return found;
    return this.matchIn('GET', p);
  }

  /** Methods bound to a path (for 405 answers); only called on the miss path. */
  allowedMethods(path: string): HttpMethod[] {
    const p = normalizeRequestPath(path);
    const out: HttpMethod[] = [];
    for (const method of this.methods.keys()) {
      try {
        if (this.matchIn(method, p)) out.push(method);
      } catch {
        out.push(method);
      }
    }
    if (out.includes('GET') && !out.includes('HEAD')) out.push('HEAD');
    return out;
  }

  list(): Array<{ trigger_id: string; function_id: string; http_method: HttpMethod; api_path: string }> {
    return [...this.byId.values()].map((r) => ({ trigger_id: r.triggerId, function_id: r.functionId, http_method: r.method, api_path: r.apiPath }));
  }

  clear(): void {
    this.byId.clear();
    this.methods.clear();
    this.standby.clear();
    this.standbyById.clear();
  }

  private matchIn(method: string, path: string): RouteMatch | null {
    const table = this.methods.get(method as HttpMethod);
    if (!table) return null;
    const hit = table.static.get(path);
    if (hit) return { route: hit, params: NO_PARAMS };
    if (table.buckets.size === 0) return null;
    // A route whose first segment is static text outranks one that starts with a parameter.
    const end = path.indexOf('/', 1);
    const first = end === -1 ? path.slice(1) : path.slice(1, end);
    return scan(table.buckets.get(first), path) ?? scan(table.buckets.get(''), path);
  }

  private tableFor(method: HttpMethod): MethodRoutes {
    let t = this.methods.get(method);
    if (!t) {
      t = { byKey: new Map(), static: new Map(), buckets: new Map() };
      this.methods.set(method, t);
    }
    return t;
  }

  private insertRoute(route: Route, table: MethodRoutes): void {
    this.byId.set(route.triggerId, route);
    table.byKey.set(route.key, route);
    if (route.staticPath !== null) {
      table.static.set(route.staticPath, route);
    } else {
      const bucket = bucketOf(route.apiPath);
      const list = table.buckets.get(bucket) ?? [];
      list.push(route);
      list.sort(compareRoutes);
      table.buckets.set(bucket, list);
    }
  }

  private pushStandby(route: Route): void {
    const k = standbyKey(route);
    const list = this.standby.get(k) ?? [];
    list.push(route);
    this.standby.set(k, list);
    this.standbyById.set(route.triggerId, route);
  }

  private dropStandby(triggerId: string): void {
    const route = this.standbyById.get(triggerId);
    if (!route) return;
    this.standbyById.delete(triggerId);
    const k = standbyKey(route);
    const list = this.standby.get(k)?.filter((r) => r !== route) ?? [];
    if (list.length > 0) this.standby.set(k, list);
    else this.standby.delete(k);
  }

  private removeRoute(route: Route): void {
    this.byId.delete(route.triggerId);
    const table = this.methods.get(route.method);
    if (!table) return;
    if (table.byKey.get(route.key) === route) table.byKey.delete(route.key);
    if (route.staticPath !== null) {
      if (table.static.get(route.staticPath) === route) table.static.delete(route.staticPath);
    } else {
      const bucket = bucketOf(route.apiPath);
      const list = table.buckets.get(bucket)?.filter((r) => r !== route) ?? [];
      if (list.length > 0) table.buckets.set(bucket, list);
      else table.buckets.delete(bucket);
    }
    if (table.byKey.size === 0) this.methods.delete(route.method);
  }
}

function standbyKey(route: Route): string {
  return `${route.method} ${route.key}`;
}

function scan(routes: Route[] | undefined, path: string): RouteMatch | null {
  if (!routes) return null;
  for (const route of routes) {
    const m = route.matcher!(path);
    if (m) return { route, params: flattenParams(m.params) };
  }
  return null;
}

/** Wildcards match several segments; path_params are strings, so their segments are joined with "/". */
function flattenParams(params: ParamData): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in params) {
    const v = params[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join('/') : v;
  }
  return out;
}

function segmentsOf(apiPath: string): string[] {
  return apiPath.split('/').slice(1);
}

function bucketOf(apiPath: string): string {
  const first = segmentsOf(apiPath)[0] ?? '';
  return /[:*{}\\]/.test(first) ? '' : first;
}

function rankOf(apiPath: string): number[] {
  return segmentsOf(apiPath).map((s) => (/[*{]/.test(s) ? 2 : s.includes(':') ? 1 : 0));
}

function compareRoutes(a: Route, b: Route): number {
  const n = Math.min(a.rank.length, b.rank.length);
  for (let i = 0; i < n; i++) {
    if (a.rank[i] !== b.rank[i]) return a.rank[i]! - b.rank[i]!;
  }
  return a.seq - b.seq;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? v.slice(0, 60) + '…' : v);
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}
