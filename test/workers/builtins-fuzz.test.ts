/**
 * A seeded fuzz test of what clients send the built-in workers: raw `ws` connections call svc-state,
 * svc-queue and svc-cron's functions and bind state, cron, http and durable:subscriber triggers with
 * generated arguments (fields missing, null, of the wrong type, huge, deeply nested; unicode edge
 * cases: lone surrogates, NUL, RTL overrides, zero-width characters, very long strings; number
 * literals JSON has but JS bends: -0, 1e400, 1e308, 2^53+1), plus bursts over the engine's
 * in-flight budgets. The built-ins run as their own processes (fuzz-stack.ts).
 *
 * After every run: every call got an answer (a result, or an error whose `code` docs/errors.md
 * lists) well before its deadline, every binding got its answer, every built-in process is alive
 * and still answers a normal call correctly, and a job enqueued then is delivered (nothing lost).
 * At the end nothing is left in the engine's in-flight tables.
 *
 * FUZZ_SEED=<n> replays a run; the seed is printed, and fast-check's failure message carries it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type { Worker } from 'svc-sdk';
import { RawClient } from '../helpers/raw-client.js';
import { eventually, sleep, WorkerPool } from '../helpers/util.js';
import { documentedCodes, startFuzzStack, type FuzzStack } from './fuzz-stack.js';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
console.log(`builtins fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

/** And the code fz::fail throws on purpose. */
const CODES = documentedCodes().add('planned_failure');
/** Every call's deadline; an answer must come long before it (nothing here waits on anything slow). */
const DEADLINE_MS = 20_000;
const ANSWER_MS = 6000;
const PER_WORKER = 40;

// ---- generators -------------------------------------------------------------------------------

/** Number literals JSON.stringify cannot write; spliced into the frame's text as they are. */
const RAW_NUMBERS = ['-0', '1e400', '-1e400', '1e-400', '123456789012345678901234567890', '9007199254740993', '0.1e1', '-0.0'];
const rawNumber = fc.constantFrom(...RAW_NUMBERS).map((n) => `@@num:${n}@@`);
const edgeStr = fc.oneof(
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udc00', '\udbff\udfff', '\u202eevil', 'a\u200bb', '\ufeff', '💥', 'é', 'ﷺ', '../..', 'a/b', '%00', '*', 'engine::x', '__proto__', 'constructor', 'NaN', '-0', 'Infinity', 'null', '{}', '\r\n', 'default', 'fz-q'),
  fc.string({ maxLength: 16 }),
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.integer({ min: 129, max: 300 }).map((n) => 'q'.repeat(n)),
  fc.constantFrom(10_000, 70_000).map((n) => 'k'.repeat(n)),
);
const edgeNum = fc.oneof(fc.constantFrom(0, 1, -1, 0.5, 1e308, -1e308, 5e-324, 2 ** 53, 2 ** 31, 2 ** 32, 1e21, 3_600_001), fc.integer(), rawNumber);
const leaf = fc.oneof(edgeStr, edgeNum, fc.boolean(), fc.constant(null));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(edgeStr, tie('value'), { maxKeys: 4 })),
}));
/** Nested just under the engine's frame depth limit (128), and over it. */
const deep = fc.integer({ min: 90, max: 135 }).map((n) => {
  let v: unknown = 'bottom';
  for (let i = 0; i < n; i++) v = i % 2 ? [v] : { d: v };
  return v;
});
const anyValue = fc.oneof({ arbitrary: value, weight: 6 }, { arbitrary: deep, weight: 1 }, { arbitrary: fc.constantFrom(50_000, 300_000).map((n) => ({ big: 'v'.repeat(n) })), weight: 1 });

const MISSING = Symbol('missing');
/** A field: usually of its kind, else any value, else left out. */
const field = <T>(a: fc.Arbitrary<T>) => fc.oneof({ arbitrary: a, weight: 4 }, { arbitrary: anyValue, weight: 1 }, { arbitrary: fc.constant(MISSING), weight: 1 });
const obj = (fields: Record<string, fc.Arbitrary<unknown>>) =>
  fc.record(Object.fromEntries(Object.entries(fields).map(([k, a]) => [k, field(a)]))).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== MISSING)));

