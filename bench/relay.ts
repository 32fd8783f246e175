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
 * `plain` writes every frame with its own `ws.send` (one syscall each); `coalescing` uses the SDK's
 * `sendCoalesced`, the mechanism the engine itself uses, so frames of one event-loop turn share a write.
 */
import { randomUUID } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import { sendCoalesced } from 'svc-sdk/internal';

const mode = process.argv[2];
if (mode !== 'plain' && mode !== 'coalescing') {
  process.stderr.write('usage: relay.js plain|coalescing\n');
  process.exit(2);
}
const send: (ws: WebSocket, text: string) => void = mode === 'plain' ? (ws, text) => ws.send(text) : sendCoalesced;

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
