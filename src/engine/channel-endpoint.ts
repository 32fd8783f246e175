import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import { CHANNEL_NODE_SEPARATOR, RELAY_HEADER, relayChannel, type ChannelRoute } from './channel-proxy.js';
import { Channel, ChannelBudget, CHANNEL_ABORT_CLOSE, DEFAULT_CHANNEL_FRAMES, MAX_CHANNEL_FRAMES, type ChannelErrorCode, type ChannelLimits, type ChannelRef } from './channels.js';
import { EngineError } from './errors.js';
import type { Peer } from './peer.js';
import type { Registry } from './registry.js';

/**
 * The engine's channels and their endpoint, `/ws/channels/<channel_id>?key=…&dir=read|write` on
 * the engine's port. A socket is let in only with the key of that side of a live channel, once
 * (and, with tokens configured, a valid token: server.ts checks it before handing the upgrade
 * here). Refusals are HTTP answers to the upgrade, with an error body, before any socket exists.
 */
export class Channels {
  private readonly byId = new Map<string, Channel>();
  private readonly byOwner = new Map<Peer, Set<Channel>>();
  private readonly wss: WebSocketServer;
  /** Sockets that answered the last ping. */
  private readonly alive = new WeakSet<WebSocket>();
  private readonly liveness: NodeJS.Timeout;
  /** What all channels hold together (engine.limits.max_channel_bytes). */
  private readonly budget: ChannelBudget;
  /** Cluster mode: channel ids name their engine, and sockets for another engine's are relayed there. */
  cluster: ChannelRoute | null = null;
  /**
   * Client sockets relayed to another engine's channels (channel-proxy.ts), each with what excuses
   * its silence, as Channel.silence does for a direct socket.
   */
  private readonly relayed = new Map<WebSocket, () => boolean>();
  /**
   * Relays whose upstream socket is still opening (up to its handshake timeout): they hold a client
   * socket and an upstream one, so they count as sockets too. (At shutdown the HTTP server destroys
   * their client sockets, which ends their upstream ones: channel-proxy.ts.)
   */
  private pendingRelays = 0;