const scope = fc.oneof(fc.constantFrom('fz', 'fz-b'), edgeStr);
const key = fc.oneof(fc.constantFrom('k1', 'k2'), edgeStr);
const queue = fc.oneof(fc.constantFrom('default', 'fz-q', 'fz-group'), edgeStr);
const fnId = fc.oneof(fc.constantFrom('fz::sink', 'fz::fail', 'nope::missing', 'state::get', 'engine::health::check'), edgeStr);
/** A binding id of this run (`@@tid:n@@`, filled in when sent), or any string. */
const triggerId = fc.oneof(fc.integer({ min: 0, max: 3 }).map((n) => `@@tid:${n}@@`), edgeStr);
const smallInt = fc.oneof(fc.integer({ min: -2, max: 200 }), edgeNum);
const op = obj({ type: fc.constantFrom('set', 'merge', 'increment', 'decrement', 'append', 'remove', 'SET', 'nope'), path: fc.oneof(key, fc.array(key, { maxLength: 4 })), value: anyValue, by: edgeNum });

const CALLS: Record<string, fc.Arbitrary<unknown>> = {
  'state::get': obj({ scope, key }),
  'state::set': obj({ scope, key, value: anyValue }),
  'state::delete': obj({ scope, key }),
  'state::update': obj({ scope, key, ops: fc.array(op, { maxLength: 5 }), atomic: fc.boolean() }),
  'state::list': obj({ scope, limit: smallInt, cursor: edgeStr }),
  'state::list_groups': obj({ limit: smallInt }),
  'engine::queue::enqueue': obj({ queue, function_id: fnId, data: anyValue }),
  'queue::publish': obj({ topic: edgeStr, data: anyValue }),
  'queue::list': obj({}),
  'queue::stats': obj({ queue }),
  'queue::jobs': obj({ queue, state: fc.constantFrom('waiting', 'delayed', 'running', 'dlq', 'done'), offset: smallInt, limit: smallInt }),
  'queue::dlq::list': obj({ queue, offset: smallInt, limit: smallInt }),
  'queue::dlq::redrive': obj({ queue, id: edgeStr, ids: fc.array(edgeStr, { maxLength: 3 }) }),
  'queue::dlq::delete': obj({ queue, id: edgeStr, ids: fc.array(edgeStr, { maxLength: 3 }) }),
  'queue::purge': obj({ queue }),
  'iii::durable::publish': obj({ topic: edgeStr, data: anyValue }),
  'iii::queue::redrive': obj({ queue }),
  'iii::queue::redrive_message': obj({ queue, message_id: edgeStr }),
  'iii::queue::discard_message': obj({ queue, message_id: edgeStr }),
  'cron::list': obj({ function_id: fnId }),
  'cron::pause': obj({ schedule_id: edgeStr, trigger_id: triggerId }),
  'cron::resume': obj({ schedule_id: edgeStr, trigger_id: triggerId }),
  'cron::run_now': obj({ schedule_id: edgeStr, trigger_id: triggerId }),
  // The engine's own functions (docs/protocol.md, Built-in functions), callable by any client.
  'engine::workers::register': obj({ name: fc.oneof(fc.constantFrom('svc-state', 'engine', 'svc-cli-x', 'fz-raw'), edgeStr), namespace: fc.oneof(fc.constantFrom('default', 'fz-ns'), edgeStr), runtime: edgeStr, version: edgeStr, pid: edgeNum, os: edgeStr }),
  'engine::workers::list': obj({ include_clients: fc.boolean() }),
  'engine::workers::info': obj({ worker_id: edgeStr, name: fc.oneof(fc.constantFrom('fuzz-state', 'fz-app'), edgeStr) }),
  'engine::workers::report': obj({
    process: obj({ cpu_user_seconds: edgeNum, cpu_system_seconds: edgeNum, rss_bytes: edgeNum, heap_used_bytes: edgeNum, event_loop_lag_max_ms: edgeNum, interval_ms: edgeNum }),
    state: anyValue,
    queues: fc.oneof(fc.array(obj({ queue: edgeStr, waiting: edgeNum, running: edgeNum }), { maxLength: 4 }), anyValue),
  }),
  'engine::functions::list': obj({ include_builtins: fc.boolean() }),
  'engine::functions::info': obj({ function_id: fnId, namespace: edgeStr }),
  'engine::triggers::info': obj({ id: fc.oneof(fc.constantFrom('cron', 'http', 'state'), edgeStr) }),
  'engine::registered-triggers::info': obj({ id: triggerId }),
  'engine::registered-triggers::list': obj({}),
  'engine::queues::list': obj({}),
  'engine::log::warn': obj({ message: edgeStr, data: anyValue, function_id: fnId, invocation_id: edgeStr, traceparent: edgeStr }),
  'engine::log::batch': obj({
    lines: fc.array(fc.oneof(fc.tuple(fc.constantFrom('info', 'error', 'nope', 7), edgeStr, anyValue, fnId, edgeStr, edgeStr), obj({ level: edgeStr, message: edgeStr, data: anyValue }), anyValue), { maxLength: 5 }),
  }),
  'engine::logs::list': obj({ limit: smallInt, worker: edgeStr, level: fc.constantFrom('debug', 'warn', 'x'), since_seq: smallInt, text: edgeStr }),
  'engine::traces::list': obj({ limit: smallInt, function_id: fnId, worker: edgeStr, errors_only: fc.boolean() }),
  'engine::traces::get': obj({ trace_id: fc.oneof(fc.constantFrom('0af7651916cd43dd8448eb211c80319c', '0'.repeat(32)), edgeStr) }),
  'engine::channels::create': obj({ buffer_size: smallInt, direction: edgeStr }),
  'engine::channels::close': obj({ channel_id: edgeStr }),
};
const TRIGGERS: Record<string, fc.Arbitrary<unknown>> = {
  state: obj({ scope, key, condition_function_id: fnId }),
  cron: obj({
    expression: fc.oneof(fc.constantFrom('* * * * * *', '*/2 * * * * *', '@daily', '0 0 30 2 *', '61 * * * *', '*/0 * * * *', '* * * * * * * *', 'L W # ?', '0 0 * * MON#9'), edgeStr),
    timezone: fc.oneof(fc.constantFrom('UTC', 'Europe/Paris', 'Mars/Olympus', '+99:00'), edgeStr),
    overlap: fc.constantFrom('skip', 'allow', 'x'),
    catch_up: fc.constantFrom('none', 'last', 'all', 'x'),
    queue,
    payload: anyValue,
    timeout_ms: smallInt,
  }),
  http: obj({ api_path: fc.oneof(fc.constantFrom('/fz/a', '/fz/:id', '/fz/*rest', '/fz{/:x}', '(', '/fz/{', '/:', '/*', 'fz/b', '/fz/\u0000'), edgeStr), http_method: fc.constantFrom('GET', 'post', 'BREW', 'HEAD', ''), stream: fc.boolean() }),
  'durable:subscriber': obj({ topic: edgeStr, queue, queue_config: anyValue }),
};

