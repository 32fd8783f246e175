/**
 * A function's result → the HTTP response, and every failure → a JSON error response.
 *
 * The result must be the envelope `{status_code, body?, headers?}`. Unlike iii, a plain object
 * without `status_code` is not silently answered as `200 {}`: it is a 500 `invalid_response` whose
 * message says what was expected and what arrived, because that mistake is otherwise invisible.
 * `statusCode` is read as `status_code`: iii's Python SDK sends its `HttpResponse` model by alias.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { SvcError } from 'svc-sdk';

/** A failure with its HTTP status and a stable `code`; sent as `{error: {code, message}}`. */
export class HttpError extends SvcError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    /** Extra response headers, e.g. `Allow` on a 405. */
    readonly headers?: Record<string, string>,
    /** The function's own message when `message` withholds it from the client; logged, never sent. */
    readonly withheldMessage?: string,
  ) {
    super(code, message);
    this.name = 'HttpError';
  }
}

export interface HttpResponseSpec {
  status: number;
  headers: Record<string, string | string[]>;
  /** undefined: no body. */
  body: string | undefined;
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';
/** Computed by the server from the body; a handler's value could only break the framing. */
const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade']);
const EXPECTED = 'expected {status_code: integer 200–599, body?: any, headers?: {name: string}}';

function invalid(message: string): HttpError {
  return new HttpError(500, 'invalid_response', message);
}

/** Map a function result to a response, or throw HttpError 500 `invalid_response`. */
export function envelopeToResponse(result: unknown, functionId?: string): HttpResponseSpec {
  const who = functionId ? `Function ${functionId} returned` : 'The function returned';
  if (typeof result !== 'object' || result === null || Array.isArray(result)) {
    throw invalid(`${who} ${describe(result)}; ${EXPECTED}`);
  }
  const env = result as { status_code?: unknown; statusCode?: unknown; body?: unknown; headers?: unknown };
  const status = envelopeStatus(env);
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    const keys = Object.keys(env).slice(0, 8).join(', ');
    const got = status === undefined ? `an object without status_code (keys: ${keys || 'none'})` : `status_code ${describe(status)}`;
    throw invalid(`${who} ${got}; ${EXPECTED}`);
  }
  const headers = normalizeHeaders(env.headers, who);
  let body: string | undefined;
  if (env.body === undefined || env.body === null) {
    body = undefined;
  } else if (typeof env.body === 'string') {
    body = env.body;
    if (!('content-type' in headers)) headers['content-type'] = TEXT_TYPE;
  } else {
    body = JSON.stringify(env.body);
    if (!('content-type' in headers)) headers['content-type'] = JSON_TYPE;
  }
  // These statuses never carry a body (RFC 9110); sending one would corrupt keep-alive framing.
  if (status === 204 || status === 304) body = undefined;
  return { status, headers, body };
}

/** An envelope's status: `status_code`, or `statusCode` as iii's Python SDK writes its HttpResponse. */
export function envelopeStatus(env: { status_code?: unknown; statusCode?: unknown }): unknown {
  return env.status_code !== undefined ? env.status_code : env.statusCode;
}

/**
 * Headers as `{name: value}` (value a string, a number, or an array of strings for repeated headers
 * such as Set-Cookie) or iii's `["Name: value", …]`. Names are lowercased; framing headers are dropped.
 */
export function normalizeHeaders(raw: unknown, who: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (raw === undefined || raw === null) return out;
  const put = (name: string, value: unknown): void => {
    const lower = name.toLowerCase();
    let v: string | string[];
    if (typeof value === 'string') v = value;
    else if (typeof value === 'number' && Number.isFinite(value)) v = String(value);
    else if (Array.isArray(value) && value.every((x) => typeof x === 'string')) v = value as string[];
    else throw invalid(`${who} header ${JSON.stringify(name)} with ${describe(value)}; header values must be strings`);
    try {
      validateHeaderName(lower);
      for (const one of Array.isArray(v) ? v : [v]) validateHeaderValue(lower, one);
    } catch (e) {
      throw invalid(`${who} an invalid header ${JSON.stringify(name)}: ${(e as Error).message}`);
    }
    if (!FRAMING_HEADERS.has(lower)) out[lower] = v;
  };
  if (Array.isArray(raw)) {
    for (const line of raw) {
      const colon = typeof line === 'string' ? line.indexOf(':') : -1;
      if (colon <= 0) throw invalid(`${who} headers as an array with ${describe(line)}; use {name: value} or ["Name: value"]`);
      put((line as string).slice(0, colon).trim(), (line as string).slice(colon + 1).trim());
    }
    return out;
  }
  if (typeof raw !== 'object') throw invalid(`${who} headers as ${describe(raw)}; ${EXPECTED}`);
  for (const name in raw as Record<string, unknown>) put(name, (raw as Record<string, unknown>)[name]);
  return out;
}

