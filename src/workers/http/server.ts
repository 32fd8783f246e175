/**
 * The express app of svc-http: one catch-all that matches the dynamic route table, reads the body,
 * calls the bound function and writes its envelope back. Express does the HTTP work (body reading
 * with limits and decompression, query parsing); svc-http adds only the table lookup and mapping.
 *
 * Order per request: CORS → route lookup (404/405 before the body is read) → body → call → response.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import cors, { type CorsOptions } from 'cors';
import type { CorsConfig } from './config.js';
import { buildPayload, parseBody, type HttpRequestPayload } from './request.js';
import { envelopeToResponse, errorResponse, HttpError, invocationErrorToHttp, type HttpResponseSpec } from './response.js';
import type { RouteMatch, RouteTable } from './route-table.js';
import { DEFAULT_STREAM_BODY_LIMIT } from './config.js';
import { buffersBody, checkDeclaredLength, checkEncoding } from './stream-request.js';
import { serveStreamed, type StreamingHooks } from './stream-response.js';
import { traceIdOfTraceparent, traceparentMaker, validTraceparent } from 'svc-sdk/internal';

export interface RequestLogEntry {
  method: string;
  path: string;
  /** 499 when the client closed the connection before the response was sent. */
  status: number;
  duration_ms: number;
  /** The bound function, when a route matched. */
  function_id?: string;
  /** The error code of an error response. */
  error_code?: string;
  /** The function's error message that the response withheld from the client (`expose_errors` off). */
  error_message?: string;
}

export interface HttpAppOptions {
  table: RouteTable;
  /**
   * Call the bound function for trigger binding `bindingId`, as a new trace (`traceparent`); rejects
   * with an error carrying `code` (the SDK's InvocationError).
   */
  invoke(functionId: string, payload: HttpRequestPayload, bindingId: string, traceparent: string, signal?: AbortSignal): Promise<unknown>;
  bodyLimitBytes: number;
  /** Longest time to receive a request whose body svc-http reads (`request_timeout_ms`); later: 408. */
  requestTimeoutMs?: number;
  /** Most bytes of a streaming route's request body (`stream_body_limit_bytes`). */
  streamBodyLimitBytes?: number;
  /** Only used in the 504 message; the deadline itself is enforced by `invoke` (and the engine). */
  timeoutMs: () => number;
  cors: CorsConfig | null;
  /** False while svc-http is cut off from the engine: its routes are unknown then, so a miss is 503, not 404. */
  engineConnected?: () => boolean;
  /** One entry per request; `traceparent` is its call's, which the line is logged under. */
  onRequestLog?: (entry: RequestLogEntry, traceparent: string | undefined) => void;
  /** Channels for streaming routes; without them no route streams. */
  streaming?: StreamingHooks;
  /** `all`: every route streams, not only those bound with `stream: true`. */
  streamAll?: boolean;
  /** Send a failed function's own error message to the client (`expose_errors`); else a generic one. */
  exposeErrors?: boolean;
}

interface Locals {
  match?: RouteMatch;
  errorCode?: string;
  /** Lifts the request's deadline (requestDeadline): a streaming call now bounds its body. */
  unbounded?: () => void;
  /** Set when the function is called: the call's trace, named by an error response. */
  traceparent?: string;
  withheldMessage?: string;
}

/**
 * The request's own `traceparent` header, when it is a valid W3C one: its call joins the client's
 * trace as a child of the client's span, as OpenTelemetry's HTTP servers do, so that a traced
 * service in front of svc-http sees its calls in its own traces. Anything else (absent, repeated,
 * malformed, another version): undefined, and the call starts a trace of svc-http's own.
 */
export function requestTraceparent(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const tp = header.trim();
  return validTraceparent(tp) ? tp : undefined;
}

