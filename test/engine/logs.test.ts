import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InvocationError, Logger, SvcError, type Worker } from 'svc-sdk';
import { LogRing } from '../../src/engine/hot/log-ring.js';
import type { ListedLogEntry, LogEntry } from '../../src/engine/logs.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, WorkerPool } from '../helpers/util.js';

describe('LogRing', () => {
  const worker = (b: LogRing, message: string, extra: Partial<LogEntry> = {}): number =>
    b.add({ level: 'info', message, source: 'worker', worker_id: 'w-1', worker_name: 'alpha', ...extra });

  test('keeps the newest `capacity` lines, oldest first, numbered from 1', () => {
    const b = new LogRing(3);
    for (let i = 1; i <= 7; i++) assert.equal(worker(b, `line ${i}`), i);
    const all = b.list();
    assert.deepEqual(
      all.map((e) => [e.seq, e.message]),
      [
        [5, 'line 5'],
        [6, 'line 6'],
        [7, 'line 7'],
      ],
    );
    assert.equal(b.lastSeq, 7);
    assert.match(all[0]!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('filters: since_seq, level (a minimum), worker (name or id), text, and the newest `limit`', () => {
    const b = new LogRing(100);
    worker(b, 'a debug', { level: 'debug' });
    worker(b, 'b warn', { level: 'warn', worker_name: 'beta', worker_id: 'w-2' });
    b.add({ level: 'error', message: 'c engine', source: 'engine' });
    worker(b, 'd info');
    const msgs = (q: Parameters<LogRing['list']>[0]): string[] => b.list(q).map((e) => e.message);
    assert.deepEqual(msgs({ since_seq: 2 }), ['c engine', 'd info']);
    assert.deepEqual(msgs({ since_seq: 4 }), []);
    assert.deepEqual(msgs({ level: 'warn' }), ['b warn', 'c engine']);
    assert.deepEqual(msgs({ worker: 'beta' }), ['b warn']);
    assert.deepEqual(msgs({ worker: 'w-1' }), ['a debug', 'd info']);
    assert.deepEqual(msgs({ text: 'engine' }), ['c engine']);
    assert.deepEqual(msgs({ limit: 2 }), ['c engine', 'd info']);
    assert.deepEqual(msgs({ limit: 0 }), []);
    assert.deepEqual(msgs({ level: 'info', limit: 1, since_seq: 1 }), ['d info']);
  });

  test('listed entries have every field, null where the line has none; engine lines have source "engine"', () => {
    const b = new LogRing(10);
    const data = { n: 1 };
    worker(b, 'full', { function_id: 'f::g', invocation_id: 'inv-1', trace_id: 'a'.repeat(32), data });
    b.add({ level: 'warn', message: 'engine event', source: 'engine' });
    const [full, engine] = b.list();
    assert.deepEqual(
      { ...full, time: undefined },
      { seq: 1, time: undefined, level: 'info', message: 'full', source: 'worker', worker_id: 'w-1', worker_name: 'alpha', function_id: 'f::g', invocation_id: 'inv-1', trace_id: 'a'.repeat(32), data },
    );
    assert.deepEqual(
      { ...engine, time: undefined },
      { seq: 2, time: undefined, level: 'warn', message: 'engine event', source: 'engine', worker_id: null, worker_name: null, function_id: null, invocation_id: null, trace_id: null, data: null },
    );
    assert.deepEqual(Object.keys(engine!), Object.keys(full!), 'one shape, in one order');
  });

  test('subscribers get every line as it is added, until they unsubscribe', () => {
    const b = new LogRing(2);
    const seen: LogEntry[] = [];
    const off = b.subscribe((e) => seen.push(e));
    for (let i = 1; i <= 5; i++) worker(b, `line ${i}`);
    off();
    worker(b, 'unseen');
    assert.deepEqual(
      seen.map((e) => [e.seq, e.message]),
      [1, 2, 3, 4, 5].map((i) => [i, `line ${i}`]),
    );
  });
});

describe('engine::log::batch and the SDK Logger', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  const pool = new WorkerPool(() => eng.url);
  let client: Worker;
  /** Lines per engine::log::batch call received. */
  const batches: number[] = [];

  before(async () => {
    eng = await startEngine();
    const entry = eng.engine.registry.get('engine::log::batch')!;
    const inner = entry.builtin!;
    entry.builtin = (data, caller, frameChars) => {
      batches.push((data as { lines: unknown[] }).lines.length);
      return inner(data, caller, frameChars);
    };
    client = pool.make('log-client', { role: 'client' });
    await client.ready();
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  const list = async (payload: Record<string, unknown>): Promise<ListedLogEntry[]> =>
    ((await client.trigger({ function_id: 'engine::logs::list', payload })) as { logs: ListedLogEntry[] }).logs;

  test('the lines of one event-loop turn go in one call, in order, with their invocation', async () => {
    const w = pool.make('batch-worker');
    const logger = new Logger(w, { echo: false });
    w.registerFunction('logs::burst', (d: { n: number }) => {
      for (let i = 0; i < d.n; i++) logger.info(`burst ${i}`, { i });
      return d.n;
    });
    await w.ready();
    await eventually(async () => assert.equal(await client.trigger({ function_id: 'logs::burst', payload: { n: 50 } }), 50));
    await eventually(async () => assert.equal((await list({ text: 'burst ' })).length, 50));
    const lines = await list({ text: 'burst ', worker: 'batch-worker' });
    assert.deepEqual(
      lines.map((l) => [l.message, l.data]),
      Array.from({ length: 50 }, (_, i) => [`burst ${i}`, { i }]),
    );
    assert.equal(new Set(lines.map((l) => l.invocation_id)).size, 1);
    assert.ok(lines.every((l) => l.function_id === 'logs::burst' && l.worker_name === 'batch-worker' && l.level === 'info' && /^[0-9a-f]{32}$/.test(l.trace_id ?? '')));
    assert.ok(batches.includes(50), `batch sizes ${batches.join(',')}`);
  });

  test('data JSON cannot encode is made encodable; the other lines of the batch are kept', async () => {
    const w = pool.make('odd-data-worker');
    await w.ready();
    const logger = new Logger(w, { echo: false });
    const cycle: Record<string, unknown> = { name: 'cycle' };
    cycle.self = cycle;
    logger.info('odd before', { ok: 1 });
    logger.warn('odd bigint', { n: 10n });
    logger.warn('odd cycle', cycle);
    logger.info('odd after');
    await eventually(async () => assert.equal((await list({ text: 'odd ' })).length, 4));
    const [before, big, cyc, afterLine] = await list({ text: 'odd ' });
    assert.deepEqual(before!.data, { ok: 1 });
    assert.deepEqual(big!.data, { n: '10' });
    assert.deepEqual(cyc!.data, { name: 'cycle', self: '[Circular]' });
    assert.equal(afterLine!.data, null);
    assert.equal(afterLine!.function_id, null);
  });

  test('a batch over the frame limit is sent in parts', async () => {
    const w = pool.make('big-batch-worker', { maxFrameBytes: 4096 });
    await w.ready();
    const logger = new Logger(w, { echo: false });
    for (let i = 0; i < 40; i++) logger.info(`big ${i}`, { pad: 'x'.repeat(200) });
    await eventually(async () => assert.equal((await list({ text: 'big ' })).length, 40));
    assert.deepEqual(
      (await list({ text: 'big ' })).map((l) => l.message),
      Array.from({ length: 40 }, (_, i) => `big ${i}`),
    );
  });

  test('rows and objects, and the single-line calls, from any client', async () => {
    const raw = await RawClient.connect(eng.url);
    try {
      raw.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'raw-logger' }, action: { type: 'void' } });
      raw.send({
        type: 'invokefunction',
        function_id: 'engine::log::batch',
        action: { type: 'void' },
        data: {
          lines: [
            ['warn', 'raw row', { a: 1 }, 'raw::fn', 'inv-1', 'b'.repeat(32)],
            ['error', 'raw short row'],
            ['nonsense-level', 'raw defaulted', null, '', null, '00-' + 'c'.repeat(32) + '-' + 'd'.repeat(16) + '-01'],
            { level: 'debug', message: 'raw object', data: [1], function_id: 'raw::obj', invocation_id: 'inv-2', traceparent: '00-' + 'e'.repeat(32) + '-' + 'f'.repeat(16) + '-01' },
          ],
        },
      });
      raw.send({ type: 'invokefunction', function_id: 'engine::log::error', action: { type: 'void' }, data: { message: 'raw single', data: { s: true } } });
      await eventually(async () => assert.equal((await list({ text: 'raw ' })).length, 5));
      const got = (await list({ text: 'raw ' })).map(({ seq: _s, time: _t, worker_id: id, ...rest }) => {
        assert.equal(id, raw.registered.worker_id);
        return rest;
      });
      assert.deepEqual(got, [
        { level: 'warn', message: 'raw row', source: 'worker', worker_name: 'raw-logger', function_id: 'raw::fn', invocation_id: 'inv-1', trace_id: 'b'.repeat(32), data: { a: 1 } },
        { level: 'error', message: 'raw short row', source: 'worker', worker_name: 'raw-logger', function_id: null, invocation_id: null, trace_id: null, data: null },
        { level: 'info', message: 'raw defaulted', source: 'worker', worker_name: 'raw-logger', function_id: null, invocation_id: null, trace_id: 'c'.repeat(32), data: null },
        { level: 'debug', message: 'raw object', source: 'worker', worker_name: 'raw-logger', function_id: 'raw::obj', invocation_id: 'inv-2', trace_id: 'e'.repeat(32), data: [1] },
        { level: 'error', message: 'raw single', source: 'worker', worker_name: 'raw-logger', function_id: null, invocation_id: null, trace_id: null, data: { s: true } },
      ]);
    } finally {
      raw.ws.close();
    }
  });

  test("a callee's error: a deliberate SvcError travels and is logged at WARN without a stack, anything else at ERROR with it", async () => {
    // Before: the SDK sent every thrown error's stack (svc-state's refusals carried its file paths
    // to the caller) and the engine logged each as ERROR, so `schedule_not_found` filled svc logs.
    const w = pool.make('failing-worker');
    w.registerFunction('fails::on_purpose', () => {
      throw new SvcError('order_not_found', 'no order 7');
    });
    w.registerFunction('fails::by_accident', () => {
      // A code of its own (as Node's ENOENT has) does not make it deliberate: only an SvcError is.
      throw Object.assign(new Error('cannot open orders.db'), { code: 'ENOENT' });
    });
    w.registerFunction('fails::passes_on', (d: { to: string }) => w.trigger({ function_id: d.to, payload: {} }));
    await w.ready();
    const failure = async (fn: string, payload: unknown = {}): Promise<InvocationError> => {
      const e = await client.trigger({ function_id: fn, payload }).then(
        () => assert.fail(`${fn} succeeded`),
        (err: unknown) => err,
      );
      assert.ok(e instanceof InvocationError, String(e));
      return e;
    };
    const deliberate = await failure('fails::on_purpose');
    assert.deepEqual([deliberate.code, deliberate.message, deliberate.stacktrace], ['order_not_found', 'no order 7', undefined]);
    const accident = await failure('fails::by_accident');
    assert.equal(accident.code, 'ENOENT');
    assert.match(accident.stacktrace ?? '', /^Error: cannot open orders\.db\n +at /);
    // Passed on by another handler: the deliberate one stays without a stack, the accident keeps its own.
    assert.equal((await failure('fails::passes_on', { to: 'fails::on_purpose' })).stacktrace, undefined);
    assert.match((await failure('fails::passes_on', { to: 'fails::by_accident' })).stacktrace ?? '', /^Error: cannot open orders\.db\n +at /);

    await eventually(async () => assert.equal((await list({ worker: 'failing-worker', text: ' failed: ' })).length, 6));
    const lines = (await list({ worker: 'failing-worker', text: ' failed: ' })).map((l) => [l.level, l.message, (l.data as { stacktrace?: string } | undefined)?.stacktrace?.split('\n')[0]]);
    assert.deepEqual(lines, [
      ['warn', 'fails::on_purpose failed: order_not_found: no order 7', undefined],
      ['error', 'fails::by_accident failed: ENOENT: cannot open orders.db', 'Error: cannot open orders.db'],
      ['warn', 'fails::on_purpose failed: order_not_found: no order 7', undefined],
      ['warn', 'fails::passes_on failed: order_not_found: no order 7', undefined],
      ['error', 'fails::by_accident failed: ENOENT: cannot open orders.db', 'Error: cannot open orders.db'],
      ['error', 'fails::passes_on failed: ENOENT: cannot open orders.db', 'Error: cannot open orders.db'],
    ]);
  });

  test("the engine's own lines have the shape of workers' lines: every field, null where it has none", async () => {
    const w = pool.make('shape-worker');
    await w.ready();
    // `worker shape-worker registered (…)` is the engine's; the Logger's line outside a call is the worker's.
    new Logger(w, { echo: false }).info('shape outside a call');
    await eventually(async () => assert.equal((await list({ text: 'shape' })).length, 2));
    const [engineLine, workerLine] = await list({ text: 'shape' });
    assert.equal(engineLine!.source, 'engine');
    assert.match(engineLine!.message, /^worker shape-worker registered/);
    assert.equal(workerLine!.source, 'worker');
    assert.deepEqual(Object.keys(engineLine!), ['seq', 'time', 'level', 'message', 'source', 'worker_id', 'worker_name', 'function_id', 'invocation_id', 'trace_id', 'data']);
    assert.deepEqual(Object.keys(workerLine!), Object.keys(engineLine!));
    assert.deepEqual([engineLine!.worker_id, engineLine!.worker_name, engineLine!.function_id, engineLine!.invocation_id, engineLine!.trace_id], [null, null, null, null, null]);
    assert.deepEqual([workerLine!.worker_name, workerLine!.function_id, workerLine!.invocation_id, workerLine!.trace_id, workerLine!.data], ['shape-worker', null, null, null, null]);
  });

  test('a batch without a "lines" array is refused', async () => {
    await assert.rejects(client.trigger({ function_id: 'engine::log::batch', payload: { lines: 'no' } }), /"lines" must be an array/);
  });
});
