/**
 * svc-http as a worker: a client of the engine like any user worker, written on svc-sdk. It
 * provides the trigger type `http`: the engine forwards each `registertrigger` of that type here,
 * the route table accepts or refuses it (the refusal travels back to the registering worker), and
 * `unregistertrigger` (binding removed, or its worker gone) takes the route away again.
 */
import type { AddressInfo } from 'node:net';
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { registerWorker, type Worker } from 'svc-sdk';
import { DEFAULT_HTTP_CONFIG, type HttpWorkerConfig } from './config.js';
import { RouteTable } from './route-table.js';
import { createHttpApp, type RequestLogEntry } from './server.js';

export interface HttpWorkerOptions extends Partial<HttpWorkerConfig> {
  /** Engine address; default env SVC_URL, else ws://localhost:49134. */
  url?: string;
  workerName?: string;
  /** The engine run's secret for this instance; default env SVC_RUN_SECRET (the supervisor sets it). */
  runSecret?: string;
}

export interface HttpWorkerHandle {
  /** The port actually bound (useful with port 0). */
  port: number;
  host: string;
  worker: Worker;
  routes: RouteTable;
  /** The HTTP server (its timeouts and bounds are svc-http's; tests read them). */
  server: Server;
  shutdown(): Promise<void>;
}

export const HTTP_TRIGGER_TYPE = 'http';
const SHUTDOWN_GRACE_MS = 5_000;
/** Node's default for a request's headers (server.headersTimeout): a client sending them slowly is cut. */
export const HEADERS_TIMEOUT_MS = 60_000;

export async function startHttpWorker(opts: HttpWorkerOptions = {}): Promise<HttpWorkerHandle> {
  const config: HttpWorkerConfig = { ...DEFAULT_HTTP_CONFIG, ...stripUndefined(opts) };
  const url = opts.url ?? process.env.SVC_URL ?? 'ws://localhost:49134';
  // It listens before it connects, so that its registration carries the port actually bound
  // (`port: 0` picks one): the engine shows it (metadata.http.url; svc worker add, svc status).
  // The app is made in the same turn as listen() resolves, before any request can be read.
  let app: ReturnType<typeof createHttpApp> | undefined;
  const server = await listen((req, res) => app!(req, res), config.port, config.host);
  const port = (server.address() as AddressInfo).port;
  const worker = registerWorker(url, {
    workerName: opts.workerName ?? 'svc-http',
    ...(opts.runSecret ? { runSecret: opts.runSecret } : {}),
    ...(config.timeoutMs !== undefined ? { invocationTimeoutMs: config.timeoutMs } : {}),
    metadata: { kind: 'builtin', http: { host: config.host, port, url: reachableUrl(config.host, port) } },
  });
  const routes = new RouteTable();
  // Request lines go to the engine only (logRequest): printing each one locally would cost more
  // than serving it. Route changes (rare) use worker.logger, which also prints them on stdout.
  app = createHttpApp({
    table: routes,
    // Without a timeout_ms of svc-http's own, the worker's default applies: the engine's. The call
    // is the binding's: the engine runs it with the rights of the worker that bound the route.
    invoke: (functionId, payload, bindingId, traceparent, signal) =>
      worker.trigger({ function_id: functionId, payload, bindingId, parent: { traceparent }, ...(signal ? { signal } : {}) }),
    bodyLimitBytes: config.bodyLimitBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    streamBodyLimitBytes: config.streamBodyLimitBytes,
    timeoutMs: () => worker.defaultTimeoutMs,
    cors: config.cors,
    engineConnected: () => worker.state === 'connected',
    streaming: {
      createChannel: () => worker.createChannel(),
      openReader: (ref) => worker.openReader(ref),
      openWriter: (ref) => worker.openWriter(ref),
      closeChannel: (channelId) => worker.trigger({ function_id: 'engine::channels::close', payload: { channel_id: channelId } }),
    },
    streamAll: config.streaming === 'all',
    exposeErrors: config.exposeErrors,
    ...(config.requestLog ? { onRequestLog: (e: RequestLogEntry, traceparent: string | undefined) => logRequest(worker, e, traceparent) } : {}),
  });
  boundConnections(server, config.maxConnections, worker.logger);

  // Bindings arrive only after the server listens, so an accepted route is immediately served.
  await worker.registerTriggerType(
    {
      id: HTTP_TRIGGER_TYPE,
      // Every replica serves every route: a load balancer in front of several may send a request to any.
      binding_mode: 'all',
      description: `HTTP endpoints on http://${config.host}:${port}; config {api_path: "/users/:id", http_method: "GET", stream?: true}`,
      trigger_request_format: {
        type: 'object',
        required: ['api_path', 'http_method'],
        properties: { api_path: { type: 'string', pattern: '^/' }, http_method: { type: 'string' }, stream: { type: 'boolean' } },
      },
    },
    {
      registerTrigger: (binding) => {
        const route = routes.add(binding, binding);
        worker.logger.info(`route ${route.method} ${route.apiPath} → ${route.functionId}`, {
          trigger_id: route.triggerId,
          function_id: route.functionId,
          http_method: route.method,
          api_path: route.apiPath,
        });
      },
      unregisterTrigger: (binding) => {
        // Limited to the binding object that added it, so a late removal of a replaced binding is a no-op.
        const standingBy = routes.isStandby(binding.id);
        const route = routes.remove(binding.id, binding);
        // A binding standing by served nothing: its removal changes no route.
        if (!route || standingBy) return;
        const serving = routes.servingAfter(route);
        if (serving) {
          // Another binding of the function (a replica of its worker) stood by for this route.
          worker.logger.info(`route ${serving.method} ${serving.apiPath} → ${serving.functionId} (trigger ${route.triggerId} removed; ${serving.triggerId} serves it)`, {
            trigger_id: serving.triggerId,
            removed_trigger_id: route.triggerId,
            function_id: serving.functionId,
          });
        } else {
          worker.logger.info(`route ${route.method} ${route.apiPath} removed`, { trigger_id: route.triggerId, function_id: route.functionId });
        }
      },
    },
  );

  let stopped: Promise<void> | null = null;
  return {
    port,
    host: config.host,
    worker,
    routes,
    server,
    shutdown: () =>
      (stopped ??= (async () => {
        // Requests in flight get a grace period to receive their function's answer, then are cut.
        await new Promise<void>((resolve) => {
          const grace = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
          server.close(() => {
            clearTimeout(grace);
            resolve();
          });
          server.closeIdleConnections();
        });
        await worker.shutdown();
        routes.clear();
      })()),
  };
}

