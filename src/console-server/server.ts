/**
 * The console's server: serves the built React app (console/dist) and gives the browser a small
 * JSON API over one persistent engine connection (an svc-sdk client, hidden from worker lists):
 *
 *   GET  /api/session              {csrf_token}: the token every other /api request carries in X-CSRF-Token
 *   GET  /api/status               {connected, engine_url, state}
 *   POST /api/call                 {function_id, payload?, timeout_ms?, namespace?, background?, engine_down_as_200?} → {ok, result | error, duration_ms}
 *   POST /api/http                 {method, path, body?, headers?} → the answer of svc-http to that request
 *
 * The browser never talks WebSocket to the engine: this keeps the engine's port off the browser's
 * origin, and lets the page tell "console server gone" from "engine gone" (a banner each).
 * Every request passes ConsoleGuard first (guard.ts): only the console's own page may use it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Request, type Response } from 'express';
import { InvocationError, redactAddress, Worker } from 'svc-sdk';
import { traceIdOfTraceparent, traceparentMaker } from 'svc-sdk/internal';
import { apiErrors } from './api-errors.js';
import { ConsoleGuard } from './guard.js';
import { listAll } from '../engine/listing-pages.js';

/** console/dist of this checkout (this file runs from dist/src/console-server/). */
export const DEFAULT_CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

export interface ConsoleServerOptions {
  engineUrl: string;
  port?: number;
  host?: string;
  staticDir?: string;
  /** Used for test requests when svc-http does not say where it listens. */
  httpUrl?: string;
  /** Host names besides IP addresses, localhost and `host` that the console answers to (`--allowed-host`). */
  allowedHosts?: string[];
  /** The local engine's client secret (.svc/engine.json), asked at every connect: lets the console keep its svc-console name. */
  runSecret?: () => string | undefined;
  /** The name it registers (default `svc-console:<pid>`, which needs that secret or an admin token). */
  workerName?: string;
  /** Where a failure of the server's own code is told, with its stack (default: stderr). */
  log?: (line: string) => void;
}

export interface ConsoleServer {
  url: string;
  port: number;
  worker: Worker;
  close(): Promise<void>;
}

const MAX_TIMEOUT_MS = 5 * 60_000;
/** The largest request body of the console's API (a call's payload from the Functions page). */
const API_BODY_LIMIT = '8mb';