export function createHttpApp(opts: HttpAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // Each request's call starts a trace of svc-http's own, so that an error response can name it
  // (trace_id): the engine logs a function's failure, and the function its lines, under it.
  const newTraceparent = traceparentMaker();
  // An ETag per response means hashing every body; functions that want caching set their own headers.
  app.set('etag', false);
  // Node's querystring: flat keys, repeated keys as arrays. No nested `a[b]=` objects as qs would build.
  app.set('query parser', 'simple');

  if (opts.onRequestLog) app.use(requestLogger(opts.onRequestLog));
  if (opts.requestTimeoutMs !== undefined) app.use(requestDeadline(opts.requestTimeoutMs));
  if (opts.cors) app.use(corsMiddleware(opts.cors));

  app.use((req: Request, res: Response, next: NextFunction) => {
    let match: RouteMatch | null;
    try {
      match = opts.table.match(req.method, req.path);
    } catch {
      return sendError(res, new HttpError(400, 'invalid_path', `Request path ${req.path} has a malformed percent-encoding`));
    }
    if (!match) {
      if (opts.engineConnected && !opts.engineConnected()) {
        return sendError(res, new HttpError(503, 'engine_unavailable', `svc-http is reconnecting to the engine; routes are restored when it is back`, { 'retry-after': '1' }));
      }
      return sendError(res, noRoute(opts.table, req.method, req.path));
    }
    (res.locals as Locals).match = match;
    // Node decodes only `chunked`: a body sent `Transfer-Encoding: gzip, chunked` would reach the
    // function still compressed (express and fastify pass it on so). RFC 9112 §6.1: 501, as nginx.
    const te = req.headers['transfer-encoding'];
    if (te !== undefined && te.toLowerCase().split(',').some((c) => c.trim() !== 'chunked')) {
      return sendError(res, new HttpError(501, 'unsupported_transfer_encoding', `Transfer-Encoding ${JSON.stringify(te)} is not supported: send the body chunked (or with a Content-Length) and compress it with Content-Encoding: gzip, deflate or br`));
    }
    next();
  });

  // Every content type is read as bytes (with the size limit and gzip/deflate/br decoding done by
  // body-parser), then parsed by us: one limit and one set of error codes for JSON and text. A
  // streaming route's body is not read here unless it is small JSON: it streams to the function.
  const readBody = express.raw({ type: () => true, limit: opts.bodyLimitBytes });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (streams(res) && !buffersBody(req, opts.bodyLimitBytes)) return next();
    readBody(req, res, next);
  });

  const streams = (res: Response): boolean => opts.streaming !== undefined && (opts.streamAll === true || (res.locals as Locals).match!.route.stream);

  app.use(async (req: Request, res: Response) => {
    const locals = res.locals as Locals;
    const { route, params } = locals.match!;
    const invoke = (payload: HttpRequestPayload, signal?: AbortSignal): Promise<unknown> => {
      locals.traceparent = requestTraceparent(req.headers.traceparent) ?? newTraceparent();
      return opts.invoke(route.functionId, payload, route.triggerId, locals.traceparent, signal);
    };
    const fail = (e: unknown): void => sendError(res, e instanceof HttpError ? e : invocationErrorToHttp(e, route.functionId, opts.timeoutMs(), opts.exposeErrors));
    try {
      const payload = buildPayload({
        body: parseBody(Buffer.isBuffer(req.body) ? req.body : undefined, req.headers['content-type']),
        headers: req.headers,
        query: req.query as Record<string, string | string[]>,
        pathParams: params,
        method: req.method,
        path: req.path,
        route: route.apiPath,
      });
      if (opts.streaming && streams(res)) {
        const streamLimit = opts.streamBodyLimitBytes ?? DEFAULT_STREAM_BODY_LIMIT;
        if (!Buffer.isBuffer(req.body)) {
          checkEncoding(req);
          checkDeclaredLength(req, streamLimit);
          locals.unbounded?.();
        }
        await serveStreamed({
          res,
          functionId: route.functionId,
          hooks: opts.streaming,
          buffered: Buffer.isBuffer(req.body) ? req.body : undefined,
          bodyLimitBytes: streamLimit,
          call: (refs, signal) => invoke({ ...payload, ...refs }, signal),
          send: (spec) => send(res, spec),
          sendError: fail,
        });
        return;
      }
      const result = await invoke(payload);
      send(res, envelopeToResponse(result, route.functionId));
    } catch (e) {
      fail(e);
    }
  });

  // Errors raised by express itself, in practice by the body reader.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, bodyErrorToHttp(err, opts.bodyLimitBytes));
  });
  return app;
}

function noRoute(table: RouteTable, method: string, path: string): HttpError {
  const allowed = table.allowedMethods(path);
  if (allowed.length > 0) {
    return new HttpError(405, 'method_not_allowed', `${method} is not bound for ${path}; bound methods: ${allowed.join(', ')}`, {
      allow: allowed.join(', '),
    });
  }
  return new HttpError(404, 'not_found', `No route for ${method} ${path}`);
}