/** A request's line, in the engine's logs only; under its call's trace when it made one (trace=… in svc logs). */
function logRequest(worker: Worker, e: RequestLogEntry, traceparent: string | undefined): void {
  const line = `${e.method} ${e.path} ${e.status} ${e.duration_ms}ms`;
  worker.log(e.status >= 500 ? 'warn' : 'info', line, e, traceparent === undefined ? {} : { traceparent });
}

/** Where a client on this machine reaches a server listening on `host`: a wildcard address on loopback. */
export function reachableUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

function listen(app: (req: IncomingMessage, res: ServerResponse) => void, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    // Node answers an HTTP/1.1 request without Host with a bare 400 before express sees it; the
    // check is done here instead, so that this refusal too is a JSON error like every other.
    // Node's requestTimeout (300 s by default) bounds every request of the server, so it cut
    // streaming uploads however long their route's timeout_ms; it is off, and the app bounds the
    // requests whose body it reads (request_timeout_ms, server.ts). Headers keep Node's bound, set
    // here because with requestTimeout 0 Node's default for headersTimeout is 0 (none) too.
    const server = createServer({ requireHostHeader: false, requestTimeout: 0, headersTimeout: HEADERS_TIMEOUT_MS }, (req: IncomingMessage, res: ServerResponse) => {
      if (req.httpVersion === '1.1' && req.headers.host === undefined) {
        const body = JSON.stringify({ error: { code: 'bad_request', message: 'An HTTP/1.1 request must carry a Host header' } });
        res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
        return;
      }
      app(req, res);
    });
    server.on('clientError', answerClientError);
    server.listen(port, host);
    server.once('listening', () => {
      server.off('error', reject);
      resolve(server);
    });
    server.once('error', (e: NodeJS.ErrnoException) => {
      reject(e.code === 'EADDRINUSE' ? Object.assign(new Error(`port ${port} on ${host} is already in use; choose another: svc worker add svc-http --set port=<n> (0: any free port), or port: in its config.yaml entry`), { code: 'port_in_use' }) : e);
    });
  });
}

/** How often at most a flood of refused connections is logged. */
const DROP_WARN_MS = 10_000;

/**
 * At most `max` connections at once: Node closes further ones as they arrive, before any request
 * is read (without a bound, a flood of idle connections took every descriptor or all memory). Each
 * refusal is counted; a warning says so at most every DROP_WARN_MS.
 */
function boundConnections(server: Server, max: number, logger: { warn(message: string, data?: Record<string, unknown>): void }): void {
  server.maxConnections = max;
  let dropped = 0;
  let warnedAt = 0;
  server.on('drop', () => {
    dropped++;
    const now = Date.now();
    if (now - warnedAt < DROP_WARN_MS) return;
    logger.warn(`svc-http has ${max} connections open (max_connections): closed ${dropped} more as they arrived`, { max_connections: max, dropped });
    warnedAt = now;
    dropped = 0;
  });
}

/**
 * Requests Node's HTTP parser refuses (a bad request line, an invalid header, headers over Node's
 * 16 KiB limit) never reach express; Node's default answer is a bare `400 Bad Request`. svc-http
 * answers them like every other error: a JSON envelope, then the connection is closed (the byte
 * stream cannot be trusted after a parse error).
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A response already under way on this socket cannot be followed by another: just cut it.
  const inProgress = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inProgress?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'Request headers exceed the server limit of 16 KiB']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request was not received in time']
        : [400, 'bad_request', `Malformed HTTP request (${err.code ?? 'parse error'}): ${String((err as { reason?: unknown }).reason ?? err.message)}`];
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k in o) {
    if (o[k] !== undefined && k !== 'url' && k !== 'workerName' && k !== 'runSecret') out[k] = o[k];
  }
  return out;
}
