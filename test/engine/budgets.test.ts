/**
 * Memory bounded in bytes, not only counts (issue 17, item 6). Each test reproduces one way a peer
 * made the engine hold memory without limit, on loopback with raw `ws` clients: log lines and span
 * errors of megabytes, registrations and metadata of megabytes, a peer that stops reading, `/otel`
 * sockets outside every count, and calls whose payloads pile up in flight. Before the fix each of
 * them was stored or held whole.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import WebSocket from 'ws';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
type Marker = { svc_truncated: { what: string; size: number; limit: number; setting: string; head: string } };
const MiB = 1024 * 1024;

/** Stop reading from the socket, as a peer that hangs does: what the engine writes piles up. */
function stopReading(c: RawClient): void {
  (c.ws as unknown as { _socket: Socket })._socket.pause();
}

let seq = 0;
async function call(c: RawClient, function_id: string, data: unknown): Promise<{ result?: unknown; error?: { code: string; message: string } }> {
  const id = `c${++seq}`;
  c.send({ type: 'invokefunction', invocation_id: id, function_id, data });
  return (await c.next((f) => f.type === 'invocationresult' && f.invocation_id === id, 10_000)) as { result?: unknown; error?: { code: string; message: string } };
}

describe('stored values: a byte budget per value and per connection, cut with a marker', () => {
  let eng: Eng;
  let raw: RawClient;
  before(async () => {
    eng = await startEngine({ maxStoredBytesPerWorker: 512 * 1024 });
    raw = await RawClient.connect(eng.url);
  });
  after(async () => {
    raw.close();
    await eng.stop();
  });

  test('log lines: data and message over max_stored_value_bytes are kept as markers, single and batched', async () => {
    const big = { blob: 'd'.repeat(2 * MiB) };
    await call(raw, 'engine::log::info', { message: 'm'.repeat(200 * 1024), data: big });
    await call(raw, 'engine::log::batch', { lines: [['warn', 'row', big], { level: 'error', message: 'obj', data: big }] });
    const { logs } = (await call(raw, 'engine::logs::list', { worker: raw.registered.worker_id })).result as { logs: Array<{ message: string; data: Marker }> };
    assert.equal(logs.length, 3);
    for (const l of logs) {
      assert.deepEqual({ ...l.data.svc_truncated, head: l.data.svc_truncated.head.slice(0, 12) }, {
        what: 'data',
        size: JSON.stringify(big).length,
        limit: 65536,
        setting: 'engine.limits.max_stored_value_bytes',
        head: '{"blob":"ddd',
      });
    }
    assert.equal(logs[0]!.message.length < 70 * 1024, true);
    assert.match(logs[0]!.message, /… \[svc_truncated: message of 204800 characters, over engine\.limits\.max_stored_value_bytes = 65536\]$/);
  });

  test('registerfunction: description and formats over the budget are cut, and the engine log says so', async () => {
    raw.send({ type: 'registerfunction', id: 'big::fn', description: 'D'.repeat(5 * MiB), request_format: { x: 'r'.repeat(MiB) }, response_format: { ok: true } });
    let info = { description: '', request_format: {} as Marker, response_format: undefined as unknown };
    await eventually(async () => {
      const r = await call(raw, 'engine::functions::info', { function_id: 'big::fn' });
      assert.equal(r.error, undefined);
      info = r.result as typeof info;
    });
    assert.match(info.description, /^D{65536}… \[svc_truncated: description of 5242880 characters, over engine\.limits\.max_stored_value_bytes = 65536\]$/);
    assert.equal(info.request_format.svc_truncated.what, 'request_format');
    assert.equal(info.request_format.svc_truncated.size, JSON.stringify({ x: 'r'.repeat(MiB) }).length);
    assert.deepEqual(info.response_format, { ok: true });
    assert.ok(eng.engine.logs.list({ text: 'big::fn: description, request_format over the budget' }).length === 1);
  });

  test('one connection\'s registrations together stay within max_stored_bytes_per_worker; unregistering frees its share', async () => {
    const c = await RawClient.connect(eng.url);
    try {
      // Each under max_stored_value_bytes; 16 of them are more than the connection's 512 KiB.
      const desc = (i: number): string => `${i}`.padEnd(40 * 1024, '.');
      for (let i = 0; i < 16; i++) c.send({ type: 'registerfunction', id: `quota::f${i}`, description: desc(i) });
      const described = async (): Promise<boolean[]> => {
        const { functions } = (await call(c, 'engine::functions::list', { include_builtins: false })).result as { functions: Array<{ function_id: string; description: string }> };
        const mine = functions.filter((f) => f.function_id.startsWith('quota::'));
        for (const f of mine) {
          const i = Number(f.function_id.slice('quota::f'.length));
          if (f.description !== desc(i)) assert.match(f.description.slice(-140), /svc_truncated: description of 40960 characters: this worker's stored values reached engine\.limits\.max_stored_bytes_per_worker = 524288\]$/);
        }
        return mine.map((f) => f.description.length === 40 * 1024);
      };
      await eventually(async () => assert.equal((await described()).length, 16));
      const whole = await described();
      // Whole while the budget lasted (12 of them), markers after.
      assert.deepEqual(whole, [...Array(12).fill(true), ...Array(4).fill(false)]);
      c.send({ type: 'unregisterfunction', id: 'quota::f0' });
      c.send({ type: 'unregisterfunction', id: 'quota::f1' });
      c.send({ type: 'registerfunction', id: 'quota::f15', description: desc(15) });
      await eventually(async () => assert.equal((await described()).at(-1), true));
    } finally {
      c.close();
    }
  });

  test('worker metadata, merged over repeated engine::workers::register calls, stays bounded', async () => {
    const c = await RawClient.connect(eng.url);
    try {
      for (let i = 0; i < 4; i++) assert.equal((await call(c, 'engine::workers::register', { name: 'meta-grower', [`k${i}`]: 'v'.repeat(30 * 1024) })).error, undefined);
      const w = (await call(c, 'engine::workers::info', { worker_id: c.registered.worker_id })).result as { metadata: Marker };
      assert.equal(w.metadata.svc_truncated.what, 'metadata');
      assert.ok(w.metadata.svc_truncated.size > 64 * 1024);
    } finally {
      c.close();
    }
  });

  test('what is kept of a cut value does not keep the whole value alive', async () => {
    // V8 makes a slice of a long string a view that holds all of it: 64 KiB kept as a slice of a
    // 5 MiB description held the 5 MiB.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const c = await RawClient.connect(eng.url);
    try {
      const before = heap();
      for (let i = 0; i < 10; i++) {
        c.send(JSON.stringify({ type: 'registerfunction', id: `leak::f${i}`, description: `${i}`.repeat(5 * MiB) }));
        await call(c, 'engine::log::info', { message: `${i}`.repeat(5 * MiB), data: { code: 'x', s: `${i}`.repeat(5 * MiB) } });
      }
      await call(c, 'engine::functions::info', { function_id: 'leak::f9' });
      const grown = heap() - before;
      assert.ok(grown < 20 * MiB, `the heap grew by ${Math.round(grown / MiB)} MiB for 100 MiB of cut values`);
    } finally {
      c.close();
    }
  });

  test('a binding whose config is over the budget is refused, naming the limit', async () => {
    raw.send({ type: 'registertrigger', id: 'big-binding', trigger_type: 'http', function_id: 'big::fn', config: { api_path: '/x', pad: 'p'.repeat(MiB) } });
    const r = await raw.next((f) => f.type === 'triggerregistrationresult' && f.id === 'big-binding');
    assert.equal((r.error as { code: string }).code, 'payload_too_large');
    assert.match((r.error as { message: string }).message, /Trigger big-binding: its config of \d+ characters is over engine\.limits\.max_stored_value_bytes \(65536\)/);
  });
});

describe('the rings: log lines and span errors within a byte budget', () => {
  let eng: Eng;
  let raw: RawClient;
  before(async () => {
    eng = await startEngine({ maxLogBytes: MiB, maxTraceBytes: 256 * 1024 });
    raw = await RawClient.connect(eng.url);
  });
  after(async () => {
    raw.close();
    await eng.stop();
  });

  test('the log ring gives up its oldest lines beyond max_log_bytes, and a listing fits in a frame', async () => {
    for (let i = 0; i < 40; i++) await call(raw, 'engine::log::batch', { lines: [['info', `line ${i}`, 'x'.repeat(60 * 1024)]] });
    const { logs } = (await call(raw, 'engine::logs::list', { worker: raw.registered.worker_id })).result as { logs: Array<{ message: string }> };
    assert.ok(logs.length >= 10 && logs.length <= 17, `${logs.length} lines`);
    assert.equal(logs.at(-1)!.message, 'line 39');
    assert.ok(eng.engine.logs.heldBytes <= MiB, `${eng.engine.logs.heldBytes}`);
  });

  test('a span keeps its error code, message and stack trace, each cut; the ring stays within max_trace_bytes', async () => {
    const callee = await RawClient.connect(eng.url);
    try {
      callee.send({ type: 'registerfunction', id: 'err::big' });
      await sleep(50);
      const message = 'E'.repeat(4 * MiB);
      for (let i = 0; i < 8; i++) {
        const answered = call(raw, 'err::big', {});
        const inv = await callee.next((f) => f.type === 'invokefunction');
        callee.send({ type: 'invocationresult', invocation_id: inv.invocation_id, error: { code: 'big', message, stacktrace: 'S'.repeat(MiB) } });
        const r = await answered;
        assert.equal(r.error?.message.length, message.length, 'the caller still gets the whole error');
      }
      const { traces } = (await call(raw, 'engine::traces::list', { function_id: 'err::big' })).result as { traces: Array<{ trace_id: string }> };
      const t = (await call(raw, 'engine::traces::get', { trace_id: traces[0]!.trace_id })).result as { spans: Array<{ error: Record<string, string> }> };
      const err = t.spans[0]!.error;
      assert.deepEqual(Object.keys(err), ['code', 'message', 'stacktrace']);
      assert.match(err.message!.slice(65536), /^… \[svc_truncated: error message of 4194304 characters, over engine\.limits\.max_stored_value_bytes = 65536\]$/);
      assert.equal(err.stacktrace!.slice(0, 65536), 'S'.repeat(65536));
      assert.match(err.stacktrace!.slice(65536), /^… \[svc_truncated: error stacktrace of 1048576 characters, over engine\.limits\.max_stored_value_bytes = 65536\]$/);
      assert.ok(traces.length >= 1 && traces.length < 8, `${traces.length} traces kept`);
      assert.ok(eng.engine.traces!.heldBytes <= 256 * 1024, `${eng.engine.traces!.heldBytes}`);
    } finally {
      callee.close();
    }
  });
});

describe('slow consumers: a peer that stops reading is closed', () => {
  let eng: Eng;
  before(async () => {
    eng = await startEngine({ maxSendBufferBytes: MiB, slowConsumerMs: 300, pingIntervalMs: 60_000 });
  });
  after(() => eng.stop());

  test('a callee that stops reading: closed, with a log line, and its calls end with invocation_stopped', async () => {
    const callee = await RawClient.connect(eng.url);
    const caller = await RawClient.connect(eng.url);
    try {
      callee.send({ type: 'registerfunction', id: 'slow::sink' });
      await sleep(50);
      stopReading(callee);
      const payload = 'p'.repeat(256 * 1024);
      const t0 = Date.now();
      for (let i = 0; i < 120; i++) caller.send({ type: 'invokefunction', invocation_id: `s${i}`, function_id: 'slow::sink', data: { payload }, timeout_ms: 30_000 });
      const r = await caller.next((f) => f.type === 'invocationresult', 10_000);
      assert.equal((r.error as { code: string }).code, 'invocation_stopped');
      assert.ok(Date.now() - t0 < 10_000);
      const line = eng.engine.logs.list({ text: 'slow consumer', level: 'warn' });
      assert.equal(line.length, 1);
      assert.match(line[0]!.message, new RegExp(`closing anonymous-${callee.registered.worker_id.slice(0, 8)}: slow consumer: \\d+ bytes not read for \\d+ ms \\(engine\\.limits\\.max_send_buffer_bytes = 1048576, slow_consumer_ms = 300\\)`));
      await eventually(() => assert.equal(eng.engine.invocations.size, 0));
    } finally {
      callee.close();
      caller.close();
    }
  });

  test('a caller that stops reading its answers is closed too', async () => {
    const echo = await RawClient.connect(eng.url);
    const caller = await RawClient.connect(eng.url);
    try {
      echo.send({ type: 'registerfunction', id: 'slow::echo' });
      await sleep(50);
      const payload = 'q'.repeat(256 * 1024);
      // The callee answers every call with the payload back.
      echo.ws.on('message', (d) => {
        const f = JSON.parse(d.toString()) as { type: string; invocation_id: string };
        if (f.type === 'invokefunction') echo.send({ type: 'invocationresult', invocation_id: f.invocation_id, result: { payload } });
      });
      stopReading(caller);
      const before = eng.engine.connectionCount;
      for (let i = 0; i < 120; i++) caller.send({ type: 'invokefunction', invocation_id: `e${i}`, function_id: 'slow::echo', data: {}, timeout_ms: 30_000 });
      await eventually(() => assert.equal(eng.engine.connectionCount, before - 1), 10_000);
      assert.equal(eng.engine.logs.list({ text: `closing anonymous-${caller.registered.worker_id.slice(0, 8)}: slow consumer` }).length, 1);
    } finally {
      echo.close();
      caller.close();
    }
  });
});

describe('/otel sockets count as connections and are pinged', () => {
  test('counted against max_connections', async () => {
    const eng = await startEngine({ maxConnections: 2 });
    const otel: WebSocket[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const ws = new WebSocket(`${eng.url}/otel`);
        await new Promise((r, j) => ws.once('open', r).once('error', j));
        otel.push(ws);
      }
      await sleep(50);
      const refused = new WebSocket(eng.url);
      const first = await new Promise<string>((r) => refused.once('message', (d) => r(d.toString())));
      assert.match(first, /"code":"overloaded".*The engine has 2 connections \(engine\.limits\.max_connections\)/);
      otel[0]!.close();
      await eventually(() => assert.equal(eng.engine.connectionCount, 1));
      const ok = await RawClient.connect(eng.url);
      ok.close();
    } finally {
      for (const ws of otel) ws.terminate();
      await eng.stop();
    }
  });

  test('one that does not answer pings is dropped', async () => {
    const eng = await startEngine({ pingIntervalMs: 100 });
    const ws = new WebSocket(`${eng.url}/otel`);
    try {
      await new Promise((r, j) => ws.once('open', r).once('error', j));
      await eventually(() => assert.equal(eng.engine.connectionCount, 1));
      (ws as unknown as { _socket: Socket })._socket.pause();
      await eventually(() => assert.equal(eng.engine.connectionCount, 0), 3000);
    } finally {
      ws.terminate();
      await eng.stop();
    }
  });
});

