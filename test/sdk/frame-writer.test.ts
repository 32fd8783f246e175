/**
 * sendCoalesced writes each text frame itself, as one Buffer (sdk/typescript/src/transport.ts):
 * unmasked from the server's end, masked with a fresh key from a client's. Real `ws` sockets on
 * loopback parse what it writes, so a wrong length, mask or header fails here: every size class of
 * the length field, every remainder of the 4-byte mask, multi-byte UTF-8, frames at once and in
 * one corked turn. A socket with compression negotiated goes through `ws.send`, in order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { WebSocketServer, WebSocket } from 'ws';
import { sendCoalesced } from 'svc-sdk/internal';

async function pair(perMessageDeflate = false): Promise<{ server: WebSocket; client: WebSocket; close: () => void }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: perMessageDeflate ? { threshold: 0 } : false });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const port = (wss.address() as { port: number }).port;
  const serverSide = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate });
  await new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('error', reject);
  });
  const server = await serverSide;
  return {
    server,
    client,
    close: () => {
      client.terminate();
      wss.close();
    },
  };
}

/** Texts of every length class and mask remainder, ASCII and multi-byte. */
function samples(): string[] {
  const out: string[] = [];
  for (const n of [0, 1, 2, 3, 4, 5, 6, 7, 124, 125, 126, 127, 128, 65_534, 65_535, 65_536, 65_537, 200_003]) out.push('x'.repeat(n));
  // Multi-byte: the frame's length is in bytes, not characters (é 2, ☃ 3, 😀 4 bytes: 9 a unit).
  for (const bytes of [9, 125, 126, 127, 65_535, 65_536, 90_001]) {
    const units = Math.floor(bytes / 9) - 1;
    out.push('x'.repeat(bytes - 9 * units) + 'é☃😀'.repeat(units));
  }
  out.push(JSON.stringify({ type: 'invocationresult', invocation_id: 'a', result: { s: 'naïve ☃', n: 1 } }));
  return out;
}

/** Send every text from `from` (some at once, some in one turn), and collect what `to` receives. */
async function roundTrip(from: WebSocket, to: WebSocket, texts: string[]): Promise<string[]> {
  const got: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    to.on('message', (d, isBinary) => {
      assert.equal(isBinary, false);
      got.push(d.toString());
      if (got.length === texts.length) resolve();
    });
    to.once('close', (code, reason) => reject(new Error(`closed ${code} ${reason.toString()}`)));
  });
  const half = Math.floor(texts.length / 2);
  for (let i = 0; i < half; i++) {
    sendCoalesced(from, texts[i]!);
    await new Promise((r) => setImmediate(r));
  }
  for (let i = half; i < texts.length; i++) sendCoalesced(from, texts[i]!);
  await done;
  return got;
}

test('frames the server end writes arrive whole and in order, every length class', async () => {
  const { server, client, close } = await pair();
  try {
    const texts = samples();
    assert.deepEqual(await roundTrip(server, client, texts), texts);
  } finally {
    close();
  }
});

test("frames a client writes are masked as ws requires (an unmasked one closes the connection) and arrive whole", async () => {
  const { server, client, close } = await pair();
  try {
    const texts = samples();
    assert.deepEqual(await roundTrip(client, server, texts), texts);
    // Two frames of the same text differ on the wire: each has a key of its own.
    const seen: Buffer[] = [];
    const sock = (client as unknown as { _socket: { write(b: Buffer): boolean } })._socket;
    const write = sock.write.bind(sock);
    sock.write = (b: Buffer) => (seen.push(Buffer.from(b)), write(b));
    await roundTrip(client, server, ['same text', 'same text']);
    assert.equal(seen.length, 2);
    assert.notDeepEqual(seen[0], seen[1]);
  } finally {
    close();
  }
});

test('a lone surrogate is sent as U+FFFD, as ws.send does, and the frame stays valid UTF-8', async () => {
  const { server, client, close } = await pair();
  try {
    assert.deepEqual(await roundTrip(server, client, ['a\ud83db']), ['a\ufffdb']);
    assert.deepEqual(await roundTrip(client, server, ['\udc00']), ['\ufffd']);
  } finally {
    close();
  }
});

test('a frame is one write of one Buffer (ws.send makes two)', async () => {
  const { server, client, close } = await pair();
  try {
    const writes: unknown[] = [];
    const sock = (server as unknown as { _socket: { write(b: unknown): boolean } })._socket;
    const write = sock.write.bind(sock);
    sock.write = (b: unknown) => (writes.push(b), write(b));
    await roundTrip(server, client, ['one', 'two ☃']);
    assert.equal(writes.length, 2);
    assert.ok(writes.every((w) => Buffer.isBuffer(w)));
  } finally {
    close();
  }
});

test('with compression negotiated, frames go through ws.send and keep their order', async () => {
  const { server, client, close } = await pair(true);
  try {
    const texts = ['a'.repeat(100_000), 'short', 'b'.repeat(50_000), 'last'];
    assert.deepEqual(await roundTrip(server, client, texts), texts);
    assert.deepEqual(await roundTrip(client, server, texts), texts);
  } finally {
    close();
  }
});

