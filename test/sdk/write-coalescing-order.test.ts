/**
 * sendCoalesced (sdk/typescript/src/transport.ts) loses and reorders nothing, however a program's
 * sends fall among callbacks: a child process writes numbered frames to three real sockets from
 * nested nextTicks, promise jobs, queueMicrotask, await chains, immediates, timers and the handlers of
 * frames the peer sends back, in bursts past FLUSH_FRAMES and frames past FLUSH_BYTES, mixed with
 * plain `ws.send` and pings, one socket compressed (its frames queued in ws's sender while others are
 * corked), and closes one socket part-way (with frames corked). The peer checks
 * that each socket's frames arrive complete and in the order sent. The schedule is pseudo-random
 * from a fixed seed, so a failure repeats.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { FLUSH_BYTES } from 'svc-sdk/internal';

const ROOT = join(import.meta.dirname, '../../..');
const SOCKETS = 3;
/** The socket closed part-way, once half the budget is sent. */
const CLOSED = 2;
/** The socket with permessage-deflate: its frames go through `ws.send`, compressed on the thread pool, queued in ws's sender. */
const DEFLATED = 1;

function program(url: string, seed: number, budget: number): string {
  return `
    import WebSocket from 'ws';
    import { sendCoalesced } from 'svc-sdk/internal';
    let state = ${seed};
    const rnd = (n) => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return Math.floor((state / 2147483648) * n);
    };
    const sockets = [];
    const sent = new Array(${SOCKETS}).fill(0);
    let total = 0;
    const big = 'x'.repeat(${FLUSH_BYTES} + 100);
    const send = (k) => {
      const ws = sockets[k];
      if (ws.readyState !== 1) return;
      const text = String(sent[k]++) + (rnd(40) === 0 ? ':' + big : '');
      total++;
      const how = rnd(20);
      if (how === 0) ws.send(text);
      else if (how === 1) {
        ws.ping();
        sendCoalesced(ws, text);
      } else sendCoalesced(ws, text);
    };
    const later = [
      (f) => process.nextTick(f),
      (f) => queueMicrotask(f),
      (f) => Promise.resolve().then(f),
      (f) => setImmediate(f),
      (f) => setTimeout(f, rnd(3)),
      async (f) => {
        await null;
        await new Promise((r) => process.nextTick(r));
        f();
      },
    ];
    const step = (depth) => {
      if (total >= ${budget}) return;
      if (total >= ${budget / 2} && sockets[${CLOSED}].readyState === 1) {
        sockets[${CLOSED}].close(1000, String(sent[${CLOSED}]));
      }
      const n = rnd(6) === 0 ? 20 + rnd(20) : rnd(4);
      for (let i = 0; i < n; i++) send(rnd(${SOCKETS}));
      if (depth < 4) for (let j = rnd(3); j > 0; j--) later[rnd(later.length)](() => step(depth + 1));
    };
    let open = 0;
    let byes = 0;
    for (let k = 0; k < ${SOCKETS}; k++) {
      const ws = new WebSocket(${JSON.stringify(url)} + '?k=' + k, { perMessageDeflate: k === ${DEFLATED} });
      sockets.push(ws);
      // The peer sends a frame back now and then: the sends of a read's handler. "bye" answers
      // "end", the last frame, once the peer has it (the compressed socket's queue drains last).
      ws.on('message', (d) => {
        if (String(d) !== 'bye') step(2);
        else if (++byes === ${SOCKETS - 1}) process.exit(0);
      });
      ws.on('open', () => {
        if (++open < ${SOCKETS}) return;
        const run = () => {
          if (total >= ${budget}) {
            setTimeout(() => {
              for (let k = 0; k < ${SOCKETS}; k++) if (k !== ${CLOSED}) sendCoalesced(sockets[k], 'end:' + sent[k]);
              setTimeout(() => process.exit(1), 10_000);
            }, 100);
            return;
          }
          step(0);
          setTimeout(run, rnd(2));
        };
        run();
      });
    }`;
}

async function exchange(seed: number, budget: number): Promise<void> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: { threshold: 0 } });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const port = (wss.address() as { port: number }).port;
  const got: string[][] = Array.from({ length: SOCKETS }, () => []);
  const ends: Array<number | undefined> = new Array(SOCKETS).fill(undefined);
  const closeReasons: string[] = [];
  wss.on('connection', (ws: WebSocket, req) => {
    const k = Number(new URL(req.url!, 'http://x').searchParams.get('k'));
    assert.equal(ws.extensions.includes('permessage-deflate'), k === DEFLATED);
    let n = 0;
    ws.on('message', (d) => {
      const text = d.toString();
      if (text.startsWith('end:')) {
        ends[k] = Number(text.slice(4));
        ws.send('bye');
      } else got[k]!.push(text.split(':')[0]!);
      if (++n % 7 === 0 && ws.readyState === 1) ws.send('again');
    });
    ws.on('close', (_code, reason) => {
      if (k === CLOSED) closeReasons.push(reason.toString());
    });
  });
  const child = spawn(process.execPath, ['--input-type=module', '-e', program(`ws://127.0.0.1:${port}`, seed, budget)], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise((r) => child.once('exit', r));
  await new Promise((r) => setTimeout(r, 100));
  wss.close();
  assert.equal(code, 0);
  for (let k = 0; k < SOCKETS; k++) {
    const expected = k === CLOSED ? Number(closeReasons[0]) : ends[k];
    assert.ok(expected !== undefined && expected > 0, `socket ${k}: no count of frames sent (seed ${seed})`);
    const wrong = got[k]!.findIndex((text, i) => text !== String(i));
    const at = wrong === -1 ? '' : `, frame ${wrong} is ${got[k]![wrong]} (then ${got[k]!.slice(wrong + 1, wrong + 4).join(', ')})`;
    assert.ok(wrong === -1 && got[k]!.length === expected, `socket ${k} (seed ${seed}): ${got[k]!.length} frames of ${expected}${at}`);
  }
}

test('frames sent from every kind of callback reach each socket complete and in order', async () => {
  for (const seed of [1, 2, 3]) await exchange(seed, 4000);
});
