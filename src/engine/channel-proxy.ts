import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, type RawData, type WebSocketServer } from 'ws';

/** Between the node id and the rest of a channel id in cluster mode (not a node id character). */
export const CHANNEL_NODE_SEPARATOR = '~';

/** Marks a socket one engine relays to another (sent on the upgrade request). */
export const RELAY_HEADER = 'x-svc-channel-relay';

/** Which engine of the cluster holds a channel (Cluster.channelEngineUrl); this engine's node id. */
export interface ChannelRoute {
  readonly nodeId: string;
  channelEngineUrl(channelId: string): string | null;
}

export interface RelayOptions {
  maxFrameBytes: number;
  /** Bytes waiting to be sent one way before the other side's socket stops being read. */
  windowBytes: number;
  /** How long a client with bytes pending may take none of them before it is judged lost (channels.ts). */
  readerStallMs: number;
  /**
   * How long the engine holding the channel may take to answer the upgrade (engine.handshake_timeout_ms:
   * the bound that engine sets its own clients, this one among them); then `channel_engine_unreachable`.
   */
  handshakeTimeoutMs: number;
}

export interface RelayHooks {
  /** channel-endpoint.ts refuseUpgrade (passed in: that module imports this one). */
  refuse(socket: Duplex, status: number, code: string, message: string): void;
  /**
   * The client's socket is a WebSocket, relayed; the endpoint pings it with its channel sockets,
   * and cuts it when silent unless `excused`.
   */
  opened(client: WebSocket, excused: () => boolean): void;
  /** It is pending no more: the client's socket was upgraded (and counts as a channel socket), refused, or went. */
  settled(): void;
}

/** The upstream engine's refusal body is small (refuseUpgrade); more than this is not read. */
const MAX_REFUSAL_BODY = 4096;

/**
 * A socket for a channel another engine of the cluster holds (its id names that engine): this
 * engine opens the same side of the channel there, with the same key and credentials, and relays
 * frames both ways. Workers open channels on their own engine (the SDKs build the URL from it), so
 * without the relay a channel made on one engine could not be used by a worker on another. The
 * upstream engine checks the key and token as for any socket; its refusal reaches this socket as the
 * same HTTP answer. Each direction holds at most `windowBytes` before the sending side's socket is
 * paused, so a relay costs this engine no more than a channel's window each way.
 */
