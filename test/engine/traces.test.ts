import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Logger, type Worker } from 'svc-sdk';
import { SpanRing } from '../../src/engine/hot/span-ring.js';
import { parseTraceparent, type Span } from '../../src/engine/traces.js';
import { startEngine } from '../helpers/engine.js';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;
interface SpanOut extends Span {
  depth: number;
  start: string;
}
interface TraceOut {
  trace_id: string;
  spans: SpanOut[];
}
interface Summary {
  trace_id: string;
  root: { function_id: string; caller_worker_name: string; callee_worker_name: string; status: string };
  span_count: number;
  error_count: number;
  workers: string[];
}

const TP = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe('traces', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  let client: Worker;
  const seenTraceparents = new Map<string, string | undefined>();

  before(async () => {
    eng = await startEngine();
    // A chain across three workers: http-ish → mid → leaf, as HTTP → caller → math → state.
    const front = pool.make('front-worker');
    const mid = pool.make('mid-worker');
    const leaf = pool.make('leaf-worker');
    const logger = new Logger(leaf);
    front.registerFunction('t::front', async (d: unknown, ctx) => {
      seenTraceparents.set('t::front', ctx.traceparent);
      return front.trigger({ function_id: 't::mid', payload: d });
    });
    mid.registerFunction('t::mid', async (d: unknown, ctx) => {
      seenTraceparents.set('t::mid', ctx.traceparent);
      const a = (await mid.trigger({ function_id: 't::leaf', payload: d })) as { n: number };
      const b = (await mid.trigger({ function_id: 't::leaf', payload: d })) as { n: number };
      return { n: a.n + b.n };
    });
    leaf.registerFunction('t::leaf', async (_d: unknown, ctx) => {
      seenTraceparents.set('t::leaf', ctx.traceparent);
      logger.info('leaf ran');
      await sleep(5);
      return { n: 1 };
    });
    leaf.registerFunction('t::fails', () => {
      // Not an SvcError: unexpected, so its stack travels (an SvcError's would not: errors.ts).
      throw Object.assign(new Error('it went wrong'), { code: 'bad_thing' });
    });
    leaf.registerFunction('t::slow', () => sleep(2000).then(() => 'late'));
    client = pool.make('test-client');
    await Promise.all([front, mid, leaf, client].map((w) => w.ready()));
    await eventually(async () => assert.deepEqual(await client.trigger({ function_id: 't::front', payload: {} }), { n: 2 }));
  });
  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  const list = async (payload: Record<string, unknown> = {}): Promise<Summary[]> =>
    ((await client.trigger({ function_id: 'engine::traces::list', payload })) as { traces: Summary[] }).traces;
  const get = async (trace_id: string): Promise<TraceOut> => (await client.trigger({ function_id: 'engine::traces::get', payload: { trace_id } })) as TraceOut;

  test('nested calls across workers form one trace: parents, order, workers, status', async () => {
    await client.trigger({ function_id: 't::front', payload: {} });
    const [latest] = await list({ limit: 1 });
    assert.ok(latest);
    assert.equal(latest.root.function_id, 't::front');
    assert.equal(latest.root.caller_worker_name, 'test-client');
    assert.equal(latest.span_count, 4);
    assert.equal(latest.error_count, 0);
    const t = await get(latest.trace_id);
    assert.deepEqual(
      t.spans.map((s) => [s.function_id, s.depth, s.caller_worker_name, s.callee_worker_name, s.status]),
      [
        ['t::front', 0, 'test-client', 'front-worker', 'ok'],
        ['t::mid', 1, 'front-worker', 'mid-worker', 'ok'],
        ['t::leaf', 2, 'mid-worker', 'leaf-worker', 'ok'],
        ['t::leaf', 2, 'mid-worker', 'leaf-worker', 'ok'],
      ],
    );
    const [front, mid, leaf1, leaf2] = t.spans as [SpanOut, SpanOut, SpanOut, SpanOut];
    assert.equal(front.parent_span_id, null);
    assert.equal(mid.parent_span_id, front.span_id);
    assert.equal(leaf1.parent_span_id, mid.span_id);
    assert.equal(leaf2.parent_span_id, mid.span_id);
    assert.ok(leaf1.start_ms <= leaf2.start_ms);
    assert.equal(new Set(t.spans.map((s) => s.span_id)).size, 4, 'span ids are distinct');
    // Durations nest: the parent lasts at least as long as its children together.
    assert.ok(leaf1.duration_ms >= 4, `leaf slept 5 ms, span says ${leaf1.duration_ms}`);
    assert.ok(mid.duration_ms >= leaf1.duration_ms + leaf2.duration_ms);
    assert.ok(front.duration_ms >= mid.duration_ms);
    assert.ok(front.start_ms <= mid.start_ms && mid.start_ms <= leaf1.start_ms);
    assert.equal(Date.parse(front.start), Math.floor(front.start_ms));
  });

  test('each callee receives a traceparent naming its own span in the same trace', async () => {
    await client.trigger({ function_id: 't::front', payload: {} });
    const [latest] = await list({ limit: 1 });
    const t = await get(latest!.trace_id);
    for (const fid of ['t::front', 't::mid', 't::leaf']) {
      const tp = seenTraceparents.get(fid);
      const m = TP.exec(tp ?? '');
      assert.ok(m, `${fid} got traceparent ${tp}`);
      assert.equal(m[1], latest!.trace_id);
      assert.ok(t.spans.some((s) => s.function_id === fid && s.span_id === m[2]), `${fid}'s traceparent names its span`);
    }
  });

  test('implicitContext false: a nested call joins the trace only when given parent: ctx', async () => {
    const explicit = pool.make('explicit-worker', { implicitContext: false });
    const seen: Array<string | undefined> = [];
    explicit.registerFunction('t::explicit', async (_d: unknown, ctx) => {
      await explicit.trigger({ function_id: 't::leaf', payload: {} });
      seen.push(seenTraceparents.get('t::leaf'));
      await explicit.trigger({ function_id: 't::leaf', payload: {}, parent: ctx });
      seen.push(seenTraceparents.get('t::leaf'));
      return ctx.traceparent;
    });
    await explicit.ready();
    let answer: unknown;
    await eventually(async () => {
      answer = await client.trigger({ function_id: 't::explicit', payload: {} });
    });
    const own = TP.exec(answer as string);
    assert.ok(own, 't::explicit got a traceparent');
    const [withoutParent, withParent] = seen.map((tp) => TP.exec(tp ?? ''));
    assert.ok(withoutParent && withParent);
    assert.notEqual(withoutParent[1], own[1], 'without parent: a trace of its own');
    assert.equal(withParent[1], own[1], 'with parent: the same trace');
    const t = await get(own[1]!);
    const leaf = t.spans.find((sp) => sp.function_id === 't::leaf');
    assert.equal(leaf?.parent_span_id, own[2], "the leaf is the explicit call's child");
  });

  test('Logger lines inside a traced call carry its trace_id; log calls are not spans', async () => {
    await client.trigger({ function_id: 't::front', payload: {} });
    const [latest] = await list({ limit: 1 });
    await eventually(async () => {
      const { logs } = (await client.trigger({ function_id: 'engine::logs::list', payload: { text: 'leaf ran' } })) as { logs: Array<{ trace_id?: string; worker_name: string }> };
      assert.equal(logs.filter((l) => l.trace_id === latest!.trace_id).length, 2);
    });
    const t = await get(latest!.trace_id);
    assert.ok(t.spans.every((s) => !s.function_id.startsWith('engine::')));
  });

  test('a caller\'s valid traceparent is continued; an invalid one starts a new trace', async () => {
    const raw = await RawClient.connect(eng.url);
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const parent = '00f067aa0ba902b7';
      raw.send({ type: 'invokefunction', invocation_id: 'a1', function_id: 't::leaf', data: {}, traceparent: `00-${traceId}-${parent}-01` });
      assert.deepEqual((await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'a1')).result, { n: 1 });
      const t = await get(traceId);
      assert.equal(t.spans.length, 1);
      assert.equal(t.spans[0]!.parent_span_id, parent);
      assert.equal(t.spans[0]!.caller_worker_name.startsWith('anonymous-'), true);
      assert.equal(parseTraceparent(seenTraceparents.get('t::leaf'))?.traceId, traceId);

      raw.send({ type: 'invokefunction', invocation_id: 'a2', function_id: 't::leaf', data: {}, traceparent: 'not-a-traceparent' });
      await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'a2');
      const fresh = parseTraceparent(seenTraceparents.get('t::leaf'));
      assert.ok(fresh);
      assert.notEqual(fresh.traceId, traceId);
      assert.equal((await get(fresh.traceId)).spans[0]!.parent_span_id, null);

      // A parent id that repeats the trace id's first 16 digits names no span (svc-http's, the
      // console's): the trace is the caller's, the call's span its root, also over OTLP.
      const started = '5c0ffee0d15ea5e5000000000000002a';
      raw.send({ type: 'invokefunction', invocation_id: 'a3', function_id: 't::leaf', data: {}, traceparent: `00-${started}-${started.slice(0, 16)}-01` });
      await raw.next((f) => f.type === 'invocationresult' && f.invocation_id === 'a3');
      const root = (await get(started)).spans;
      assert.deepEqual(root.map((s) => [s.function_id, s.parent_span_id, s.depth]), [['t::leaf', null, 0]]);
      assert.equal(parseTraceparent(seenTraceparents.get('t::leaf'))?.parentId, root[0]!.span_id, "the callee's traceparent names the call's span");
    } finally {
      raw.close();
    }
  });

  test('failed and timed-out calls are spans with their status and error', async () => {
    await assert.rejects(client.trigger({ function_id: 't::fails', payload: {} }), { code: 'bad_thing' });
    await assert.rejects(client.trigger({ function_id: 't::slow', payload: {}, timeoutMs: 50 }), { code: 'timeout' });
    const errors = await list({ errors_only: true, limit: 2 });
    assert.deepEqual(
      errors.map((t) => [t.root.function_id, t.root.status, t.error_count]),
      [
        ['t::slow', 'timeout', 1],
        ['t::fails', 'error', 1],
      ],
    );
    const failed = await get(errors[1]!.trace_id);
    const { stacktrace, ...rest } = failed.spans[0]!.error!;
    assert.deepEqual(rest, { code: 'bad_thing', message: 'it went wrong' });
    // The callee's stack trace is kept with its span (the SDK sends the thrown error's stack).
    assert.match(stacktrace ?? '', /^Error: it went wrong\n +at /);
    const timedOut = (await get(errors[0]!.trace_id)).spans[0]!.error!;
    assert.deepEqual(Object.keys(timedOut), ['code', 'message'], 'an error the engine made has no stack trace');
    assert.equal(timedOut.code, 'timeout');
  });

  test('list filters by function and worker; get refuses unknown and missing ids', async () => {
    const byFn = await list({ function_id: 't::mid' });
    assert.ok(byFn.length >= 3);
    assert.ok(byFn.every((t) => t.root.function_id === 't::front'));
    const byWorker = await list({ worker: 'leaf-worker', limit: 500 });
    assert.ok(byWorker.length > byFn.length);
    await assert.rejects(get('0123456789abcdef0123456789abcdef'), { code: 'trace_not_found' });
    await assert.rejects(client.trigger({ function_id: 'engine::traces::get', payload: {} }), { code: 'invalid_payload' });
    await assert.rejects(client.trigger({ function_id: 'engine::traces::list', payload: { limit: -1 } }), { code: 'invalid_payload' });
  });
});