describe('bytes in flight', () => {
  test('new calls are refused with overloaded while the calls in flight carry max_in_flight_bytes', async () => {
    const eng = await startEngine({ maxInFlightBytes: MiB });
    const callee = await RawClient.connect(eng.url);
    const caller = await RawClient.connect(eng.url);
    try {
      callee.send({ type: 'registerfunction', id: 'held::fn' });
      await sleep(50);
      const payload = 'h'.repeat(300 * 1024);
      for (let i = 0; i < 5; i++) caller.send({ type: 'invokefunction', invocation_id: `b${i}`, function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      const r = await caller.next((f) => f.type === 'invocationresult', 5000);
      assert.equal(r.invocation_id, 'b4');
      assert.equal((r.error as { code: string }).code, 'overloaded');
      assert.match((r.error as { message: string }).message, /The calls in flight carry \d+ bytes, the engine's limit \(engine\.limits\.max_in_flight_bytes = 1048576\); retry later/);
      assert.equal(eng.engine.invocations.size, 4);
      // One ends: room again.
      const inv = await callee.next((f) => f.type === 'invokefunction');
      callee.send({ type: 'invocationresult', invocation_id: inv.invocation_id, result: null });
      await caller.next((f) => f.type === 'invocationresult');
      caller.send({ type: 'invokefunction', invocation_id: 'b5', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      assert.equal(await caller.receives((f) => f.invocation_id === 'b5', 300), false, 'accepted: in flight, not refused');
    } finally {
      callee.close();
      caller.close();
      await eng.stop();
    }
  });

  test("one connection cannot take the engine's bytes in flight from the others (max_in_flight_bytes_per_worker)", async () => {
    const eng = await startEngine({ maxInFlightBytesPerWorker: MiB });
    const callee = await RawClient.connect(eng.url);
    const greedy = await RawClient.connect(eng.url);
    const other = await RawClient.connect(eng.url);
    try {
      callee.send({ type: 'registerfunction', id: 'held::fn' });
      await sleep(50);
      const payload = 'h'.repeat(300 * 1024);
      for (let i = 0; i < 5; i++) greedy.send({ type: 'invokefunction', invocation_id: `g${i}`, function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      const r = await greedy.next((f) => f.type === 'invocationresult', 5000);
      assert.equal(r.invocation_id, 'g4');
      assert.equal((r.error as { code: string }).code, 'overloaded');
      assert.match((r.error as { message: string }).message, /^The calls \S+ has in flight carry \d+ bytes \(engine\.limits\.max_in_flight_bytes_per_worker = 1048576\); retry later$/);
      // Another connection's call of the same size still starts.
      other.send({ type: 'invokefunction', invocation_id: 'o1', function_id: 'held::fn', data: { payload }, timeout_ms: 30_000 });
      assert.equal(await other.receives((f) => f.invocation_id === 'o1', 300), false, 'accepted: in flight, not refused');
      assert.equal(eng.engine.invocations.size, 5);
      // One of the greedy connection's calls ends: room for it again.
      const inv = await callee.next((f) => f.type === 'invokefunction');
      callee.send({ type: 'invocationresult', invocation_id: inv.invocation_id, result: null });
      await greedy.next((f) => f.type === 'invocationresult' && f.error === undefined);
      greedy.send({ type: 'invokefunction', invocation_id: 'g5', function_id: 'held::fn', data: {}, timeout_ms: 30_000 });
      assert.equal(await greedy.receives((f) => f.invocation_id === 'g5', 300), false, 'accepted again');
    } finally {
      callee.close();
      greedy.close();
      other.close();
      await eng.stop();
    }
  });
});

describe('frames peers have begun and not finished sending (max_partial_frame_bytes)', () => {
  test('over the budget, the connections with the largest unfinished messages are closed (1013, overloaded) until it holds; the others go on', async () => {
    // Fragments answer pings between them: before, each connection held its unfinished message
    // (up to four times max_frame_bytes) for as long as it liked, and nothing bounded the sum.
    const eng = await startEngine({ maxPartialFrameBytes: 10 * MiB });
    const canary = await RawClient.connect(eng.url);
    const senders: WebSocket[] = [];
    const frames: string[] = [];
    const closes: Array<Promise<[number, string]>> = [];
    try {
      const chunk = Buffer.alloc(MiB, 'a');
      // 3 and 3 MiB on workers' sockets, 5 on an iii SDK's /otel socket, 6 on a worker's: 17 MiB,
      // 7 over the budget. The 6 MiB one goes, then the 5 MiB one (6 left); the others stay.
      for (const [mib, path] of [[3, ''], [3, ''], [5, '/otel'], [6, '']] as const) {
        // An /otel socket gets no workerregistered frame: a bare socket.
        const ws = path === '' ? (await RawClient.connect(eng.url)).ws : new WebSocket(eng.url + path);
        if (ws.readyState !== WebSocket.OPEN) await new Promise((r) => ws.once('open', r));
        closes.push(new Promise((r) => ws.once('close', (code, why) => r([code, why.toString()]))));
        if (mib === 6) ws.on('message', (d) => frames.push(d.toString()));
        ws.send('{"type":"invokefunction","function_id":"x::y","data":"', { fin: false });
        for (let i = 0; i < mib; i++) await new Promise((r) => ws.send(chunk, { fin: false }, r));
        senders.push(ws);
      }
      const within5s = (p: Promise<[number, string]>) => Promise.race([p, sleep(5000).then((): [number, string] => [0, 'still open after 5 s'])]);
      for (const i of [3, 2]) assert.deepEqual(await within5s(closes[i]!), [1013, 'overloaded: engine.limits.max_partial_frame_bytes'], `sender ${i}`);
      const refusal = frames.map((f) => JSON.parse(f) as { type: string; error?: { message: string } }).find((f) => f.type === 'error');
      assert.match(refusal?.error?.message ?? '', /hold \d+ bytes \(engine\.limits\.max_partial_frame_bytes = 10485760\); this connection's unfinished message holds \d+: retry later$/);
      await sleep(600);
      assert.deepEqual(senders.slice(0, 2).map((ws) => ws.readyState), [WebSocket.OPEN, WebSocket.OPEN]);
      // Everyone else is served meanwhile.
      canary.send({ type: 'invokefunction', invocation_id: 'k1', function_id: 'engine::health::check', data: {} });
      assert.equal((await canary.next((f) => f.invocation_id === 'k1')).error, undefined);
    } finally {
      canary.close();
      for (const ws of senders) ws.terminate();
      await eng.stop();
    }
  });
});