/**
 * The response for an HttpError: `{error: {code, message}}` as JSON, with `trace_id` when the request
 * called its function (the trace of that call: its logs and the engine's line of its failure).
 */
export function errorResponse(err: HttpError, traceId?: string): HttpResponseSpec {
  const error = traceId === undefined ? { code: err.code, message: err.message } : { code: err.code, message: err.message, trace_id: traceId };
  return {
    status: err.status,
    headers: { 'content-type': JSON_TYPE, ...err.headers },
    body: JSON.stringify({ error }),
  };
}

/**
 * Why a call of the bound function failed → status. The function cannot be reached (not
 * registered, its worker left mid-call, svc-http lost the engine): 503. Deadline: 504. The request
 * is too large to forward: 413. Its answer is too large to come back: 502. Anything else is the
 * function's own error: 500 with its code.
 *
 * That 500 carries the function's message only with `exposeErrors` (svc-http's `expose_errors`):
 * an exception's text can hold SQL, paths or secrets, and the client may be anyone on the network
 * (express in production and FastAPI answer a bare "Internal Server Error" too). The engine logs
 * the real message with the call's trace id, which the response carries (errorResponse).
 *
 * The same holds for the other statuses: a function may throw an error with any code, one of the
 * engine's too (`cancelled`, `function_not_found`: a nested call's failure passed on), so the
 * error's message after svc-http's own text (`(…)`, `: …`) is sent only with `exposeErrors`; else
 * it is kept for the request log (`error_message`). A `function_not_found` or `invocation_stopped`
 * that names another function is such a nested failure: a 500, not "is not registered" (503).
 */
export function invocationErrorToHttp(err: unknown, functionId: string, timeoutMs: number, exposeErrors = false): HttpError {
  if (err instanceof HttpError) return err;
  const errorCode = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  const message = err instanceof Error ? err.message : String(err);
  /** svc-http's own `text`, with `detail` (which holds the error's message) only with exposeErrors. */
  const said = (status: number, code: string, text: string, detail: string): HttpError =>
    exposeErrors ? new HttpError(status, code, text + detail) : new HttpError(status, code, text, undefined, message);
  // The engine's own function_not_found and invocation_stopped name the function called: with
  // another id they are a nested call's failure the function passed on (its own 500, below), not
  // this function missing or gone (as `svc trigger` tells them apart).
  const aboutOther =
    (errorCode.toLowerCase() === 'function_not_found' && !message.startsWith(`Function ${functionId} not found`)) ||
    (errorCode.toLowerCase() === 'invocation_stopped' && !message.startsWith(`Invocation of ${functionId} stopped`));
  switch (aboutOther ? 'passed_on' : errorCode.toLowerCase()) {
    case 'function_not_found':
      return said(503, errorCode, `Function ${functionId} is not registered; is its worker running?`, ` (${message})`);
    case 'binding_not_found':
      return said(503, errorCode, `The route to ${functionId} is being removed: the worker that bound it unregistered it or left`, ` (${message})`);
    case 'invocation_stopped':
      return said(503, errorCode, `The worker of ${functionId} went away during the call`, ` (${message})`);
    case 'connection_lost':
    case 'shutting_down':
    case 'cancelled':
      return said(503, errorCode, `Could not complete the call of ${functionId}`, `: ${message}`);
    case 'timeout':
      return new HttpError(504, 'timeout', `Function ${functionId} did not answer within ${timeoutMs} ms`);
    case 'payload_too_large':
    case 'frame_too_large':
      return said(413, 'payload_too_large', `The request is too large to forward to ${functionId}`, `: ${message}`);
    case 'result_too_large':
      // The function answered, but its answer cannot pass through the engine: a bad gateway.
      return said(502, 'response_too_large', `The response of ${functionId} is too large to pass through the engine`, `: ${message}`);
    case '':
      return exposeErrors ? new HttpError(500, 'internal_error', `Calling ${functionId} failed: ${message}`) : withheld(500, 'internal_error', functionId, `Calling ${functionId} failed: ${message}`);
    default:
      return exposeErrors ? new HttpError(500, errorCode, message) : withheld(500, errorCode, functionId, message);
  }
}

/** A function's failure whose own message is withheld from the client (kept for the request log). */
function withheld(status: number, code: string, functionId: string, message: string): HttpError {
  const generic = `Function ${functionId} failed; its error message is not sent to HTTP clients: find it in the logs (svc logs, the console) by this response's trace_id`;
  return new HttpError(status, code, generic, undefined, message);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing (undefined)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? v.slice(0, 60) + '…' : v)}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}