export function relayChannel(req: IncomingMessage, socket: Duplex, head: Buffer, engineUrl: string, wss: WebSocketServer, opts: RelayOptions, hooks: RelayHooks): void {
  let pending = true;
  const settle = (): void => {
    if (pending) hooks.settled();
    pending = false;
  };
  const refuse = (status: number, code: string, message: string): void => {
    hooks.refuse(socket, status, code, message);
    settle();
  };
  const auth = req.headers.authorization;
  let up: WebSocket;
  try {
    up = new WebSocket(engineUrl + (req.url ?? '/'), {
      headers: { [RELAY_HEADER]: '1', ...(typeof auth === 'string' ? { authorization: auth } : {}) },
      maxPayload: opts.maxFrameBytes,
      perMessageDeflate: false,
      handshakeTimeout: opts.handshakeTimeoutMs,
    });
  } catch (e) {
    // ws refuses some request targets HTTP lets through (a fragment): this one is not relayed.
    return refuse(400, 'invalid_channel_ref', `The channel URL cannot be relayed: ${(e as Error).message}`);
  }
  /** The upstream engine answered (opened or refused). */
  let settled = false;
  /** The client's socket became a WebSocket (handleUpgrade called back). */
  let upgraded = false;
  // Until the client's socket is a WebSocket, its going ends the upstream socket: while that
  // connects, and if handleUpgrade refuses the handshake (a bad key or version, a half-closed socket,
  // the engine shutting down), which destroys the socket without calling back.
  const gone = (): void => {
    if (upgraded) return;
    if (!settled || up.readyState === WebSocket.OPEN) up.terminate();
    settled = true;
    settle();
  };
  socket.once('close', gone);
  up.on('unexpected-response', (upReq, res) => {
    settled = true;
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => {
      if (body.length < MAX_REFUSAL_BODY) body += d;
    });
    res.on('end', () => {
      upReq.destroy();
      const error = refusalOf(body);
      refuse(res.statusCode ?? 502, error?.code ?? 'channel_not_found', error?.message ?? `The engine holding this channel answered ${res.statusCode}`);
    });
    res.on('error', () => refuse(502, 'channel_engine_unreachable', 'The engine holding this channel stopped answering'));
  });
  up.on('error', (e) => {
    if (settled) return;
    settled = true;
    refuse(502, 'channel_engine_unreachable', `The engine holding this channel (${engineUrl}) cannot be reached: ${e.message}`);
  });
  up.once('open', () => {
    if (settled) return up.terminate();
    settled = true;
    wss.handleUpgrade(req, socket, head, (client) => {
      upgraded = true;
      socket.off('close', gone);
      settle();
      const fromClient = pipe(client, up, opts.windowBytes);
      const toClient = pipe(up, client, opts.windowBytes);
      // As Channel.silence judges a direct socket: a client this relay stopped reading cannot answer
      // pings, nor can one just resumed until the bytes it queued meanwhile (its pong is behind them)
      // are read; one being sent bytes it is slow to take, or sent some lately (they may all wait in
      // the kernel's buffers, out of bufferedAmount), is given readerStallMs.
      hooks.opened(
        client,
        () => fromClient.paused || Date.now() - fromClient.resumedAt < opts.readerStallMs || ((client.bufferedAmount > 0 || toClient.fed) && Date.now() - toClient.progressAt < opts.readerStallMs),
      );
    });
  });
}

/** `{error: {code, message}}` as refuseUpgrade writes it, or null. */
function refusalOf(body: string): { code: string; message: string } | null {
  try {
    const e = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
    return typeof e?.code === 'string' && typeof e.message === 'string' ? { code: e.code, message: e.message } : null;
  } catch {
    return null;
  }
}

/** One direction of a relay: whether its sending side is paused (and when it last resumed), and when `to` last took bytes. */
interface Pipe {
  readonly paused: boolean;
  readonly resumedAt: number;
  readonly progressAt: number;
  /** Some bytes went to `to`'s socket. */
  readonly fed: boolean;
}

/** Frames of `from` go to `to` in order; `from` is not read while `to` holds over `window` bytes. */
function pipe(from: WebSocket, to: WebSocket, window: number): Pipe {
  const raw = (from as unknown as { _socket?: { pause(): void; resume(): void } })._socket;
  const state = { paused: false, resumedAt: 0, progressAt: Date.now(), fed: false };
  from.on('message', (data: RawData, isBinary: boolean) => {
    if (to.readyState !== WebSocket.OPEN) return;
    // A stall is measured from when `to` first had something to take.
    if (to.bufferedAmount === 0) state.progressAt = Date.now();
    to.send(data, { binary: isBinary }, () => {
      state.progressAt = Date.now();
      state.fed = true;
      if (state.paused && to.bufferedAmount <= window / 2) {
        state.paused = false;
        state.resumedAt = Date.now();
        raw?.resume();
      }
    });
    if (!state.paused && to.bufferedAmount > window) {
      state.paused = true;
      raw?.pause();
    }
  });
  from.on('error', () => {});
  from.on('close', (code: number, reason: Buffer) => {
    if (to.readyState === WebSocket.CLOSED) return;
    // A side lost without a close frame (1006) is lost on the other side too; a close is passed on
    // with its reason, which names why the channel ended (`channel_writer_lost: …`: channels.ts).
    if (code === 1006) to.terminate();
    else to.close(code === 1005 ? 1000 : code, reason);
  });
  return state;
}