function bodyErrorToHttp(err: unknown, limit: number): HttpError {
  const e = err as { type?: string; status?: number; message?: string; length?: number };
  switch (e?.type) {
    case 'entity.too.large':
      return new HttpError(413, 'payload_too_large', `Request body${e.length ? ` of ${e.length} bytes` : ''} exceeds the limit of ${limit} bytes`);
    case 'encoding.unsupported':
      return new HttpError(415, 'unsupported_encoding', e.message ?? 'Unsupported Content-Encoding');
    case 'request.aborted':
    case 'request.size.invalid':
      return new HttpError(400, 'invalid_body', e.message ?? 'The request body was incomplete');
  }
  const status = typeof e?.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : 500;
  return new HttpError(status, status === 500 ? 'internal_error' : 'bad_request', e?.message ?? String(err));
}

function send(res: Response, spec: HttpResponseSpec): void {
  if (res.headersSent) return;
  res.statusCode = spec.status;
  for (const name in spec.headers) res.setHeader(name, spec.headers[name]!);
  if (spec.body === undefined) {
    if (spec.status !== 204 && spec.status !== 304) res.setHeader('content-length', '0');
    res.end();
  } else {
    res.setHeader('content-length', Buffer.byteLength(spec.body));
    res.end(spec.body);
  }
}

/** An error response; after the function was called, it names the call's trace (`trace_id`). */
function sendError(res: Response, err: HttpError): void {
  const locals = res.locals as Locals;
  locals.errorCode = err.code;
  if (err.withheldMessage !== undefined) locals.withheldMessage = err.withheldMessage;
  send(res, errorResponse(err, traceIdOfTraceparent(locals.traceparent)));
}

/**
 * A request must arrive whole within `ms`, unless a streaming route's call takes its body over
 * (`Locals.unbounded`): that body streams for as long as the call runs, bounded by its timeout_ms.
 * Late: 408 `request_timeout`, and the connection is closed.
 */
function requestDeadline(ms: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.complete) return next();
    const timer = setTimeout(() => {
      if (req.complete) return;
      if (res.headersSent) {
        req.socket.destroy();
        return;
      }
      res.setHeader('connection', 'close');
      res.once('finish', () => req.socket.destroy());
      sendError(res, new HttpError(408, 'request_timeout', `The request was not received within ${ms} ms (svc-http's request_timeout_ms)`));
    }, ms);
    // A deadline never keeps the process alive (a test's svc-http stayed 300 s after its last request).
    timer.unref();
    const lift = (): void => clearTimeout(timer);
    (res.locals as Locals).unbounded = lift;
    req.once('end', lift);
    req.once('close', lift);
    // Answered (or gone) before its body came: Node then closes the connection rather than read on.
    res.once('close', lift);
    next();
  };
}

function requestLogger(log: (entry: RequestLogEntry, traceparent: string | undefined) => void) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = performance.now();
    // 'close' also fires when the client hangs up before the answer; that is logged as 499.
    res.once('close', () => {
      const locals = res.locals as Locals;
      log({
        method: req.method,
        path: req.path,
        status: res.writableFinished ? res.statusCode : 499,
        duration_ms: Math.round((performance.now() - start) * 10) / 10,
        ...(locals.match ? { function_id: locals.match.route.functionId } : {}),
        ...(locals.errorCode ? { error_code: locals.errorCode } : {}),
        ...(locals.withheldMessage !== undefined ? { error_message: locals.withheldMessage } : {}),
      }, locals.traceparent);
    });
    next();
  };
}

/**
 * CORS with the `cors` package (it gets the Vary, preflight and credentials rules right). It treats
 * every OPTIONS request as a preflight, so a plain OPTIONS (no Access-Control-Request-Method) goes
 * past it to the route table, where a function may be bound to OPTIONS.
 */
function corsMiddleware(c: CorsConfig) {
  const any = c.origins.includes('*');
  const options: CorsOptions = {
    // With credentials, browsers refuse `*`; echoing the request's origin is the permissive equivalent.
    origin: any ? (c.credentials ? true : '*') : c.origins,
    ...(c.methods ? { methods: c.methods } : {}),
    ...(c.headers ? { allowedHeaders: c.headers } : {}),
    ...(c.expose_headers ? { exposedHeaders: c.expose_headers } : {}),
    ...(c.credentials ? { credentials: true } : {}),
    ...(c.max_age !== undefined ? { maxAge: c.max_age } : {}),
    optionsSuccessStatus: 204,
  };
  const handle = cors(options);
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] === undefined) {
      const origin = req.headers.origin;
      if (origin && (any || c.origins.includes(origin))) res.setHeader('access-control-allow-origin', any && !c.credentials ? '*' : origin);
      return next();
    }
    handle(req, res, next);
  };
}