const filterOp = fc.oneof(
  value,
  fc.record({ op: fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$prefix', '$any', '$not', '$nope'), v: value }).map(({ op, v }) => ({ [op]: v })),
);
const filters = fc.oneof(
  fc.dictionary(fc.oneof(fc.constantFrom('input.n', 'output', 'status', 'input.__proto__.x', 'input..x', ''), edgeStr), filterOp, { maxKeys: 3 }),
  fc.record({ op: fc.constantFrom('$and', '$or'), v: fc.array(fc.dictionary(fc.constantFrom('input.n', 'status'), filterOp, { maxKeys: 2 }), { maxLength: 3 }) }).map(({ op, v }) => ({ [op]: v })),
  anyValue,
);
/** An observer (iii 0.25's observe frame) of a function, with generated fields. */
const observe = obj({
  source: obj({ function_id: fnId, filters, on: fc.constantFrom('success', 'error', 'complete', 'x') }),
  target: obj({ function_id: fnId, deliver: fc.constantFrom('envelope', 'input', 'output', 'x'), capture: fc.array(edgeStr, { maxLength: 3 }) }),
  max_fires: smallInt,
  expires_in_ms: smallInt,
  max_in_flight: smallInt,
  metadata: anyValue,
});

type Act =
  | { kind: 'call'; function_id: string; data: unknown; enqueue?: unknown }
  | { kind: 'bind'; tid: string; trigger_type: string; function_id: unknown; config: unknown }
  | { kind: 'burst'; n: number; bytes: number }
  | { kind: 'observe'; frame: unknown };
const act: fc.Arbitrary<Act> = fc.oneof(
  { arbitrary: fc.constantFrom(...Object.keys(CALLS)).chain((f) => CALLS[f]!.map((data) => ({ kind: 'call' as const, function_id: f, data }))), weight: 12 },
  { arbitrary: fc.oneof(anyValue, fc.constant(undefined)).map((data) => ({ kind: 'call' as const, function_id: 'engine::queue::enqueue', data })), weight: 1 },
  {
    arbitrary: fc.tuple(fnId, anyValue, fc.option(fc.oneof(obj({ type: fc.constant('enqueue'), queue }), anyValue))).map(([f, data, enqueue]) => ({ kind: 'call' as const, function_id: f, data, enqueue: enqueue ?? undefined })),
    weight: 2,
  },
  {
    arbitrary: fc
      .tuple(fc.constantFrom(...Object.keys(TRIGGERS), 'nope-type'), fc.oneof({ arbitrary: fc.integer({ min: 0, max: 3 }).map((n) => `@@tid:${n}@@`), weight: 4 }, { arbitrary: edgeStr, weight: 1 }), fc.oneof(fnId, anyValue))
      .chain(([t, tid, f]) => (TRIGGERS[t] ?? anyValue).map((config) => ({ kind: 'bind' as const, tid, trigger_type: t, function_id: f, config }))),
    weight: 4,
  },
  { arbitrary: observe.map((frame) => ({ kind: 'observe' as const, frame })), weight: 2 },
  { arbitrary: fc.record({ n: fc.integer({ min: PER_WORKER + 5, max: PER_WORKER * 3 }), bytes: fc.constantFrom(10, 60_000) }).map((b) => ({ kind: 'burst' as const, ...b })), weight: 1 },
);

/** JSON text of `frame`, with the run's binding ids and raw number literals spliced in. */
function frameText(frame: unknown, run: number): string {
  return JSON.stringify(frame)
    .replace(/"@@num:([^@]+)@@"/g, '$1')
    .replace(/@@tid:(\d)@@/g, `fz-t-${run}-$1`);
}

// ---- the stack ----------------------------------------------------------------------------------

let stack: FuzzStack;
const pool = new WorkerPool(() => stack.engine.url);
let app: Worker;
/** Markers of the jobs the liveness checks enqueued on fz-keep, and of those delivered. */
const kept = new Set<string>();
const delivered = new Set<string>();

before(async () => {
  stack = await startFuzzStack(
    { invocationTimeoutMs: DEADLINE_MS, maxInFlightPerWorker: PER_WORKER, maxInFlightBytesPerWorker: 2 * 1024 * 1024 },
    { 'fz-q': { max_attempts: 2, backoff_ms: 10, backoff_jitter: 0 }, 'fz-group': { message_group_field: 'g', max_attempts: 1 }, 'fz-keep': { max_attempts: 5, backoff_ms: 50 } },
  );
  app = pool.make('fz-app');
  app.registerFunction('fz::sink', (data: unknown) => {
    const marker = (data as { keep?: unknown } | null)?.keep;
    if (typeof marker === 'string') delivered.add(marker);
    return { ok: true };
  });
  app.registerFunction('fz::fail', () => {
    throw Object.assign(new Error('planned'), { code: 'planned_failure' });
  });
  const slow = pool.make('fz-slow');
  slow.registerFunction('fz::slow', async () => {
    await sleep(300);
    return 'slow';
  });
  await eventually(async () => assert.equal(await app.trigger({ function_id: 'fz::slow', payload: {} }), 'slow'), 10_000);
});

after(async () => {
  await pool.closeAll();
  await stack?.stop();
});

/** A normal call of each built-in still answers correctly, and a job enqueued now is kept. */
async function assertServing(run: number): Promise<void> {
  stack.assertAlive();
  const v = { run, s: 'é\u0000💥' };
  await app.trigger({ function_id: 'state::set', payload: { scope: 'fz-health', key: 'k', value: v }, timeoutMs: 5000 });
  assert.deepEqual(await app.trigger({ function_id: 'state::get', payload: { scope: 'fz-health', key: 'k' }, timeoutMs: 5000 }), v);
  const marker = `keep-${run}`;
  const r = (await app.trigger({ function_id: 'engine::queue::enqueue', payload: { queue: 'fz-keep', function_id: 'fz::sink', data: { keep: marker } }, timeoutMs: 5000 })) as { messageReceiptId?: unknown };
  assert.equal(typeof r.messageReceiptId, 'string');
  kept.add(marker);
  assert.ok(Array.isArray(((await app.trigger({ function_id: 'cron::list', payload: {}, timeoutMs: 5000 })) as { schedules: unknown }).schedules));
}

type Frame = Record<string, unknown> & { type?: string };
const seen = { calls: 0, results: 0, errors: 0, overloaded: 0, binds: 0, bindErrors: 0, observers: 0 };
const codesSeen = new Map<string, number>();

/** Play one connection's actions; check that every call and binding is answered in time. */
async function play(run: number, conn: number, acts: Act[]): Promise<void> {
  const raw = await RawClient.connect(stack.engine.url);
  raw.send({ type: 'hello', protocol: 1, features: ['cancel', 'ack'] });
  const calls = new Map<string, { at: number; what: string }>();
  const binds = new Map<string, { at: number; what: string }>();
  const answered = new Map<string, number>();
  const problems: string[] = [];
  const checkError = (e: unknown, what: string): string => {
    const err = e as { code?: unknown; message?: unknown };
    if (typeof err?.code !== 'string' || !CODES.has(err.code)) problems.push(`undocumented error ${JSON.stringify(e).slice(0, 300)} for ${what}`);
    else if (typeof err.message !== 'string' || err.message.length === 0) problems.push(`error without a message ${JSON.stringify(e)} for ${what}`);
    // A built-in that fails on bad input without its own code threw by accident (a bug); its
    // embedded store, on this disk, fails a commit only when handed what it cannot store.
    if (err?.code === 'invocation_failed' || err?.code === 'internal_error' || err?.code === 'store_unavailable') problems.push(`${err.code} for ${what}: ${JSON.stringify(e).slice(0, 600)}`);
    codesSeen.set(String(err?.code), (codesSeen.get(String(err?.code)) ?? 0) + 1);
    return String(err?.code);
  };
  raw.ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    const f = JSON.parse(data.toString()) as Frame;
    if (f.type === 'invocationresult' && calls.has(f.invocation_id as string)) {
      const id = f.invocation_id as string;
      const c = calls.get(id)!;
      if (answered.has(id)) problems.push(`two answers for ${c.what}`);
      answered.set(id, Date.now() - c.at);
      if (f.error !== undefined && f.error !== null) {
        if (checkError(f.error, c.what) === 'overloaded') seen.overloaded++;
        seen.errors++;
      } else seen.results++;
    } else if (f.type === 'triggerregistrationresult' && binds.has(f.id as string)) {
      const id = f.id as string;
      if (!answered.has(id)) answered.set(id, Date.now() - binds.get(id)!.at);
      if (f.error) {
        checkError(f.error, binds.get(id)!.what);
        seen.bindErrors++;
      } else if (id.length > 1024) problems.push(`a binding id of ${id.length} characters was accepted: the engine keeps it outside its byte budgets`);
    } else if (f.type === 'observeresult' && binds.has(f.id as string)) {
      const id = f.id as string;
      if (!answered.has(id)) answered.set(id, Date.now() - binds.get(id)!.at);
      if (f.error) checkError(f.error, binds.get(id)!.what);
    } else if (f.type === 'observerstatechanged') {
      const reason = f.reason as { code?: string } | undefined;
      if (reason) checkError(reason, `observer ${String(f.id)}`);
    } else if (f.type === 'error') {
      const ref = f.ref as { type?: string; id?: string } | undefined;
      checkError(f.error, `frame ${JSON.stringify(ref)}`);
      // A binding refused where it entered (e.g. a function id that is not a string).
      if ((ref?.type === 'registertrigger' || ref?.type === 'observe') && typeof ref.id === 'string') for (const [id, b] of binds) if (id.slice(0, 128) === ref.id && !answered.has(id)) answered.set(id, Date.now() - b.at);
    } else if (f.type === 'invokefunction') {
      // Bindings of this connection's own ids are fired at the function they name, never here.
      problems.push(`a raw client that registered nothing was called: ${JSON.stringify(f).slice(0, 200)}`);
    }
  });
  const call = (fid: unknown, data: unknown, extra: Record<string, unknown> = {}, what?: string) => {
    const id = `r${run}c${conn}-${calls.size}`;
    const text = frameText({ type: 'invokefunction', invocation_id: id, function_id: fid, data, timeout_ms: DEADLINE_MS, ...extra }, run);
    calls.set(id, { at: Date.now(), what: what ?? `${id} ${text.slice(0, 300)}` });
    seen.calls++;
    raw.send(text);
  };
  const bindIds = new Set<string>();
  try {
    for (const a of acts) {
      if (a.kind === 'call') call(a.function_id, a.data, a.enqueue === undefined ? {} : { action: a.enqueue });
      else if (a.kind === 'bind') {
        // Two connections of a run may bind one id: the second replaces (or is refused); each is answered.
        const id = `${a.tid.replace(/@@tid:(\d)@@/, `fz-t-${run}-$1`)}-c${conn}-${binds.size}`;
        const text = frameText({ type: 'registertrigger', id, trigger_type: a.trigger_type, function_id: a.function_id, config: a.config }, run);
        binds.set(id, { at: Date.now(), what: text.slice(0, 300) });
        bindIds.add(id);
        seen.binds++;
        raw.send(text);
      } else if (a.kind === 'observe') {
        const id = `obs-${run}-${conn}-${binds.size}`;
        const text = frameText({ ...(a.frame as object), type: 'observe', id }, run);
        binds.set(id, { at: Date.now(), what: text.slice(0, 300) });
        bindIds.add(id);
        seen.observers++;
        raw.send(text);
      } else {
        const pad = 'p'.repeat(a.bytes);
        for (let i = 0; i < a.n; i++) call('fz::slow', { pad }, {}, `burst call ${i} of ${a.n} (${a.bytes} bytes)`);
      }
      if (Math.random() < 0.2) await sleep(5);
    }
    const all = () => [...calls.keys(), ...bindIds].filter((id) => !answered.has(id));
    const end = Date.now() + ANSWER_MS + 2000;
    while (all().length > 0 && Date.now() < end) await sleep(20);
    const late = [...answered].filter(([, ms]) => ms > ANSWER_MS);
    assert.deepEqual(
      all().map((id) => calls.get(id)?.what ?? binds.get(id)?.what),
      [],
      `every call and binding is answered (seed ${SEED}, run ${run})`,
    );
    assert.deepEqual(late.map(([id, ms]) => `${calls.get(id)?.what ?? binds.get(id)?.what} after ${ms} ms`), [], 'answered long before the deadline');
    assert.deepEqual(problems, [], `every answer is well formed (seed ${SEED}, run ${run})`);
    assert.equal(raw.closed, false, `the engine closed connection ${conn} (code ${raw.closeCode})`);
    for (const id of bindIds) raw.send({ type: id.startsWith('obs-') ? 'unobserve' : 'unregistertrigger', id });
  } finally {
    await sleep(50);
    raw.close();
  }
}