test('a 16 MiB frame arrives whole both ways (8-byte length, masked from the client)', async () => {
  const { server, client, close } = await pair();
  try {
    const big = '☃'.repeat(16 * 1024 * 1024 / 3 + 1) + 'é';
    assert.equal((await roundTrip(server, client, [big]))[0] === big, true);
    assert.equal((await roundTrip(client, server, [big]))[0] === big, true);
  } finally {
    close();
  }
});

test("what is written directly counts in ws's bufferedAmount (the engine's slow-consumer check reads it)", async () => {
  const { server, close } = await pair();
  try {
    // The turn's second frame goes into the corked socket (under FLUSH_BYTES: not flushed part-way):
    // it must show until the turn ends.
    sendCoalesced(server, 'first');
    sendCoalesced(server, 'y'.repeat(10_000));
    assert.ok(server.bufferedAmount >= 10_000, `bufferedAmount ${server.bufferedAmount}`);
  } finally {
    close();
  }
});

test('frames sent before close() arrive before its close frame; one sent after close() is not written', async () => {
  const { server, client, close } = await pair();
  try {
    const writes: Buffer[] = [];
    const sock = (server as unknown as { _socket: { write(b: Buffer, ...rest: unknown[]): boolean } })._socket;
    const write = sock.write.bind(sock);
    sock.write = (b: Buffer, ...rest: unknown[]) => (writes.push(Buffer.from(b)), write(b, ...rest));
    const got: string[] = [];
    client.on('message', (d) => got.push(d.toString()));
    const closed = new Promise<number>((resolve) => client.once('close', (code) => resolve(code)));
    sendCoalesced(server, 'a');
    sendCoalesced(server, 'b'); // corked with the close frame that follows
    server.close(4001);
    sendCoalesced(server, 'after close');
    assert.equal(await closed, 4001);
    assert.deepEqual(got, ['a', 'b']);
    // On the wire (the server's frames are unmasked, all short): a, b, then the close frame, last.
    const wire = Buffer.concat(writes);
    const opcodes: number[] = [];
    for (let at = 0; at < wire.length; at += 2 + (wire[at + 1]! & 0x7f)) opcodes.push(wire[at]! & 0x0f);
    assert.deepEqual(opcodes, [1, 1, 8]);
  } finally {
    close();
  }
});

test("a client not yet connected (ws's _socket is null) fails as ws.send does, and leaves no state behind", async () => {
  const { client, close } = await pair();
  const early = new WebSocket(client.url);
  early.on('error', () => {});
  try {
    // Once as the callback's first frame, once after one: both paths must see that no socket is there.
    assert.throws(() => sendCoalesced(early, 'x'), /readyState 0 \(CONNECTING\)/);
    sendCoalesced(client, 'first');
    assert.throws(() => sendCoalesced(early, 'x'), /readyState 0 \(CONNECTING\)/);
  } finally {
    early.terminate();
    close();
  }
});

test("a client's frames at one call in flight run optimised: textFrame does not deoptimise on every frame", () => {
  // Priming once masked a 64 KiB frame, which compiled textFrame on stack (OSR) in its masking loop;
  // every later frame's loop entered that code and deoptimised (2,448 times in 3,000 frames), which
  // cost a client ~5 µs a frame at one call in flight (bench/RESULTS.md, thirteenth session).
  // Compiling on the main thread makes when code is ready, and so the outcome, the same every run.
  const program = `
    import { WebSocketServer, WebSocket } from 'ws';
    import { sendCoalesced } from 'svc-sdk/internal';
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.on('listening', r));
    let got = 0;
    wss.on('connection', (s) => s.on('message', () => got++));
    const c = new WebSocket('ws://127.0.0.1:' + wss.address().port);
    await new Promise((r) => c.on('open', r));
    const text = JSON.stringify({ type: 'invokefunction', function_id: 'bench::add2', invocation_id: 'e1f2a3b4-5678-4abc-8def-000000001234', data: { a: 1, b: 1 } });
    for (let i = 0; i < 3000; i++) { sendCoalesced(c, text); await new Promise((r) => setImmediate(r)); }
    while (got < 3000) await new Promise((r) => setTimeout(r, 5));
    process.stdout.write('sent ' + got + '\\n');
    process.exit(0);`;
  const out = execFileSync(process.execPath, ['--trace-deopt', '--no-concurrent-osr', '--no-concurrent-recompilation', '--input-type=module', '-e', program], { cwd: join(import.meta.dirname, '../../..'), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.match(out, /sent 3000/);
  const deopts = out.split('\n').filter((l) => /deoptimizing .*<JSFunction (textFrame|maskInPlace|sendText|sendCoalesced) /.test(l)).length;
  assert.ok(deopts <= 3, `the frame writer deoptimised ${deopts} times in 3,000 frames`);
});
