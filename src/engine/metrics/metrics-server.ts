import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

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

/**
 * The Prometheus endpoint: GET /metrics on a port of its own (Prometheus scrapes plain HTTP; the
 * engine's port speaks WebSocket). Anything else is 404; a request must arrive within 10 s.
 */
export class MetricsServer {
  private http: Server | null = null;

  constructor(private readonly registry: Registry) {}

  async start(host: string, port: number): Promise<{ host: string; port: number; url: string }> {
    const http = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('svc engine metrics: GET /metrics\n');
        return;
      }
      this.registry.metrics().then(
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