test('the built-ins answer every generated call and binding, stay up, and lose nothing', { timeout: 150_000 }, async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(act, { minLength: 1, maxLength: 25 }), { minLength: 1, maxLength: 2 }), async (conns) => {
      const r = run++;
      await Promise.all(conns.map((acts, i) => play(r, i, acts)));
      await assertServing(r);
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
  );
  console.log(`builtins fuzz: ${run} runs, ${JSON.stringify(seen)}, codes ${JSON.stringify(Object.fromEntries(codesSeen))}`);
  for (const [k, n] of Object.entries(seen)) assert.ok(n >= 5, `too few ${k} exercised (${n}): the generators went wrong`);
  // Every job the liveness checks enqueued ran, whatever the fuzzing did to the queues beside it.
  await eventually(() => assert.deepEqual([...kept].filter((m) => !delivered.has(m)), []), 15_000);
  // The raw connections are gone; nothing they started is still in flight.
  await eventually(() => {
    assert.equal(stack.engine.engine.invocations.size, 0, 'calls in flight');
    assert.equal(stack.engine.engine.invocations.bytes, 0, 'bytes in flight');
  }, 15_000);
  stack.assertAlive();
  // Memory stays bounded in the built-ins too: what they hold for refused input is let go.
  for (const c of stack.children) {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${c.child.pid}/status`, 'utf8'))?.[1]);
    assert.ok(kb < 400 * 1024, `${c.name} holds ${kb} kB`);
  }
});
