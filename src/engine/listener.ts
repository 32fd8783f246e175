import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { SvcError } from 'svc-sdk';
import { admitConnection } from './admission.js';
import { presentedToken, type Access, type TokenTable } from './auth.js';
import { refuseUpgrade, type Channels } from './channel-endpoint.js';
import type { EngineRun, RunIdentity } from './engine-run.js';
import { answerHealth, type NotReady } from './health.js';
import type { EngineOptions } from './options.js';
import { normalizeOrigin, originRefusal } from './origin.js';

/** What the listener asks of the engine: its state, and where admitted connections go. */
export interface ListenerHooks {
  notReady(): NotReady | null;
  stopping(): boolean;
  /** Sessions, `/otel` sockets and channel sockets: all count against max_connections. */
  connectionCount(): number;
  readonly tokens: TokenTable;
  readonly run: EngineRun;
  readonly channels: Channels;
  event(level: 'warn' | 'error', message: string): void;
  /** An iii SDK's `/otel` telemetry socket, admitted. */
  telemetry(ws: WebSocket): void;
  /** A worker's (or client's) socket on `/`, admitted. */
  session(ws: WebSocket, socket: Socket, access: Access, identity: RunIdentity | null): void;
}

type Address = { host: string; port: number; url: string };

/**
 * The engine's HTTP side: the server workers' sockets are upgraded on, the paths it serves
 * (`/` for workers, `/otel` for iii SDKs' telemetry, `/ws/channels/…` for channels, health on
 * plain GETs), and what is refused at the upgrade before it is a connection (origin, path,
 * shutdown, max_connections, a channel socket's token). What a connection does once admitted is
 * the engine's (server.ts).
 */
export class EngineListener {
  private constructor(
    private readonly http: Server,
    private readonly wss: WebSocketServer,
  ) {}

  /** Listen on opts.host:opts.port; resolves once bound. */
  static async listen(opts: EngineOptions, hooks: ListenerHooks): Promise<EngineListener> {
    // Our own HTTP server, so that a client that opens a socket and never finishes the upgrade
    // is cut off after handshake_timeout_ms instead of holding a connection forever.
    const http = createServer({ connectionsCheckingInterval: Math.max(100, Math.min(1000, opts.handshakeTimeoutMs / 2)) }, (req, res) => {
      if (answerHealth(req, res, () => hooks.notReady())) return;
      res.writeHead(426, { 'content-type': 'text/plain', upgrade: 'websocket' });
      res.end('svc engine: connect with a WebSocket (docs/protocol.md)\n');
    });
    http.headersTimeout = opts.handshakeTimeoutMs;
    http.requestTimeout = opts.handshakeTimeoutMs;
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(opts.port, opts.host, () => {
        http.off('error', reject);
        resolve();
      });
    });
    const wss = new WebSocketServer({
      noServer: true,
      // Frames between max_frame_bytes and this hard cap are read and refused with a clear error;
      // only beyond it does ws close the connection (1009) to protect memory.
      maxPayload: opts.maxFrameBytes * 4,
      perMessageDeflate: false,
    });
    const allowedOrigins = new Set(opts.allowedOrigins.map((o) => normalizeOrigin(o) ?? o));
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => upgrade(req, socket, head, wss, allowedOrigins, opts, hooks));
    wss.on('error', (err) => hooks.event('error', `server error: ${err.message}`));
    wss.on('connection', (ws, req) => {
      const path = (req.url ?? '/').split('?')[0];
      const admitted = admitConnection(ws, req, { connections: hooks.connectionCount(), maxConnections: opts.maxConnections, run: hooks.run, tokens: hooks.tokens, warn: (m) => hooks.event('warn', m) });
      if (!admitted) return;
      if (path === '/otel') hooks.telemetry(ws);
      else hooks.session(ws, req.socket, admitted.access, admitted.identity);
    });
    return new EngineListener(http, wss);
  }

  address(): Address {
    const a = this.http.address() as AddressInfo | null;
    if (!a) throw new SvcError('internal_error', 'The engine is not listening: address() is known once start() has resolved');
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    const shown = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
    return { host: a.address, port: a.port, url: `ws://${shown}:${a.port}` };
  }

  /** Stop listening and end the sockets left (the engine has sent them their close frames). */
  async close(): Promise<void> {
    const { wss, http } = this;
    // Give peers a moment to complete the close handshake, then cut the rest.
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        for (const c of wss.clients) c.terminate();
      }, 1000);
      wss.close(() => {
        clearTimeout(t);
        resolve();
      });
    });
    const closed = new Promise<void>((resolve) => http.close(() => resolve()));
    http.closeAllConnections();
    await closed;
  }
}

/**
 * Workers connect on `/`; iii SDKs also open `/otel` for telemetry and `/ws/channels/…` for
 * channels. Other paths are refused at the upgrade with 404.
 */
function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, wss: WebSocketServer, allowedOrigins: Set<string>, opts: EngineOptions, hooks: ListenerHooks): void {
  socket.on('error', () => {});
  // A web page (it sends Origin) from an origin not allowed: refused before it is a connection.
  const refusal = originRefusal(req, allowedOrigins);
  if (refusal) return refuseUpgrade(socket, 403, 'origin_not_allowed', refusal);
  const path = (req.url ?? '/').split('?')[0]!;
  if (path === '/' || path === '' || path === '/otel') {
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    return;
  }
  if (!path.startsWith('/ws/channels/')) return refuseUpgrade(socket, 404, 'not_found', 'svc serves workers on / and channels on /ws/channels/<channel_id> (docs/protocol.md)');
  if (hooks.stopping()) return refuseUpgrade(socket, 503, 'shutting_down', 'The engine is shutting down');
  // A channel's socket is a connection like any other: it counts against max_connections.
  const connections = hooks.connectionCount();
  if (connections >= opts.maxConnections) {
    return refuseUpgrade(socket, 503, 'overloaded', `The engine has ${connections} connections, channel sockets included (engine.limits.max_connections); retry later`);
  }
  // With tokens configured a channel's socket presents one too; its key is the right to the channel.
  if (hooks.tokens.enabled && !hooks.tokens.find(presentedToken(req))) {
    return refuseUpgrade(socket, 401, 'unauthorized', 'This engine requires a token on channel sockets too: Authorization: Bearer <token> or ?token=');
  }
  try {
    hooks.channels.upgrade(req, socket, head);
  } catch (e) {
    // Nothing an upgrade carries may end the engine: a bug here costs this socket only.
    hooks.event('error', `channel upgrade failed: ${(e as Error).message}`);
    socket.destroy();
  }
}
