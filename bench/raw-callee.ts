/**
 * The callee a user would write without an SDK, for bench/run.ts's end-to-end relay targets: one
 * `ws` connection, one JSON message per call each way. It registers the given function ids and
 * answers every `invokefunction` ({a, b}) with an `invocationresult` ({c: a + b}).
 *
 *   node dist/bench/raw-callee.js <url> <function-id>...   → prints `READY` once a call of its own
 *                                                            first function went through the server
 *
 * It speaks the part of the protocol the relays (bench/relay.ts) route: `registerfunction`,
 * `invokefunction`, `invocationresult` (sdk/typescript/src/protocol/messages.ts).
 */
import WebSocket from 'ws';

const [url, ...functionIds] = process.argv.slice(2);
if (!url || functionIds.length === 0) {
  process.stderr.write('usage: raw-callee.js <ws-url> <function-id>...\n');
  process.exit(2);
}

interface Frame {
  type?: string;
  invocation_id?: string;
  function_id?: string;
  data?: { a: number; b: number };
  result?: { c: number };
}

const ws = new WebSocket(url, { perMessageDeflate: false });
// Unique per process: both replicas of a target start at once, and the relays route answers by id.
const probeId = `ready-probe-${process.pid}`;
let probe: ((r: Frame) => void) | undefined;
ws.on('message', (raw) => {
  const m = JSON.parse(raw.toString()) as Frame;
  if (m.type === 'invokefunction' && m.data) {
    ws.send(JSON.stringify({ type: 'invocationresult', invocation_id: m.invocation_id, function_id: m.function_id, result: { c: m.data.a + m.data.b } }));
  } else if (m.type === 'invocationresult' && m.invocation_id === probeId) probe?.(m);
});
await new Promise<void>((resolve, reject) => {
  ws.once('open', resolve);
  ws.once('error', reject);
});
for (const id of functionIds) ws.send(JSON.stringify({ type: 'registerfunction', id }));
// A call of its own function through the server proves the registration arrived.
const answer = await new Promise<Frame>((resolve, reject) => {
  probe = resolve;
  setTimeout(() => reject(new Error('raw-callee: no answer to its own call within 10 s')), 10_000).unref();
  ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: probeId, function_id: functionIds[0], data: { a: 1, b: 2 } }));
});
if (answer.result?.c !== 3) throw new Error(`raw-callee: ${functionIds[0]} returned ${JSON.stringify(answer)}`);
process.stdout.write('READY\n');
// Exit through process.exit so that `node --cpu-prof` writes its profile.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
