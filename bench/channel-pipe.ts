/**
 * The least a channel relay can do, as its own process, for bench/channels.ts: a `ws` server that
 * pipes the socket opened with `?dir=write` to the one opened with `?dir=read` (same path), frame
 * by frame, and stops reading the writer while the reader's socket holds over 1 MiB unsent (the
 * same window as the engine's default). No keys, tokens, counting per frame or close codes.
 *
 *   node dist/bench/channel-pipe.js   → prints `READY ws://127.0.0.1:<port>`
 */
import { WebSocketServer, type WebSocket } from 'ws';

const WINDOW = 1024 * 1024;
const pending = new Map<string, { writer?: WebSocket; reader?: WebSocket; queue: Buffer[] }>();
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: WINDOW });
wss.on('connection', (ws, req) => {
  const u = new URL(req.url ?? '/', 'http://pipe');
  const pair = pending.get(u.pathname) ?? { queue: [] };
  pending.set(u.pathname, pair);
  if (u.searchParams.get('dir') === 'write') {
    pair.writer = ws;
    ws.on('message', (data: Buffer) => {
      const reader = pair.reader;
      if (!reader) {
        pair.queue.push(data);
        return;
      }
      reader.send(data);
      if (reader.bufferedAmount > WINDOW) ws.pause();
    });
    ws.on('close', () => {
      pair.reader?.close(1000);
      pending.delete(u.pathname);
    });
  } else {
    pair.reader = ws;
    for (const q of pair.queue.splice(0)) ws.send(q);
    // ws has no drain event of its own; its socket's is the moment the unsent bytes went out.
    (ws as unknown as { _socket: NodeJS.EventEmitter })._socket.on('drain', () => pair.writer?.resume());
  }
});
wss.on('listening', () => {
  const a = wss.address() as { port: number };
  process.stdout.write(`READY ws://127.0.0.1:${a.port}\n`);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
