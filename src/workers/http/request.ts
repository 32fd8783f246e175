/**
 * An HTTP request → the payload of one call of the bound function.
 *
 * Pure functions over the parts express already parsed (raw body bytes, headers, query), so the
 * mapping is testable without a server and the request path stays a few property copies.
 */
import type { ChannelRef } from 'svc-sdk';
import { HttpError } from './response.js';

/** What the bound function receives. docs/http.md documents every field. */
export interface HttpRequestPayload {
  /** Parsed JSON for a JSON content type, the decoded text otherwise; null when the request has no body. */
  body: unknown;
  /** Lowercase names; a header sent several times arrives joined with ", " (as Node joins them). */
  headers: Record<string, string>;
  /** One string per key; a key repeated in the query string gives an array of its values, in order. */
  query_params: Record<string, string | string[]>;
  /** Decoded values of the route's `:name` (and `*name`) parameters. */
  path_params: Record<string, string>;
  /** Uppercase request method. */
  method: string;
  /** The request path as sent (percent-encoded, no query string). iii puts the pattern here; svc puts it in `route`. */
  path: string;
  /** The bound pattern, e.g. `/users/:id`. */
  route: string;
  /** Streaming routes only: the read side of the request body's channel (iii's shape). */
  request_body?: ChannelRef;
  /** Streaming routes only: the write side of the response channel (iii's shape). */
  response?: ChannelRef;
}

/** `application/json`, `application/*+json` (e.g. `application/vnd.api+json`, `application/problem+json`). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const semi = contentType.indexOf(';');
  const type = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });
const decoders = new Map<string, TextDecoder>([['utf-8', utf8], ['utf8', utf8]]);

function decoderFor(contentType: string | undefined): TextDecoder {
  const m = contentType ? /;\s*charset\s*=\s*"?([^";,\s]+)/i.exec(contentType) : null;
  if (!m) return utf8;
  const label = m[1]!.toLowerCase();
  let d = decoders.get(label);
  if (!d) {
    try {
      d = new TextDecoder(label);
    } catch {
      throw new HttpError(415, 'unsupported_charset', `Request body charset ${JSON.stringify(m[1])} is not supported; send UTF-8`);
    }
    decoders.set(label, d);
  }
  return d;
}

/**
 * How deep a JSON body may nest arrays and objects. The call's frame wraps the body two levels
 * deeper (frame → data → body), and the engine, like iii's serde_json, refuses frames nested over
 * 128 levels; real request bodies come nowhere near either.
 */
export const MAX_BODY_DEPTH = 100;

/**
 * Whether valid JSON `text` nests arrays and objects more than `limit` deep. A text of n
 * characters nests at most n/2 deep, so a short one is not scanned at all.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  if (text.length <= 2 * limit) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote (past escaped characters).
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/**
 * The `body` of the payload. `raw` is the (already decompressed, size-checked) request body, or
 * undefined when the request had none. Throws HttpError 400 `invalid_json` for malformed JSON or
 * a number too large for a double, and 400 `json_too_deep` for JSON nested deeper than MAX_BODY_DEPTH.
 */
export function parseBody(raw: Buffer | undefined, contentType: string | undefined): unknown {
  if (!raw || raw.length === 0) return null;
  if (isJsonContentType(contentType)) {
    // JSON is UTF-8 (RFC 8259); TextDecoder drops a leading BOM, which JSON.parse would reject.
    const text = utf8.decode(raw);
    if (text.trim().length === 0) return null;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw new HttpError(400, 'invalid_json', `Request body is not valid JSON (Content-Type ${contentType}): ${(e as Error).message}`);
    }
    if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
      throw new HttpError(400, 'json_too_deep', `Request body nests JSON arrays and objects more than ${MAX_BODY_DEPTH} levels deep`);
    }
    // JSON.parse reads 1e400 as Infinity, which the call's frame would carry as null: the function
    // would see a different value than was sent. A walk of the parsed value (depth bounded above)
    // costs less than a regex gate over the text would (bench/RESULTS.md).
    const at = nonFiniteAt(body, 'body');
    if (at !== null) {
      throw new HttpError(400, 'invalid_json', `Request body is not valid JSON for a call (Content-Type ${contentType}): the number at ${at} is too large for a double (it would arrive as null)`);
    }
    return body;
  }
  return decoderFor(contentType).decode(raw);
}

/** The path to a number in `v` that is not finite (innermost key first), or null. */
function nonFinite(v: unknown): Array<string | number> | null {
  if (typeof v === 'number') return Number.isFinite(v) ? null : [];
  if (typeof v !== 'object' || v === null) return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const at = nonFinite(v[i]);
      if (at !== null) return (at.push(i), at);
    }
    return null;
  }
  for (const k in v) {
    const at = nonFinite((v as Record<string, unknown>)[k]);
    if (at !== null) return (at.push(k), at);
  }
  return null;
}

/** Where in `body` a number is not finite, as `body.items[2].price`, or null. */
function nonFiniteAt(body: unknown, name: string): string | null {
  const at = nonFinite(body);
  if (at === null) return null;
  return at.reduceRight<string>((path, seg) => path + (typeof seg === 'number' ? `[${seg}]` : /^[A-Za-z_$][\w$]*$/.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`), name);
}

/** Node gives string values, except arrays for `set-cookie`; the payload holds strings only. */
export function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    const v = headers[name];
    if (v !== undefined) out[name] = typeof v === 'string' ? v : v.join(', ');
  }
  return out;
}

export function buildPayload(parts: {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  query: Record<string, string | string[]> | undefined;
  pathParams: Record<string, string>;
  method: string;
  path: string;
  route: string;
}): HttpRequestPayload {
  return {
    body: parts.body,
    headers: flattenHeaders(parts.headers),
    query_params: parts.query ?? {},
    path_params: parts.pathParams,
    method: parts.method,
    path: parts.path,
    route: parts.route,
  };
}
