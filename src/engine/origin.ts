import type { IncomingMessage } from 'node:http';

/**
 * Which web pages may open a WebSocket to the engine. Browsers always send `Origin` on a WebSocket
 * upgrade (and cannot forge it); SDKs, the CLI, the console server and iii's SDKs send none. So an
 * upgrade without `Origin` comes from a program the machine's user started, and one with an
 * `Origin` comes from a page, which may be any site the user happens to visit: it is let in only
 * when its origin is listed in `engine.allowed_origins`. This also defeats DNS rebinding, where
 * the page's host name points at 127.0.0.1 but its origin stays the attacker's.
 */

/**
 * `scheme://host[:port]` in the form browsers send (lowercase, no default port), or null when `s`
 * is not an http(s) origin: a path, query, credentials, `null` (the opaque origin of sandboxed
 * frames and file:// pages) and `*` are not origins.
 */
export function normalizeOrigin(s: string): string | null {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) return null;
  // `new URL('http://a.example/')` and `new URL('http://a.example')` both have pathname '/'; only
  // a string that names nothing but the origin is accepted.
  if (!/^https?:\/\/[^/?#]+\/?$/i.test(s)) return null;
  return u.origin;
}

/** The `Origin` a browser sent with this upgrade (RFC 6455; version 8 used Sec-WebSocket-Origin). */
export function presentedOrigin(req: IncomingMessage): string | undefined {
  const o = req.headers.origin ?? req.headers['sec-websocket-origin'];
  return Array.isArray(o) ? o[0] : o;
}

/**
 * Null when the upgrade may proceed; otherwise the refusal's message, naming the origin and the
 * config key that would allow it.
 */
export function originRefusal(req: IncomingMessage, allowed: ReadonlySet<string>): string | null {
  const origin = presentedOrigin(req);
  if (origin === undefined) return null;
  const normal = normalizeOrigin(origin);
  if (normal !== null && allowed.has(normal)) return null;
  const shown = JSON.stringify(origin.length > 200 ? `${origin.slice(0, 200)}…` : origin);
  return (
    `Origin ${shown} may not connect to this engine: a web page connects only from an origin listed in ` +
    `engine.allowed_origins (config.yaml; docs/security.md). Programs connect without an Origin header.`
  );
}