describe('tracing off', () => {
  test('no spans are kept and the caller\'s traceparent passes through unchanged', async () => {
    const eng = await startEngine({ tracing: false });
    const pool = new WorkerPool(() => eng.url);
    try {
      let seen: string | undefined = 'unset';
      const callee = pool.make('callee');
      callee.registerFunction('t::echo', (_d, ctx) => {
        seen = ctx.traceparent;
        return 'ok';
      });
      await callee.ready();
      const raw = await RawClient.connect(eng.url);
      const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      await eventually(async () => {
        raw.send({ type: 'invokefunction', invocation_id: `x${Date.now()}`, function_id: 't::echo', data: {}, traceparent: tp });
        assert.equal((await raw.next((f) => f.type === 'invocationresult')).result, 'ok');
      });
      assert.equal(seen, tp);
      raw.send({ type: 'invokefunction', invocation_id: 'y', function_id: 'engine::traces::list', data: {} });
      assert.deepEqual((await raw.next((f) => f.invocation_id === 'y')).result, { tracing: false, traces: [] });
      raw.send({ type: 'invokefunction', invocation_id: 'z', function_id: 'engine::traces::get', data: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' } });
      assert.equal(((await raw.next((f) => f.invocation_id === 'z')).error as { code: string }).code, 'trace_not_found');
      raw.close();
    } finally {
      await pool.closeAll();
      await eng.stop();
    }
  });
});

describe('SpanRing', () => {
  const span = (trace: string, n: number, parent: string | null = null): Span => ({
    trace_id: trace,
    span_id: `${trace.slice(0, 8)}${String(n).padStart(8, '0')}`,
    parent_span_id: parent,
    function_id: `f::${n}`,
    invocation_id: `i${n}`,
    caller_worker_id: null,
    caller_worker_name: 'engine',
    callee_worker_id: 'w',
    callee_worker_name: 'w',
    start_ms: 1000 + n,
    duration_ms: 1,
    status: 'ok',
    error: null,
  });

  test('keeps the newest spans within its capacity; the oldest go first', () => {
    const b = new SpanRing(5);
    for (const t of ['a', 'b', 'c']) for (let i = 0; i < 2; i++) b.add(span(t.repeat(32), i));
    assert.equal(b.spanCount, 5);
    assert.deepEqual(
      b.get('a'.repeat(32))?.spans.map((s) => s.function_id),
      ['f::1'],
      'trace a lost its oldest span',
    );
    assert.equal(b.get('c'.repeat(32))?.spans.length, 2);
    assert.deepEqual(
      b.list().map((t) => [t.trace_id[0], t.span_count]),
      [
        ['c', 2],
        ['b', 2],
        ['a', 1],
      ],
    );
    assert.equal(b.list({ limit: 1 }).length, 1);
    for (let i = 0; i < 5; i++) b.add(span('d'.repeat(32), i));
    assert.equal(b.get('a'.repeat(32)), null);
    assert.deepEqual(
      b.list().map((t) => t.trace_id[0]),
      ['d'],
    );
  });

  test('orders spans depth-first: children right after their parent, siblings by start', () => {
    const b = new SpanRing(100);
    const tid = 'e'.repeat(32);
    const root = span(tid, 1);
    const childLate = { ...span(tid, 5, root.span_id), start_ms: 1010 };
    const childEarly = { ...span(tid, 3, root.span_id), start_ms: 1002 };
    const grandchild = { ...span(tid, 4, childEarly.span_id), start_ms: 1003 };
    // Recorded at finish: innermost first.
    for (const s of [grandchild, childEarly, childLate, root]) b.add(s);
    assert.deepEqual(
      b.get(tid)!.spans.map((s) => [s.function_id, s.depth]),
      [
        ['f::1', 0],
        ['f::3', 1],
        ['f::4', 2],
        ['f::5', 1],
      ],
    );
    assert.equal(b.list()[0]!.root.function_id, 'f::1');
  });

  test('a failed span keeps its string stack trace, counted in maxBytes; a stack that is not a string is not kept', () => {
    const b = new SpanRing(10, undefined, 300, 100);
    const failed = (n: number, stacktrace: unknown): Span => ({ ...span(String(n).repeat(32), n), status: 'error', error: { code: 'c', message: 'm', stacktrace } as Span['error'] });
    b.add(failed(1, 'Error: m\n    at f (w.js:1:1)'));
    assert.deepEqual(b.get('1'.repeat(32))!.spans[0]!.error, { code: 'c', message: 'm', stacktrace: 'Error: m\n    at f (w.js:1:1)' });
    assert.equal(b.heldBytes, 2 + 'Error: m\n    at f (w.js:1:1)'.length);
    b.add(failed(2, { not: 'a string' }));
    assert.deepEqual(b.get('2'.repeat(32))!.spans[0]!.error, { code: 'c', message: 'm' });
    // Cut to maxValue (100), and three such stacks are over maxBytes (300): the oldest spans go.
    for (const n of [3, 4, 5]) b.add(failed(n, 'S'.repeat(1000)));
    const kept = b.get('5'.repeat(32))!.spans[0]!.error!.stacktrace!;
    assert.match(kept, /^S{100}… \[svc_truncated: error stacktrace of 1000 characters/);
    assert.ok(b.heldBytes <= 300, String(b.heldBytes));
    assert.equal(b.get('1'.repeat(32)), null);
    assert.equal(b.get('3'.repeat(32)), null);
  });

  test('parseTraceparent accepts well-formed W3C traceparents only', () => {
    assert.deepEqual(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      parentId: '00f067aa0ba902b7',
      flags: '01',
    });
    for (const bad of [undefined, '', 'garbage', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01']) {
      assert.equal(parseTraceparent(bad), null, String(bad));
    }
  });
});