  constructor(
    private readonly limits: ChannelLimits & { pingIntervalMs: number; maxTotalBytes: number; ownerGraceMs: number },
  ) {
    // Held or released, every writer is told: while the budget is full no channel reads its writer.
    this.budget = new ChannelBudget(limits.maxTotalBytes, limits.maxFrameBytes, () => {
      for (const c of this.byId.values()) c.updatePause();
    });
    // Its own server: channel frames have their own size cap (a frame over it closes the socket
    // with 1009 before it is buffered), apart from the protocol socket's.
    this.wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxFrameBytes, perMessageDeflate: false });
    this.liveness = setInterval(() => this.ping(), limits.pingIntervalMs);
    this.liveness.unref();
  }

  get size(): number {
    return this.byId.size;
  }

  /** Bytes all channels hold now (frames not yet written to their readers' sockets). */
  get heldBytes(): number {
    return this.budget.held;
  }

  /** Sockets open on channels, relays still opening included (they count against engine.limits.max_connections). */
  get socketCount(): number {
    return this.wss.clients.size + this.pendingRelays;
  }

  /** Of socketCount, those relayed to another engine's channels. */
  get relayedCount(): number {
    return this.relayed.size;
  }

  /** `engine::channels::create {buffer_size?}` for `owner`: a new channel's two refs. */
  create(owner: Peer, data: unknown): { writer: ChannelRef; reader: ChannelRef } {
    const raw = typeof data === 'object' && data !== null ? (data as Record<string, unknown>).buffer_size : undefined;
    if (raw !== undefined && raw !== null && !(Number.isInteger(raw) && (raw as number) >= 1 && (raw as number) <= MAX_CHANNEL_FRAMES)) {
      throw new EngineError('invalid_payload', `engine::channels::create: "buffer_size" must be an integer from 1 to ${MAX_CHANNEL_FRAMES}, got ${JSON.stringify(raw)?.slice(0, 40)}`);
    }
    const mine = this.byOwner.get(owner) ?? new Set<Channel>();
    if (mine.size >= this.limits.maxPerWorker) {
      throw new EngineError('too_many_channels', `${owner.name} has ${mine.size} open channels (engine.limits.max_channels_per_worker); end some first`);
    }
    const id = this.cluster ? `${this.cluster.nodeId}${CHANNEL_NODE_SEPARATOR}${randomUUID()}` : randomUUID();
    const c = new Channel(id, owner, (raw as number | undefined) ?? DEFAULT_CHANNEL_FRAMES, this.limits, this.budget, (ended) => this.forget(ended));
    this.byId.set(c.id, c);
    mine.add(c);
    this.byOwner.set(owner, mine);
    return { writer: c.ref('write'), reader: c.ref('read') };
  }

  /**
   * `engine::channels::close {channel_id}` by the channel's owner: it ends for both sides
   * (`channel_owner_closed`), opened or not. `{closed: false}` when `owner` has no such channel
   * (it already ended, or is another worker's).
   */
  closeOwned(owner: Peer, data: unknown): { closed: boolean } {
    const id = typeof data === 'object' && data !== null ? (data as Record<string, unknown>).channel_id : undefined;
    if (typeof id !== 'string') throw new EngineError('invalid_payload', `engine::channels::close: "channel_id" must be a string, got ${JSON.stringify(id)?.slice(0, 40)}`);
    const c = this.byId.get(id);
    if (!c || c.owner !== owner) return { closed: false };
    c.abort('channel_owner_closed', `channel ${c.id}: ${owner.name}, which created it, closed it`);
    return { closed: true };
  }

  /** An upgrade on `/ws/channels/…`: opened onto its channel, or answered with why not. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    let url: URL;
    let id: string;
    try {
      url = new URL(req.url ?? '/', 'http://engine');
      id = decodeURIComponent(url.pathname.slice('/ws/channels/'.length));
    } catch {
      return refuseUpgrade(socket, 400, 'invalid_channel_ref', 'The channel URL is malformed (its percent-encoding)');
    }
    const dir = url.searchParams.get('dir');
    const key = url.searchParams.get('key') ?? '';
    if (dir !== 'read' && dir !== 'write') {
      return refuseUpgrade(socket, 400, 'invalid_channel_ref', `"dir" must be read or write, got ${JSON.stringify(dir)?.slice(0, 40)}`);
    }
    const c = this.byId.get(id);
    if (!c) {
      // A socket another engine relays here is for a channel of this engine: never relayed on (a
      // wrong advertise_url would otherwise send it round in a loop).
      const engineUrl = req.headers[RELAY_HEADER] === undefined ? this.cluster?.channelEngineUrl(id) : null;
      if (engineUrl) {
        const { maxFrameBytes, windowBytes, readerStallMs, handshakeTimeoutMs } = this.limits;
        const relay = { maxFrameBytes, windowBytes, readerStallMs, handshakeTimeoutMs };
        this.pendingRelays++;
        return relayChannel(req, socket, head, engineUrl, this.wss, relay, {
          refuse: (s, status, code, message) => refuseUpgrade(s, status, code as UpgradeRefusalCode, message),
          opened: (ws, excused) => {
            this.relayed.set(ws, excused);
            this.watchLiveness(ws);
            ws.once('close', () => this.relayed.delete(ws));
          },
          settled: () => this.pendingRelays--,
        });
      }
      return refuseUpgrade(socket, 404, 'channel_not_found', `Channel ${JSON.stringify(id.slice(0, 80))} does not exist (it ended, expired, or was never created)`);
    }
    const why = c.refusal(dir, key);
    if (why) return refuseUpgrade(socket, why.status, why.code, why.message);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // The upgrade is asynchronous: the channel may have ended, or the side been taken, meanwhile.
      const late = c.refusal(dir, key);
      if (late) {
        ws.close(1008, `${late.code}: ${late.message}`.slice(0, 120));
        return;
      }
      this.watchLiveness(ws);
      c.attach(dir, ws);
    });
  }

  /** Counts `ws` alive now and whenever it is heard from: any frame, not only a pong, which can wait behind the bytes a pause held back. */
  private watchLiveness(ws: WebSocket): void {
    const heard = (): void => void this.alive.add(ws);
    heard();
    ws.on('pong', heard);
    ws.on('message', heard);
  }

  /**
   * Its owner left: channels with a side never opened end now (nobody is left to hand the ref on);
   * channels open at both ends get ownerGraceMs to finish, then end too. An owner's channels are
   * bounded by max_channels_per_worker only while it is connected: without the grace, a client
   * that reconnects could keep any number of them alive.
   */
  ownerLeft(owner: Peer): void {
    const mine = this.byOwner.get(owner);
    if (!mine) return;
    for (const c of [...mine]) {
      if (!c.opened) c.abort('channel_owner_left', `channel ${c.id}: ${owner.name}, which created it, disconnected before both sides opened`);
      else c.endAfter(this.limits.ownerGraceMs, 'channel_owner_left', `channel ${c.id}: ${owner.name}, which created it, disconnected ${this.limits.ownerGraceMs} ms before (engine.limits.channel_owner_grace_ms)`);
    }
  }

  /**
   * Sockets that miss a ping period are cut (their channel ends as on any lost side), unless
   * backpressure explains the silence (Channel.silence).
   */
  private ping(): void {
    for (const c of [...this.byId.values()]) {
      for (const ws of c.sockets()) {
        if (!this.alive.has(ws)) {
          if (c.silence(ws) === 'lost') c.lost(ws);
          continue;
        }
        this.alive.delete(ws);
        ws.ping();
      }
    }
    for (const [ws, excused] of this.relayed) {
      if (!this.alive.has(ws)) {
        if (!excused()) ws.terminate();
        continue;
      }
      this.alive.delete(ws);
      ws.ping();
    }
  }

  private forget(c: Channel): void {
    this.byId.delete(c.id);
    const mine = this.byOwner.get(c.owner);
    mine?.delete(c);
    if (mine?.size === 0) this.byOwner.delete(c.owner);
  }

  /** Engine shutdown: every channel ends for both sides with `shutting_down`. */
  close(): void {
    clearInterval(this.liveness);
    const why = 'the engine shut down before the stream ended';
    for (const c of [...this.byId.values()]) c.abort('shutting_down', why);
    // Relayed sockets are told as this engine's own are (their upstream is cut with them).
    for (const ws of this.relayed.keys()) ws.close(CHANNEL_ABORT_CLOSE, `shutting_down: ${why}`);
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
  }
}

/** Why the engine refuses a WebSocket upgrade (docs/errors.md). */
export type UpgradeRefusalCode = ChannelErrorCode | 'origin_not_allowed' | 'unauthorized' | 'not_found' | 'overloaded' | 'channel_engine_unreachable';

/** Answer an upgrade with an HTTP error and a JSON body `{error:{code,message}}`, then close. */
export function refuseUpgrade(socket: Duplex, status: number, code: UpgradeRefusalCode, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.on('error', () => {});
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/** `engine::channels::create` and `::close`: callable as any function (a token needs the right to call it). */
export function installChannelBuiltins(registry: Registry, channels: Channels): void {
  registry.addBuiltin('engine::channels::create', 'Create a channel (a stream of frames between two workers): {buffer_size?} → {writer, reader} refs', (data, caller) => {
    if (!caller) throw new EngineError('invalid_payload', 'engine::channels::create needs a calling connection to own the channel');
    return channels.create(caller, data);
  });
  registry.addBuiltin('engine::channels::close', 'End a channel this connection created, for both sides: {channel_id} → {closed}', (data, caller) => {
    if (!caller) throw new EngineError('invalid_payload', 'engine::channels::close needs a calling connection that owns the channel');
    return channels.closeOwned(caller, data);
  });
}