export async function startConsoleServer(o: ConsoleServerOptions): Promise<ConsoleServer> {
  const staticDir = o.staticDir ?? DEFAULT_CONSOLE_DIST;
  if (!existsSync(join(staticDir, 'index.html'))) {
    throw new Error(`the console is not built: ${join(staticDir, 'index.html')} is missing (run \`npm run build:console\` in the svc checkout)`);
  }
  // What the page and error messages show: the address without a token it may carry.
  const shownEngineUrl = redactAddress(o.engineUrl);
  const guard = new ConsoleGuard(o.host ?? '127.0.0.1', o.allowedHosts ?? []);
  const worker = new Worker(o.engineUrl, {
    workerName: o.workerName ?? `svc-console:${process.pid}`,
    // Only the local engine's client secret, never one inherited from the environment.
    runSecret: o.runSecret ?? '',
    role: 'client',
    echoLogs: false,
    reconnect: { initialDelayMs: 200, maxDelayMs: 2000 },
  });
  worker.on('error', () => {
    /* per-call errors go back to the browser */
  });
  worker.start();

  const app = express();
  app.disable('x-powered-by');
  // Before anything reads a body: a refused request costs nothing.
  app.use(guard.pages());
  app.use('/api', guard.api());
  app.use('/api', express.json({ limit: API_BODY_LIMIT }));

  // The pages' own periodic reads (state::list, queue::list, cron::list…) go in traces whose id
  // begins with this, so that the Traces page can leave them out: at two a second they would push
  // the system's own traces off it.
  const backgroundTracePrefix = randomBytes(8).toString('hex');
  const backgroundTraceparent = traceparentMaker(backgroundTracePrefix);
  const backgroundParent = (): { traceparent: string } => ({ traceparent: backgroundTraceparent() });

  /**
   * A new trace for a call the user made, under a prefix of its own. The console has no span of its
   * own: the traceparent names no parent, so the call's span is the trace's root, as a background
   * read's is (traceparentMaker).
   */
  const userTraceparent = traceparentMaker();
  const userParent = (): { traceparent: string } => ({ traceparent: userTraceparent() });

  app.get('/api/session', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ csrf_token: guard.csrfToken, background_trace_prefix: backgroundTracePrefix });
  });

  app.get('/api/status', (_req, res) => {
    res.json({
      connected: worker.state === 'connected',
      state: worker.state,
      engine_url: shownEngineUrl,
      ...(worker.refusal ? { error: { code: worker.refusal.code, message: worker.refusal.message } } : {}),
    });
  });

  app.post('/api/call', async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as { function_id?: unknown; payload?: unknown; timeout_ms?: unknown; namespace?: unknown; background?: unknown; engine_down_as_200?: unknown };
    if (typeof body.function_id !== 'string' || body.function_id.length === 0) {
      res.status(400).json({ ok: false, error: { code: 'invalid_request', message: '"function_id" must be a non-empty string' } });
      return;
    }
    // Without one of the page's own, the engine's default deadline applies.
    const timeoutMs = typeof body.timeout_ms === 'number' && body.timeout_ms > 0 ? Math.min(body.timeout_ms, MAX_TIMEOUT_MS) : undefined;
    // The engine being away is a 503 for API clients; the console's page asks for a 200
    // (`engine_down_as_200`), which a browser does not log as a failed load on every read.
    const downStatus = body.engine_down_as_200 === true ? 200 : 503;
    if (worker.state !== 'connected') {
      const refusal = worker.refusal;
      res.status(downStatus).json({
        ok: false,
        engine_down: true,
        error: refusal
          ? { code: refusal.code, message: refusal.message }
          : { code: 'engine_unreachable', message: `The engine at ${shownEngineUrl} is not reachable (${worker.state}); retrying` },
      });
      return;
    }
    // A call the user made starts a trace whose id the answer names, so the page can link to it.
    const parent = body.background === true ? backgroundParent() : userParent();
    const traceId = traceIdOfTraceparent(parent.traceparent)!;
    const t0 = performance.now();
    try {
      const result = await worker.trigger({
        function_id: body.function_id,
        payload: body.payload ?? {},
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        // The function's namespace (iii 0.23+), as the Functions page lists it; the engine checks it.
        ...(typeof body.namespace === 'string' ? { namespace: body.namespace } : {}),
        parent,
      });
      res.json({ ok: true, result: result ?? null, duration_ms: performance.now() - t0, trace_id: traceId });
    } catch (e) {
      const err =
        e instanceof InvocationError
          ? { code: e.code, message: e.message, ...(e.stacktrace ? { stacktrace: e.stacktrace } : {}) }
          : { code: 'console_error', message: (e as Error).message };
      const lost = err.code === 'connection_lost' || err.code === 'connection_failed';
      res.status(lost ? downStatus : 200).json({ ok: false, ...(lost ? { engine_down: true } : {}), error: err, duration_ms: performance.now() - t0, trace_id: traceId });
    }
  });

  app.post('/api/http', async (req: Request, res: Response) => {
    const b = (req.body ?? {}) as { method?: unknown; path?: unknown; body?: unknown; headers?: unknown };
    const method = typeof b.method === 'string' ? b.method.toUpperCase() : 'GET';
    if (typeof b.path !== 'string' || !b.path.startsWith('/')) {
      res.status(400).json({ ok: false, error: { code: 'invalid_request', message: '"path" must start with /' } });
      return;
    }
    let base: string;
    try {
      base = await httpBase(worker, o.httpUrl);
    } catch (e) {
      res.status(200).json({ ok: false, error: { code: 'http_unavailable', message: (e as Error).message } });
      return;
    }
    const headers: Record<string, string> = { ...(isStringMap(b.headers) ? b.headers : {}) };
    const hasBody = b.body !== undefined && b.body !== null && b.body !== '' && method !== 'GET' && method !== 'HEAD';
    if (hasBody && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
    const t0 = performance.now();
    try {
      const r = await fetch(base + b.path, {
        method,
        headers,
        ...(hasBody ? { body: typeof b.body === 'string' ? b.body : JSON.stringify(b.body) } : {}),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await r.text();
      res.json({
        ok: true,
        url: base + b.path,
        status: r.status,
        headers: Object.fromEntries(r.headers.entries()),
        body: text,
        duration_ms: performance.now() - t0,
      });
    } catch (e) {
      res.json({ ok: false, error: { code: 'http_request_failed', message: `${method} ${base}${b.path}: ${(e as Error).message}` }, duration_ms: performance.now() - t0 });
    }
  });

  // A body that is not JSON (or too large) gets a JSON answer naming the problem, not an HTML page;
  // a failure of ours is a logged 500.
  app.use('/api', apiErrors(API_BODY_LIMIT, o.log ?? ((line) => process.stderr.write(line + '\n'))));
  app.use('/api', (_req, res) => {
    res.status(404).json({ ok: false, error: { code: 'not_found', message: 'No such console API' } });
  });
  app.use(express.static(staticDir, { index: 'index.html', maxAge: 0 }));
  // The app routes with #hashes; any other path gets the app too.
  app.use((_req, res) => res.sendFile(join(staticDir, 'index.html')));

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(o.port ?? 3113, o.host ?? '127.0.0.1');
    s.once('listening', () => resolve(s));
    s.once('error', (e) => {
      void worker.shutdown();
      reject(e);
    });
  });
  const a = server.address() as AddressInfo;
  const shownHost = a.address === '0.0.0.0' || a.address === '::' ? '127.0.0.1' : a.address.includes(':') ? `[${a.address}]` : a.address;
  return {
    url: `http://${shownHost}:${a.port}/`,
    port: a.port,
    worker,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await worker.shutdown();
    },
  };
}

function isStringMap(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
}

/**
 * Where svc-http listens: the `http` trigger type's description names its bound address; else
 * the provider's metadata; else --http-url.
 */
async function httpBase(worker: Worker, fallback: string | undefined): Promise<string> {
  if (worker.state === 'connected') {
    const trigger_types = await listAll<{ id: string; description?: string | null }>((payload) => worker.trigger({ function_id: 'engine::triggers::list', payload, timeoutMs: 5000 }), 'trigger_types');
    const http = trigger_types.find((t) => t.id === 'http');
    const m = http?.description ? /https?:\/\/([^\s;,]+):(\d+)/.exec(http.description) : null;
    if (m) {
      const host = m[1] === '0.0.0.0' || m[1] === '::' || m[1] === '[::]' ? '127.0.0.1' : m[1]!;
      return `http://${host}:${m[2]}`;
    }
    if (!http && !fallback) throw new Error('No worker provides the http trigger type (start svc-http: svc worker add svc-http)');
  }
  if (fallback) return fallback.replace(/\/$/, '');
  throw new Error('The engine is not reachable, and no --http-url was given');
}
