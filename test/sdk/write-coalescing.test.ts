/**
 * sendCoalesced (sdk/typescript/src/transport.ts), between real sockets: the first frame of a
 * callback leaves at once, the rest of the turn shares writes, and a long turn is flushed part-way
 * (every FLUSH_FRAMES frames), so the peer gets the start of a large batch while the sender still
 * works. The sender is a child process that blocks its own event loop after sending, as a busy
 * engine does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { FLUSH_FRAMES } from 'svc-sdk/internal';

const ROOT = join(import.meta.dirname, '../../..');

/**
 * The child runs `onOpen` (JavaScript with `ws`, `sendCoalesced` and `block()` in scope) once
 * connected; `block()` blocks its loop for `blockMs`. "end" is sent after the program.
 */
function sender(url: string, onOpen: string, blockMs: number): ReturnType<typeof spawn> {
  const program = `
    import WebSocket from 'ws';
    import { sendCoalesced } from 'svc-sdk/internal';
    const ws = new WebSocket(${JSON.stringify(url)});
    const block = () => {
      const until = Date.now() + ${blockMs};
      while (Date.now() < until) {}
    };
    const end = () => {
      sendCoalesced(ws, 'end');
      setTimeout(() => ws.close(), 50);
    };
    ws.on('open', async () => {
      ${onOpen}
    });`;
  return spawn(process.execPath, ['--input-type=module', '-e', program], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
}

/** The child sends `frames` frames in one callback, blocks its loop, then sends "end". */
function oneCallback(frames: number, size = 10): string {
  return `for (let i = 0; i < ${frames}; i++) sendCoalesced(ws, String(i).padEnd(${size}, '.'));
      block();
      end();`;
}

/** How many of the child's frames (not "end") arrived well before its loop was free again, of how many. */
async function arrivals(onOpen: string, blockMs: number): Promise<{ before: number; total: number; seen: string }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const port = (wss.address() as { port: number }).port;
  const got: Array<{ text: string; at: number }> = [];
  // "end", or the connection's close should "end" never come (a test of frames that get stuck).
  const done = new Promise<void>((resolve) =>
    wss.on('connection', (ws: WebSocket) => {
      ws.on('message', (d) => {
        got.push({ text: d.toString(), at: performance.now() });
        if (d.toString() === 'end') resolve();
      });
      ws.on('close', () => resolve());
    }),
  );
  const child = sender(`ws://127.0.0.1:${port}`, onOpen, blockMs);
  await done;
  await new Promise((r) => child.once('exit', r));
  wss.close();
  const end = got.find((g) => g.text === 'end')?.at ?? Infinity;
  const frames = got.filter((g) => g.text !== 'end');
  // Frames that arrived well before the child's loop was free again.
  return { before: frames.filter((g) => g.at < end - blockMs / 2).length, total: frames.length, seen: got.map((g) => `${g.text}@${(g.at - got[0]!.at).toFixed(0)}`).join(' ') };
}

test('a long turn is flushed every FLUSH_FRAMES frames: the peer gets them while the sender still works', async () => {
  const { before, total } = await arrivals(oneCallback(4 * FLUSH_FRAMES + 5), 600);
  assert.equal(total, 4 * FLUSH_FRAMES + 5);
  // The first frame at once, then four flushes of FLUSH_FRAMES; the last 4 wait for the turn's end.
  assert.equal(before, 1 + 4 * FLUSH_FRAMES);
});

test('a short turn shares one write after its first frame: the rest arrive when the turn ends', async () => {
  const { before, total } = await arrivals(oneCallback(FLUSH_FRAMES - 2), 600);
  assert.equal(total, FLUSH_FRAMES - 2);
  assert.equal(before, 1);
});

test('large frames are flushed by bytes, before FLUSH_FRAMES of them', async () => {
  const { before, total } = await arrivals(oneCallback(6, 20 * 1024), 600);
  assert.equal(total, 6);
  assert.equal(before, 6);
});

// Two immediates set together run in one turn (Node's check phase), each a callback of its own;
// an immediate set while they run (sendCoalesced's end of the turn) runs in the next.
test("a frame to a socket written to earlier in the turn, from another callback, waits for the turn's end (many reads' frames to one socket share a write)", async () => {
  const { before, total, seen } = await arrivals(
    `setImmediate(() => sendCoalesced(ws, 'a1'));
      setImmediate(() => {
        sendCoalesced(ws, 'b1');
        block();
        end();
      });`,
    600,
  );
  assert.equal(total, 2);
  assert.equal(before, 1, seen);
});

