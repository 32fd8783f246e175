/**
 * Compatibility with the published npm `iii-sdk@0.22.1` (a pinned dev dependency), used unmodified
 * against a real svc engine on loopback: an iii worker registers functions and triggers, is called
 * by an svc-sdk worker and by the `svc trigger` binary, calls svc-sdk functions itself, binds to a
 * trigger type an svc-sdk worker provides (and provides one an svc worker binds to), and survives a
 * dropped connection by reattaching. With svc-queue running: TriggerAction.Enqueue answers
 * {messageReceiptId} and the job runs, and an iii worker subscribes to a durable topic.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { registerWorker as registerIiiWorker, TriggerAction, type EnqueueResult, type IIIClient } from 'iii-sdk';
import { EngineFunctions } from 'iii-sdk/engine';
import { registerWorker, InvocationError, type TriggerBinding, type Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import { startQueueWorker } from '../../src/workers/queue/worker.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SVC_BIN = `${ROOT}bin/svc.js`;
// The package's `exports` hide package.json; read it beside the resolved entry point (dist/…).
const III_VERSION = (
  JSON.parse(readFileSync(join(dirname(createRequire(import.meta.url).resolve('iii-sdk')), '..', 'package.json'), 'utf8')) as { version: string }
).version;

/** Poll `probe` until it returns a truthy value; fail naming `what` after `ms`. */
async function until<T>(what: string, probe: () => T | Promise<T>, ms = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** `svc trigger …` through the real binary; never throws, returns what it printed and its exit code. */
async function svcTrigger(args: string[], timeoutMs = 15_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SVC_BIN, 'trigger', ...args], { timeout: timeoutMs, env: { ...process.env, SVC_URL: '' } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string; killed?: boolean };
    if (err.killed) throw new Error(`svc trigger ${args.join(' ')} did not finish within ${timeoutMs} ms`);
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

interface WorkerRow {
  worker_id: string;
  name: string;
  runtime: string;
  version: string | null;
  functions: string[];
  metadata: Record<string, unknown>;
}

describe(`published iii-sdk@${III_VERSION} against the svc engine`, { timeout: 90_000 }, () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  let iii: IIIClient;
  let svc: Worker;
  const svcCalls: unknown[] = [];
  const extraIii: IIIClient[] = [];
  let proxy: TcpProxy | undefined;

  const workers = async (): Promise<WorkerRow[]> => ((await svc.trigger({ function_id: 'engine::workers::list' })) as { workers: WorkerRow[] }).workers;
  const functionExists = async (id: string): Promise<boolean> =>
    ((await svc.trigger({ function_id: 'engine::functions::list' })) as { functions: Array<{ function_id: string }> }).functions.some((f) => f.function_id === id);

  before(async () => {
    assert.equal(III_VERSION, '0.22.1', 'the compat test must run against the pinned iii-sdk 0.22.1');
    eng = await startEngine();
    // The iii worker exactly as its README shows it; only the name is set, so lists are readable.
    iii = registerIiiWorker(eng.url, { workerName: 'iii-compat' });
    iii.registerFunction('iii::greet', async (input: { name?: string }) => ({ message: `Hello, ${input.name}!` }), {
      description: 'Greets by name',
    });
    iii.registerFunction('iii::fail', async () => {
      throw new Error('boom from iii');
    });
    iii.registerFunction('iii::call-svc', async (input: { n: number }) => iii.trigger({ function_id: 'svc::double', payload: { n: input.n } }));

    svc = registerWorker(eng.url, { workerName: 'svc-compat', echoLogs: false });
    svc.registerFunction('svc::double', (data: { n: number }) => {
      svcCalls.push(data);
      return { n: data.n * 2 };
    });
    svc.registerFunction('svc::fail', () => {
      throw new Error('boom from svc');
    });
    await svc.ready(5000);
    await until('iii::greet to be registered', () => functionExists('iii::greet'));
  });

  after(async () => {
    await Promise.allSettled([iii?.shutdown(), ...extraIii.map((w) => w.shutdown()), svc?.shutdown()]);
    await proxy?.close();
    await eng?.stop();
  });

  test('engine::workers::register from the iii SDK names the connection and keeps its metadata', async () => {
    const row = await until('the iii worker to announce itself', async () => (await workers()).find((w) => w.name === 'iii-compat'));
    assert.equal(row.runtime, 'node');
    assert.equal(row.version, III_VERSION);
    assert.deepEqual([...row.functions].sort(), ['iii::call-svc', 'iii::fail', 'iii::greet']);
    assert.equal((row.metadata.telemetry as { framework?: string } | undefined)?.framework, 'iii-node');
    assert.equal(row.metadata._caller_worker_id, undefined, 'the engine-injected caller id must not be stored as metadata');
    const info = (await svc.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'iii::greet' } })) as {
      description: string;
      workers: Array<{ worker_name: string }>;
    };
    assert.equal(info.description, 'Greets by name');
    assert.deepEqual(info.workers.map((w) => w.worker_name), ['iii-compat']);
  });

  // The iii SDK opens a second, telemetry-only socket at `<url>/otel` (initOtel); the engine drains it
  // and never lists it as a worker.
  test('the iii SDK telemetry socket (/otel) is not listed as a worker', async () => {
    await until('the iii worker to announce itself', async () => (await workers()).some((w) => w.name === 'iii-compat'));
    // Give the OTel socket, opened at registerWorker time, every chance to be accepted.
    await new Promise((r) => setTimeout(r, 300));
    const names = (await workers()).map((w) => w.name).sort();
    assert.deepEqual(names, ['iii-compat', 'svc-compat'], `unexpected workers: ${JSON.stringify(names)}`);
  });

  test('an svc-sdk worker calls a function registered by the iii worker', async () => {
    assert.deepEqual(await svc.trigger({ function_id: 'iii::greet', payload: { name: 'svc' } }), { message: 'Hello, svc!' });
  });

  test('`svc trigger` calls the iii function and prints its result', async () => {
    const r = await svcTrigger(['iii::greet', 'name=x', '--address', eng.url]);
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    assert.deepEqual(JSON.parse(r.stdout), { message: 'Hello, x!' });
  });

  test('`svc trigger --function-id --payload` form reaches the iii function too', async () => {
    const r = await svcTrigger(['--function-id=iii::greet', '--payload={"name":"json"}', '--address', eng.url]);
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    assert.deepEqual(JSON.parse(r.stdout), { message: 'Hello, json!' });
  });

  test('the iii worker calls an svc-sdk function and gets its result', async () => {
    assert.deepEqual(await iii.trigger({ function_id: 'svc::double', payload: { n: 21 } }), { n: 42 });
  });

  test('a nested call: svc → iii function → svc function', async () => {
    assert.deepEqual(await svc.trigger({ function_id: 'iii::call-svc', payload: { n: 5 } }), { n: 10 });
  });

  test('a fire-and-forget call (TriggerAction.Void) from the iii worker reaches the svc function', async () => {
    const before = svcCalls.length;
    const r = await iii.trigger({ function_id: 'svc::double', payload: { n: 7, tag: 'void' }, action: { type: 'void' } });
    assert.equal(r, undefined);
    await until('the void call to arrive', () => svcCalls.slice(before).some((c) => (c as { tag?: string }).tag === 'void'));
  });

  test("the iii worker's thrown error reaches the svc caller as invocation_failed", async () => {
    await assert.rejects(svc.trigger({ function_id: 'iii::fail', payload: {} }), (e: unknown) => {
      assert.ok(e instanceof InvocationError, `expected InvocationError, got ${String(e)}`);
      assert.equal(e.code, 'invocation_failed');
      assert.equal(e.message, 'boom from iii');
      assert.match(e.stacktrace ?? '', /boom from iii/);
      return true;
    });
    const r = await svcTrigger(['iii::fail', '--address', eng.url]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /error: invocation_failed: boom from iii/);
  });

  test('errors reach the iii caller as iii InvocationErrors with the engine/SDK code', async () => {
    await assert.rejects(iii.trigger({ function_id: 'svc::fail', payload: {} }), (e: unknown) => {
      const err = e as { code?: string; message?: string; function_id?: string };
      assert.equal(err.code, 'invocation_failed');
      assert.match(err.message ?? '', /boom from svc/);
      assert.equal(err.function_id, 'svc::fail');
      return true;
    });
    await assert.rejects(iii.trigger({ function_id: 'nope::missing', payload: {} }), (e: unknown) => {
      const err = e as { code?: string; message?: string };
      assert.equal(err.code, 'function_not_found');
      assert.match(err.message ?? '', /Function nope::missing not found/);
      return true;
    });
  });

  test('per-call metadata from an svc caller reaches the iii handler as its second argument', async () => {
    iii.registerFunction('iii::meta', async (_input: unknown, metadata?: unknown) => ({ metadata: metadata ?? null }));
    await until('iii::meta to be registered', () => functionExists('iii::meta'));
    assert.deepEqual(await svc.trigger({ function_id: 'iii::meta', payload: {}, metadata: { tenant: 't1' } }), { metadata: { tenant: 't1' } });
  });

  test('an iii enqueue with no queue provider is refused with enqueue_error', async () => {
    await assert.rejects(iii.trigger({ function_id: 'svc::double', payload: { n: 1 }, action: { type: 'enqueue', queue: 'jobs' } }), (e: unknown) => {
      const err = e as { code?: string; message?: string };
      assert.equal(err.code, 'enqueue_error');
      assert.match(err.message ?? '', /jobs/);
      return true;
    });
  });

  test('with svc-queue running, TriggerAction.Enqueue from iii answers {messageReceiptId} and the job runs; iii subscribes to a durable topic', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-queue-iii-'));
    const queue = await startQueueWorker({ url: eng.url, config: { data_dir: dir, queues: { jobs: {} } } });
    try {
      const runs: Array<{ input: unknown; metadata: unknown }> = [];
      iii.registerFunction('iii::job', async (input: unknown, metadata?: unknown) => {
        runs.push({ input, metadata });
        return null;
      });
      await until('iii::job to be registered', () => functionExists('iii::job'));
      const receipt = (await iii.trigger({ function_id: 'iii::job', payload: { n: 1 }, action: TriggerAction.Enqueue({ queue: 'jobs' }) })) as EnqueueResult;
      assert.match(receipt.messageReceiptId, /^[0-9a-f-]{36}$/);
      await until('the job to run on the iii worker', () => runs.length === 1);
      assert.deepEqual(runs[0]!.input, { n: 1 });
      assert.equal((runs[0]!.metadata as { message_id: string }).message_id, receipt.messageReceiptId);
      assert.equal((runs[0]!.metadata as { attempt: number }).attempt, 1);
      await assert.rejects(iii.trigger({ function_id: 'iii::job', payload: {}, action: TriggerAction.Enqueue({ queue: 'nope' }) }), (e: unknown) => {
        assert.equal((e as { code?: string }).code, 'enqueue_error');
        return true;
      });

      const got: unknown[] = [];
      iii.registerFunction('iii::on-order', async (input: unknown) => void got.push(input));
      iii.registerTrigger({ type: 'durable:subscriber', function_id: 'iii::on-order', config: { topic: 'iii-orders' } });
      await until('the iii subscription to be bound', async () => {
        const t = (await svc.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ function_id: string; status: string }> };
        return t.triggers.some((x) => x.function_id === 'iii::on-order' && x.status === 'active');
      });
      assert.equal(((await iii.trigger({ function_id: 'iii::durable::publish', payload: { topic: 'iii-orders', data: { id: 9 } } })) as { copies: number }).copies, 1);
      await until('the iii subscriber to get its copy', () => got.length === 1);
      assert.deepEqual(got[0], { id: 9 });
      // Without data: {} (docs/queues.md), as an iii handler called without payload gets.
      await iii.trigger({ function_id: 'iii::durable::publish', payload: { topic: 'iii-orders' } });
      await until('the iii subscriber to get the copy without data', () => got.length === 2);
      assert.deepEqual(got[1], {});
    } finally {
      await queue.shutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('FunctionRef.unregister() from the iii SDK removes the function', async () => {
    const ref = iii.registerFunction('iii::temp', async () => ({ ok: true }));
    await until('iii::temp to be registered', () => functionExists('iii::temp'));
    ref.unregister();
    await until('iii::temp to be unregistered', async () => !(await functionExists('iii::temp')));
    await assert.rejects(svc.trigger({ function_id: 'iii::temp', payload: {} }), { code: 'function_not_found' });
  });

  test('the iii worker can call engine builtins (engine::functions::list)', async () => {
    const r = (await iii.trigger({ function_id: 'engine::functions::list', payload: {} })) as { functions: Array<{ function_id: string }> };
    const ids = r.functions.map((f) => f.function_id);
    assert.ok(ids.includes('svc::double') && ids.includes('iii::greet'), JSON.stringify(ids));
  });

  test("with its telemetry off, an iii worker's nested call stays in its caller's trace", async () => {
    // npm 0.22.1 then names a span of its own as the parent, which the engine never recorded: the
    // engine takes the one call the worker is serving as the parent.
    const quiet = registerIiiWorker(eng.url, { workerName: 'iii-quiet', otel: { enabled: false } });
    extraIii.push(quiet);
    quiet.registerFunction('iii::quiet-nested', async (input: { n: number }) => quiet.trigger({ function_id: 'svc::double', payload: { n: input.n } }));
    await until('iii::quiet-nested to be registered', () => functionExists('iii::quiet-nested'));
    assert.deepEqual(await svc.trigger({ function_id: 'iii::quiet-nested', payload: { n: 4 } }), { n: 8 });
    type Span = { span_id: string; parent_span_id: string | null; function_id: string; depth: number };
    const traces = (await svc.trigger({ function_id: 'engine::traces::list', payload: { function_id: 'iii::quiet-nested' } })) as { traces: Array<{ trace_id: string; span_count: number }> };
    const trace = traces.traces[0]!;
    const { spans } = (await svc.trigger({ function_id: 'engine::traces::get', payload: { trace_id: trace.trace_id } })) as { spans: Span[] };
    assert.deepEqual(
      spans.map((s) => [s.function_id, s.depth]),
      [
        ['iii::quiet-nested', 0],
        ['svc::double', 1],
      ],
    );
    assert.equal(spans[1]!.parent_span_id, spans[0]!.span_id);
  });

  test("every id of iii's EngineFunctions is served to the iii worker", async () => {
    const payloads: Record<string, unknown> = {
      [EngineFunctions.INFO_FUNCTIONS]: { function_id: 'iii::greet' },
      [EngineFunctions.INFO_WORKERS]: { name: 'iii-compat' },
      [EngineFunctions.INFO_TRIGGERS]: { id: 'no-such-type' },
      [EngineFunctions.INFO_REGISTERED_TRIGGERS]: { id: 'no-such-binding' },
    };
    for (const id of Object.values(EngineFunctions)) {
      if (id === EngineFunctions.REGISTER_WORKER) continue; // every iii connection calls it (above)
      const outcome = await iii.trigger({ function_id: id, payload: payloads[id] ?? {} }).then(
        () => 'answered',
        (e: { code?: string }) => e.code,
      );
      assert.notEqual(outcome, 'function_not_found', `${id} is served`);
    }
    await assert.rejects(iii.trigger({ function_id: EngineFunctions.INFO_TRIGGERS, payload: { id: 'no-such-type' } }), { code: 'trigger_type_not_found' });
    await assert.rejects(iii.trigger({ function_id: EngineFunctions.INFO_REGISTERED_TRIGGERS, payload: { id: 'no-such-binding' } }), { code: 'trigger_not_found' });
  });

  test('an iii trigger against a trigger type provided by an svc-sdk worker is forwarded to it', async () => {
    const bound: TriggerBinding[] = [];
    const unbound: TriggerBinding[] = [];
    const type = await svc.registerTriggerType(
      { id: 'compat-http', description: 'HTTP-like source provided by an svc-sdk worker' },
      {
        registerTrigger: (b) => void bound.push(b),
        unregisterTrigger: (b) => void unbound.push(b),
      },
    );
    try {
      const t = iii.registerTrigger({ type: 'compat-http', function_id: 'iii::greet', config: { api_path: '/greet', http_method: 'POST' } });
      await until('the binding to reach the provider', () => bound.length === 1);
      assert.equal(bound[0]!.function_id, 'iii::greet');
      assert.equal(bound[0]!.trigger_type, 'compat-http');
      assert.deepEqual(bound[0]!.config, { api_path: '/greet', http_method: 'POST' });
      // The provider fires the binding as an HTTP request would.
      assert.deepEqual(await svc.trigger({ function_id: bound[0]!.function_id, payload: { name: 'http' } }), { message: 'Hello, http!' });
      const listed = (await svc.trigger({ function_id: 'engine::registered-triggers::list' })) as {
        triggers: Array<{ id: string; status: string; worker_name: string }>;
      };
      const row = listed.triggers.find((x) => x.id === bound[0]!.id);
      assert.equal(row?.status, 'active');
      assert.equal(row?.worker_name, 'iii-compat');
      // The info ids answer one row of those lists.
      assert.deepEqual(await iii.trigger({ function_id: EngineFunctions.INFO_REGISTERED_TRIGGERS, payload: { id: bound[0]!.id } }), row);
      const typeInfo = (await iii.trigger({ function_id: EngineFunctions.INFO_TRIGGERS, payload: { id: 'compat-http' } })) as { id: string; provider: { worker_name: string }; bindings: number };
      assert.deepEqual([typeInfo.id, typeInfo.provider.worker_name, typeInfo.bindings], ['compat-http', 'svc-compat', 1]);
      t.unregister();
      await until('the provider to hear of the unregistration', () => unbound.length === 1);
      assert.equal(unbound[0]!.id, bound[0]!.id);
    } finally {
      type.unregister();
    }
  });

  test('an iii trigger registered before its type exists is parked, then handed to the svc provider', async () => {
    const bound: TriggerBinding[] = [];
    const t = iii.registerTrigger({ type: 'compat-late', function_id: 'iii::greet', config: { n: 1 } });
    await until('the parked binding to be listed', async () => {
      const listed = (await svc.trigger({ function_id: 'engine::registered-triggers::list' })) as { triggers: Array<{ trigger_type: string; status: string }> };
      return listed.triggers.find((x) => x.trigger_type === 'compat-late')?.status === 'parked';
    });
    const type = await svc.registerTriggerType({ id: 'compat-late' }, { registerTrigger: (b) => void bound.push(b), unregisterTrigger: () => undefined });
    try {
      await until('the parked binding to reach the new provider', () => bound.length === 1);
      assert.deepEqual(bound[0]!.config, { n: 1 });
    } finally {
      t.unregister();
      type.unregister();
    }
  });

  test('an svc-sdk trigger against a trigger type provided by the iii worker: accepted and refused', async () => {
    const seen: Array<{ id: string; function_id: string; config: unknown }> = [];
    const gone: string[] = [];
    iii.registerTriggerType<{ refuse?: boolean }>(
      { id: 'iii-source', description: 'event source provided by an iii worker' },
      {
        async registerTrigger(c) {
          if (c.config?.refuse) throw new Error('refused by the iii provider');
          seen.push(c);
        },
        async unregisterTrigger(c) {
          gone.push(c.id);
        },
      },
    );
    await until('the iii trigger type to be listed', async () => {
      const r = (await svc.trigger({ function_id: 'engine::triggers::list' })) as { trigger_types: Array<{ id: string; provider: unknown }> };
      return r.trigger_types.some((x) => x.id === 'iii-source' && x.provider);
    });
    // svc-sdk waits for the provider's answer (engine `ack` extension), which the iii SDK sends.
    const tr = await svc.registerTrigger({ type: 'iii-source', function_id: 'svc::double', config: { every: '1s' } });
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.id, tr.id);
    assert.equal(seen[0]!.function_id, 'svc::double');
    assert.deepEqual(seen[0]!.config, { every: '1s' });
    // The iii provider fires it.
    assert.deepEqual(await iii.trigger({ function_id: seen[0]!.function_id, payload: { n: 4 } }), { n: 8 });
    await assert.rejects(svc.registerTrigger({ type: 'iii-source', function_id: 'svc::double', config: { refuse: true } }), (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'trigger_registration_failed');
      assert.match(e.message, /refused by the iii provider/);
      return true;
    });
    tr.unregister();
    await until('the iii provider to hear of the unregistration', () => gone.includes(tr.id));
    // iii's own engine drops `unregistertriggertype`; svc honours it.
    iii.unregisterTriggerType({ id: 'iii-source', description: 'event source provided by an iii worker' });
    await until('the iii trigger type to be removed', async () => {
      const r = (await svc.trigger({ function_id: 'engine::triggers::list' })) as { trigger_types: Array<{ id: string }> };
      return !r.trigger_types.some((x) => x.id === 'iii-source');
    });
  });

  test('engine::workers::register ignores a spoofed _caller_worker_id', async () => {
    const target = await until('the iii worker', async () => (await workers()).find((w) => w.name === 'iii-compat'));
    const ws = new WebSocket(eng.url);
    try {
      await new Promise<void>((resolve, reject) => ws.once('open', resolve).once('error', reject));
      ws.send(
        JSON.stringify({
          type: 'invokefunction',
          function_id: 'engine::workers::register',
          data: { name: 'spoofer', runtime: 'raw', _caller_worker_id: target.worker_id },
          action: { type: 'void' },
        }),
      );
      await until('the raw client to be named', async () => (await workers()).some((w) => w.name === 'spoofer'));
      const again = (await workers()).find((w) => w.worker_id === target.worker_id);
      assert.equal(again?.name, 'iii-compat');
      assert.equal(again?.runtime, 'node');
    } finally {
      ws.terminate();
    }
  });

  test('an iii worker leaving mid-call: the svc caller gets invocation_stopped at once, the function is gone', async () => {
    let started = false;
    const leaver = registerIiiWorker(eng.url, { workerName: 'iii-leaver', otel: { enabled: false } });
    extraIii.push(leaver);
    leaver.registerFunction('iii::hang', async () => {
      started = true;
      await new Promise((r) => setTimeout(r, 20_000).unref());
      return { late: true };
    });
    await until('iii::hang to be registered', () => functionExists('iii::hang'));
    const t0 = Date.now();
    const call = svc.trigger({ function_id: 'iii::hang', payload: {}, timeoutMs: 15_000 });
    await until('the iii handler to start', () => started);
    await leaver.shutdown();
    await assert.rejects(call, (e: unknown) => {
      assert.ok(e instanceof InvocationError);
      assert.equal(e.code, 'invocation_stopped');
      return true;
    });
    assert.ok(Date.now() - t0 < 5000, 'the caller must not wait for its deadline');
    await until('iii::hang to be unregistered', async () => !(await functionExists('iii::hang')));
    await assert.rejects(svc.trigger({ function_id: 'iii::hang', payload: {} }), { code: 'function_not_found' });
  });

  test('an iii worker whose connection drops reconnects, reattaches and serves again, listed once', async () => {
    proxy = await startTcpProxy(eng.port);
    const rc = registerIiiWorker(proxy.url, { workerName: 'iii-reconnect', otel: { enabled: false } });
    extraIii.push(rc);
    rc.registerFunction('iii::rc-echo', async (input: unknown) => ({ echo: input }));
    await until('iii::rc-echo to be served', async () => (await svc.trigger({ function_id: 'iii::rc-echo', payload: { v: 1 } })) !== undefined, 5000);
    const firstId = (await until('the reconnecting worker to be named', async () => (await workers()).find((w) => w.name === 'iii-reconnect'))).worker_id;

    proxy.cut();
    await until('the dropped worker to be removed', async () => !(await workers()).some((w) => w.worker_id === firstId));
    // The SDK reconnects after ~1 s (±30 %), sends `reattach`, replays its registrations.
    const echoed = await until(
      'iii::rc-echo to be served again after the reconnect',
      async () => (await svc.trigger({ function_id: 'iii::rc-echo', payload: { v: 2 } })) as { echo: unknown },
      10_000,
    );
    assert.deepEqual(echoed, { echo: { v: 2 } });
    const rows = await until('the reconnected worker to announce itself', async () => {
      const r = (await workers()).filter((w) => w.name === 'iii-reconnect');
      return r.length > 0 ? r : undefined;
    });
    assert.equal(rows.length, 1, `listed ${rows.length} times`);
    assert.notEqual(rows[0]!.worker_id, firstId);
    assert.deepEqual(rows[0]!.functions, ['iii::rc-echo']);
  });
});
