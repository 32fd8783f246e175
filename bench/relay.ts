/**
 * Baseline for bench/run.ts: the least a router can do. It speaks just enough of the svc protocol
 * (svc-sdk/protocol, sdk/typescript/src/protocol/) for the same caller and callee processes to run unchanged:
 * `workerregistered` on connect, `registerfunction` remembered, `invokefunction` forwarded as the
 * original text to the registering socket (replicas of one id in turn), `invocationresult` forwarded back by invocation_id.
 * Everything else (hello, engine::workers::register, logs) is ignored. No validation, no deadlines,
 * no id remapping: whatever the engine costs beyond this is the price of being an engine.
 *
 *   node dist/bench/relay.js plain|coalescing   → prints `READY ws://127.0.0.1:<port>`
 *
 * `plain` writes every frame with its own `ws.send` (one syscall each); `coalescing` writes the first
 * frame of an event-loop turn at once and corks the socket for the rest of the turn (uncorked in
 * `setImmediate`), so they share a write: what a user would add to a relay to save syscalls. It is
 * its own code, not the SDK's `sendCoalesced` (which also flushes long turns part-way since
 * 2026-11-24), so that the baseline stays what it was.
 */
import { randomUUID } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';

const mode = process.argv[2];
if (mode !== 'plain' && mode !== 'coalescing') {
  process.stderr.write('usage: relay.js plain|coalescing\n');
  process.exit(2);
}
type Corkable = { cork(): void; uncork(): void; destroyed?: boolean };
const touched = new Set<Corkable>();
const corked = new Set<Corkable>();
let scheduled = false;
function endTurn(): void {
  scheduled = false;
  touched.clear();
  const sockets = [...corked];
  corked.clear();
  for (const s of sockets) if (!s.destroyed) s.uncork();
}
function sendPerTurn(ws: WebSocket, text: string): void {
  const sock = (ws as unknown as { _socket?: Corkable })._socket;
  if (sock && touched.has(sock)) {
    if (!corked.has(sock)) {
      sock.cork();
      corked.add(sock);
    }
    ws.send(text);
    return;
  }
  ws.send(text);
  if (sock) {
    touched.add(sock);
    if (!scheduled) {
      scheduled = true;
      setImmediate(endTurn);
    }
  }
}
const send: (ws: WebSocket, text: string) => void = mode === 'plain' ? (ws, text) => ws.send(text) : sendPerTurn;

/** Who serves each function id; several registrants (replicas) take turns. */
const functions = new Map<string, { sockets: WebSocket[]; next: number }>();
const callers = new Map<string, WebSocket>();

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 32 * 1024 * 1024 });

wss.on('connection', (ws) => {
  send(ws, JSON.stringify({ type: 'workerregistered', worker_id: randomUUID() }));
  ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    const text = data.toString();
    let m: { type?: string; id?: string; function_id?: string; invocation_id?: string | null };
    try {
      m = JSON.parse(text);
    } catch {
      return;
    }
    switch (m.type) {
      case 'invokefunction': {
        const entry = m.function_id === undefined ? undefined : functions.get(m.function_id);
        const target = entry ? entry.sockets[entry.next++ % entry.sockets.length] : undefined;
        const id = m.invocation_id;
        if (!target) {
          // Only the caller's readiness probe can get here; answer it so it does not hang.
          if (id) send(ws, JSON.stringify({ type: 'invocationresult', invocation_id: id, error: { code: 'function_not_found', message: `Function ${m.function_id} not found` } }));
          return;
        }
        if (id) callers.set(id, ws);
        send(target, text);
        return;
      }
      case 'invocationresult': {
        const id = m.invocation_id;
        if (!id) return;
        const caller = callers.get(id);
        if (!caller) return;
        callers.delete(id);
        send(caller, text);
        return;
      }
      case 'registerfunction':
        if (m.id) {
          const entry = functions.get(m.id);
          if (entry) entry.sockets.push(ws);
          else functions.set(m.id, { sockets: [ws], next: 0 });
        }
        return;
      default:
        return;
    }
  });
  ws.on('error', () => {});
  ws.on('close', () => {
    for (const [id, entry] of functions) {
      entry.sockets = entry.sockets.filter((s) => s !== ws);
      if (entry.sockets.length === 0) functions.delete(id);
    }
  });
});

wss.on('listening', () => {
  const a = wss.address();
  if (a === null || typeof a === 'string') throw new Error(`unexpected address ${String(a)}`);
  process.stdout.write(`READY ws://127.0.0.1:${a.port}\n`);
});
// Exit through process.exit so that `node --cpu-prof` writes its profile.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