test('a frame after the event loop waited leaves at once, and one frame a turn schedules no immediate', async () => {
  // The child writes one frame per turn, the loop waiting for a timer in between (one call in
  // flight), and counts the immediates created meanwhile (async_hooks sees Node's own setImmediate).
  const { before, total, seen } = await arrivals(
    `const { createHook } = await import('node:async_hooks');
      let immediates = 0;
      const hook = createHook({ init: (_id, type) => { if (type === 'Immediate') immediates++; } }).enable();
      for (let i = 0; i < 20; i++) {
        sendCoalesced(ws, 'f' + i);
        await new Promise((r) => setTimeout(r, 2));
      }
      hook.disable();
      sendCoalesced(ws, 'immediates:' + immediates);
      await new Promise((r) => setTimeout(r, 2));
      block();
      end();`,
    600,
  );
  assert.equal(total, 21, seen);
  assert.ok(seen.includes('immediates:0@'), seen);
  // Every frame left at once, before the child blocked.
  assert.equal(before, 21, seen);
});

test('a socket corked in one callback takes the later callbacks\' frames into its write until the turn ends', async () => {
  const { before, total, seen } = await arrivals(
    `setImmediate(() => {
        sendCoalesced(ws, 'a1');
        sendCoalesced(ws, 'a2');
      });
      setImmediate(() => {
        sendCoalesced(ws, 'b1');
        block();
        end();
      });`,
    600,
  );
  assert.equal(total, 3);
  // a1 at once; a2 corked the socket, and b1 joined it: both wait for the turn's end.
  assert.equal(before, 1, seen);
});

// sinon's and vitest's fake timers replace setImmediate, jest's process.nextTick as well, and their
// clock runs only when the test ticks it. Here they are replaced once the module is loaded, as
// useFakeTimers() in a test does; the child exits after 1 s, should its frames be stuck.
test('under fake timers (setImmediate and process.nextTick replaced) every frame still leaves in its turn', async () => {
  const { before, total, seen } = await arrivals(
    `globalThis.setImmediate = () => {};
      process.nextTick = () => {};
      setTimeout(() => process.exit(0), 1000);
      sendCoalesced(ws, 'a1');
      sendCoalesced(ws, 'a2');
      setTimeout(() => {
        sendCoalesced(ws, 'b1');
        block();
        end();
      }, 50);`,
    600,
  );
  assert.equal(total, 3, seen);
  // a2 corked the socket, whose end of turn is Node's immediate, not the fake one; b1 leaves at once.
  assert.equal(before, 3, seen);
});

test("frames sent just before process.exit(), and in an 'exit' listener, all leave, in order", async () => {
  const { total, seen } = await arrivals(
    `process.on('exit', () => {
        sendCoalesced(ws, 'x1');
        sendCoalesced(ws, 'x2');
      });
      sendCoalesced(ws, 'a1');
      sendCoalesced(ws, 'a2');
      sendCoalesced(ws, 'a3');
      process.exit(0);`,
    0,
  );
  assert.equal(total, 5, seen);
  assert.deepEqual(seen.split(' ').map((s) => s.split('@')[0]), ['a1', 'a2', 'a3', 'x1', 'x2']);
  // Nothing corked before the exit: the listener's second frame is the process's first cork.
  const onlyInListener = await arrivals(
    `process.on('exit', () => {
        sendCoalesced(ws, 'x1');
        sendCoalesced(ws, 'x2');
        sendCoalesced(ws, 'x3');
      });
      process.exit(0);`,
    0,
  );
  assert.equal(onlyInListener.total, 3, onlyInListener.seen);
});

test('a frame that throws as it corks the socket (a text that is no string) leaves it to be uncorked: later frames still leave', async () => {
  const { before, total, seen } = await arrivals(
    `setTimeout(() => process.exit(0), 1000);
      sendCoalesced(ws, 'a1');
      try {
        sendCoalesced(ws, undefined);
      } catch {}
      sendCoalesced(ws, 'a2');
      setTimeout(() => {
        sendCoalesced(ws, 'b1');
        block();
        end();
      }, 50);`,
    600,
  );
  assert.equal(total, 3, seen);
  assert.equal(before, 3, seen);
});
