import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { isLoopbackHost } from '../auth.js';

/** engine.metrics (docs/configuration.md): where /metrics is served and how many series a label may have. */
export interface MetricsOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** Function ids with a series of their own; calls of later ones count under `_other`. */
  maxFunctionSeries: number;
  /** Error codes with a series of their own; later ones count under `_other`. */
  maxErrorCodeSeries: number;
}

export const DEFAULT_METRICS_OPTIONS: MetricsOptions = { host: '127.0.0.1', port: 9464, maxFunctionSeries: 1000, maxErrorCodeSeries: 100 };

/** Scrapes answered from one rendering: within this long of it, and all those that asked meanwhile. */
const SCRAPE_REUSE_MS = 250;
/** Open connections to the metrics port; Prometheus keeps one per target. */
const MAX_CONNECTIONS = 32;

/**
 * The Prometheus endpoint: GET /metrics on a port of its own (Prometheus scrapes plain HTTP; the
 * engine's port speaks WebSocket). Anything else is 404; a request must arrive within 10 s.
 *
 * Rendering the text takes the engine's event loop (tens of ms with thousands of series), so
 * concurrent and back-to-back scrapes share one rendering: a flood of requests costs one a second,
 * not one each. Browsers are refused: a request with an `Origin` (Prometheus sends none), and, on a
 * loopback address, one whose `Host` is not a loopback name (a DNS-rebound page).
 */
export class MetricsServer {
  private http: Server | null = null;
  private rendering: { at: number; text: Promise<string> } | null = null;

  constructor(private readonly registry: Registry) {}

  private scrape(): Promise<string> {
    const now = performance.now();
    if (this.rendering && now - this.rendering.at < SCRAPE_REUSE_MS) return this.rendering.text;
    const text = this.registry.metrics();
    this.rendering = { at: now, text };
    text.catch(() => {
      if (this.rendering?.text === text) this.rendering = null;
    });
    return text;
  }

  async start(host: string, port: number): Promise<{ host: string; port: number; url: string }> {
    const loopback = isLoopbackHost(host);
    const http = createServer((req, res) => {
      const refusal = browserRefusal(req, loopback);
      if (refusal) {
        res.writeHead(403, { 'content-type': 'text/plain' });
        res.end(`${refusal}\n`);
        return;
      }
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('svc engine metrics: GET /metrics\n');
        return;
      }
      this.scrape().then(
        (text) => {
          res.writeHead(200, { 'content-type': this.registry.contentType });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`metrics failed: ${(err as Error).message}\n`);
        },
      );
    });
    http.headersTimeout = 10_000;
    http.requestTimeout = 10_000;
    http.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, host, () => {
        http.off('error', reject);
        resolve();
      });
    });
    this.http = http;
    return this.address()!;
  }

  /** Where /metrics is served; null before start. */
  address(): { host: string; port: number; url: string } | null {
    const a = this.http?.address() as AddressInfo | null | undefined;
    if (!a) return null;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    const shown = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
    return { host: a.address, port: a.port, url: `http://${shown}:${a.port}/metrics` };
  }

  async stop(): Promise<void> {
    const http = this.http;
    if (!http) return;
    const closed = new Promise<void>((resolve) => http.close(() => resolve()));
    http.closeAllConnections();
    await closed;
  }
}

/** A header's value shown in a refusal: quoted and cut short. */
const shown = (v: string): string => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v);

/** Null when the request may be answered; else why not (`origin_not_allowed`, `host_not_allowed`). */
function browserRefusal(req: IncomingMessage, loopback: boolean): string | null {
  const origin = req.headers.origin;
  if (origin !== undefined) return `origin_not_allowed: the metrics endpoint does not answer web pages (Origin ${shown(String(origin))}); Prometheus sends no Origin`;
  if (!loopback) return null;
  const host = req.headers.host ?? '';
  let name: string;
  try {
    name = new URL(`http://${host}`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    name = '';
  }
  if (name === 'localhost' || isLoopbackHost(name)) return null;
  return `host_not_allowed: the metrics endpoint listens on a loopback address and answers Host localhost or a loopback IP, not ${shown(host)} (a DNS-rebound page?); set engine.metrics.host to serve other names`;
}
