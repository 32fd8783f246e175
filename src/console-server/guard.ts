/**
 * What keeps web pages other than the console's own from using the console server, which has the
 * engine's full rights. Three checks, each closing a way in:
 *
 * - `Host` must name this console: DNS rebinding points an attacker's name at 127.0.0.1, so its
 *   page becomes same-origin with the console in the browser's eyes, but its requests still carry
 *   the attacker's name. Accepted: IP addresses (no name, nothing to rebind), `localhost` and
 *   `*.localhost` (browsers resolve them to loopback themselves), the name the server is bound
 *   to, and names given with `--allowed-host`. The port is not checked: a browser reaches the
 *   console only on the port it listens on, or through a tunnel or proxy that chose its own.
 * - `Origin`, when a browser sends it, must be the console's own (its host equal to `Host`);
 *   `Sec-Fetch-Site` on API requests must say same-origin (or `none`: typed in by the user).
 * - Every API request carries the session's CSRF token in `X-CSRF-Token`. A page gets it from
 *   `GET /api/session`, which a page of another origin cannot read (no CORS), and which the
 *   checks above refuse to rebound names.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { SvcError } from 'svc-sdk';

export const CSRF_HEADER = 'X-CSRF-Token';

type ConsoleGuardCode = 'host_not_allowed' | 'origin_not_allowed' | 'csrf_token_missing' | 'csrf_token_invalid';

export class ConsoleGuardError extends SvcError {
  declare readonly code: ConsoleGuardCode;

  constructor(code: ConsoleGuardCode, message: string) {
    super(code, message);
    this.name = 'ConsoleGuardError';
  }
}

/** A `Host` header: a name or IPv4 address, or a bracketed IPv6 address, then an optional port. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[^\s/?#@[\]:\\%]+)(:\d{1,5})?$/i;

/** `name` of `name`, `name:port` or `[v6]:port`, lowercase, without a trailing dot; null if not a host. */
export function hostName(host: string): string | null {
  if (!HOST_HEADER.test(host)) return null;
  try {
    return new URL(`http://${host}`).hostname.replace(/\.$/, '');
  } catch {
    return null;
  }
}

/** `host[:port]` as browsers compare it (lowercase, IPv4 in dotted form, no default port). */
function normalHost(host: string): string | null {
  if (!HOST_HEADER.test(host)) return null;
  try {
    return new URL(`http://${host}`).host;
  } catch {
    return null;
  }
}

/** `host[:port]` of an http(s) origin, as `Host` would carry it; null if not one. */
function originHost(origin: string): string | null {
  try {
    const u = new URL(origin);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.host : null;
  } catch {
    return null;
  }
}

/** A value shown in an error message: quoted, and cut short (headers may be long). */
function shown(v: string): string {
  return JSON.stringify(v.length > 200 ? `${v.slice(0, 200)}…` : v);
}

export class ConsoleGuard {
  /** Minted per console server run: a restart invalidates it, and the page fetches the new one. */
  readonly csrfToken = randomBytes(32).toString('base64url');
  private readonly digest = sha256(this.csrfToken);
  private readonly names: Set<string>;

  /** `boundHost` is what the server listens on; `allowedHosts` the `--allowed-host` names. */
  constructor(boundHost: string, allowedHosts: readonly string[] = []) {
    this.names = new Set<string>();
    // IP addresses are always allowed; a bound name (`--host myhost`) is allowed like an --allowed-host.
    if (isIP(boundHost) === 0) this.names.add(hostName(boundHost) ?? boundHost.toLowerCase());
    for (const h of allowedHosts) {
      const name = hostName(h);
      if (name === null) throw new Error(`--allowed-host: ${shown(h)} is not a host name`);
      this.names.add(name);
    }
  }

  private hostAllowed(name: string): boolean {
    const bare = name.startsWith('[') ? name.slice(1, -1) : name;
    return isIP(bare) !== 0 || name === 'localhost' || name.endsWith('.localhost') || this.names.has(name);
  }

  /** Throws ConsoleGuardError unless `Host` names this console and `Origin`, if any, is its own. */
  checkPage(req: Request): void {
    const host = req.headers.host ?? '';
    const name = hostName(host);
    if (name === null || !this.hostAllowed(name)) {
      throw new ConsoleGuardError(
        'host_not_allowed',
        `Host ${shown(host)} is not a name this console serves (IP addresses, localhost${[...this.names].map((n) => `, ${n}`).join('')}): ` +
          `a page reached through another name (DNS rebinding) gets nothing. To open the console under that name, start it with --allowed-host ${name ?? '<name>'}`,
      );
    }
    const origin = req.headers.origin;
    if (origin !== undefined && originHost(origin) !== normalHost(host)) {
      throw new ConsoleGuardError('origin_not_allowed', `Origin ${shown(origin)} is not this console's (http://${host}): pages of other origins may not use it`);
    }
  }

  /** Throws ConsoleGuardError unless an API request is same-origin and carries the CSRF token. `req.path` is below /api. */
  checkApi(req: Request): void {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      throw new ConsoleGuardError('origin_not_allowed', `A ${shown(String(site))} request (Sec-Fetch-Site) may not use the console's API`);
    }
    if (req.method === 'GET' && req.path === '/session') return;
    const presented = req.headers[CSRF_HEADER.toLowerCase()];
    if (typeof presented !== 'string' || presented === '') {
      throw new ConsoleGuardError('csrf_token_missing', `The ${CSRF_HEADER} header is missing: every /api request carries the token of GET /api/session`);
    }
    if (!timingSafeEqual(sha256(presented), this.digest)) {
      throw new ConsoleGuardError('csrf_token_invalid', `The ${CSRF_HEADER} header does not hold this console's token (was the console restarted? GET /api/session for the current one)`);
    }
  }

  /**
   * Middleware for every request (before anything else): security headers, then checkPage.
   * Refusals are 403, as `{ok: false, error: {code, message}}` for the API and plain text otherwise.
   */
  pages(): (req: Request, res: Response, next: NextFunction) => void {
    return (req, res, next) => {
      // Never shown inside another site's frame (clickjacking the Delete buttons).
      res.setHeader('X-Frame-Options', 'DENY');
      res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
      // Only the answer's format depends on this test; what is checked does not.
      refuseOnError(res, /^\/api(\/|$)/i.test(req.path), () => this.checkPage(req), next);
    };
  }

  /**
   * Middleware to mount on `/api` itself (`app.use('/api', guard.api())`): express then decides
   * what is the API with the same matching it routes by (case-insensitive, trailing slashes), so
   * no spelling of a path reaches a handler without passing checkApi.
   */
  api(): (req: Request, res: Response, next: NextFunction) => void {
    return (req, res, next) => refuseOnError(res, true, () => this.checkApi(req), next);
  }
}

function refuseOnError(res: Response, json: boolean, check: () => void, next: NextFunction): void {
  try {
    check();
  } catch (e) {
    if (!(e instanceof ConsoleGuardError)) throw e;
    if (json) res.status(403).json({ ok: false, error: { code: e.code, message: e.message } });
    else res.status(403).type('text/plain').send(`svc console: ${e.code}: ${e.message}\n`);
    return;
  }
  next();
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}
