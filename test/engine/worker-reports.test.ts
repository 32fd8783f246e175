import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'svc-sdk';
import { startEngine } from '../helpers/engine.js';
import { eventually, promSample as sample, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

interface Listed {
  name: string;
  worker_id: string;
  process: null | {
    cpu_user_seconds: number;
    cpu_system_seconds: number;
    rss_bytes: number;
    heap_used_bytes: number | null;
    event_loop_lag_max_ms: number | null;
    interval_ms: number | null;
    reported_at: string;
  };
}

const SDK = fileURLToPath(new URL('../../../sdk/typescript/dist/index.js', import.meta.url));

/**
 * A TypeScript worker in a process of its own, reporting every 200 ms; `busy::spin` blocks its loop
 * for `ms` of CPU time (not wall time: on a busy machine the two differ).
 */
function spawnWorker(url: string, name: string): ChildProcess {
  const program = `import { registerWorker } from ${JSON.stringify(SDK)};
    const w = registerWorker(process.env.SVC_URL, { workerName: ${JSON.stringify(name)}, echoLogs: false, processReportIntervalMs: 200 });
    w.registerFunction('busy::spin', ({ ms }) => { const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }; const end = cpu() + ms; let n = 0; while (cpu() < end) n++; return { n }; });`;
  return spawn(process.execPath, ['--input-type=module', '-e', program], { env: { ...process.env, SVC_URL: url }, stdio: ['ignore', 'inherit', 'inherit'] });
}


describe('worker process reports (engine::workers::report)', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  let client: Worker;
  let child: ChildProcess;

  const listed = async (name: string): Promise<Listed> => {
    const { workers } = await client.trigger<{ workers: Listed[] }>({ function_id: 'engine::workers::list' });
    const w = workers.find((x) => x.name === name);
    assert.ok(w, `${name} is listed`);
    return w;
  };

  before(async () => {
    // One worker gets series of its own; the others count under _other.
    eng = await startEngine({ metrics: { host: '127.0.0.1', port: 0, maxFunctionSeries: 1, maxErrorCodeSeries: 10 } });
    client = pool.make('caller', { processReportIntervalMs: 0 });
    await client.ready();
    child = spawnWorker(eng.url, 'spinner');
    await eventually(() => assert.ok(eng.engine.registry.get('busy::spin')), 15_000);
  });

  after(async () => {
    child.kill('SIGTERM');
    await pool.closeAll();
    await eng.stop();
  });

  test('a TypeScript worker reports CPU, RSS, heap and event-loop lag; CPU and lag grow under a busy loop', async () => {
    let first!: NonNullable<Listed['process']>;
    await eventually(async () => {
      const p = (await listed('spinner')).process;
      assert.ok(p, 'a report arrived');
      first = p;
    }, 10_000);
    assert.ok(first.rss_bytes > 10 * 1024 * 1024, `RSS ${first.rss_bytes}`);
    assert.ok(first.heap_used_bytes !== null && first.heap_used_bytes > 1024 * 1024, `heap ${first.heap_used_bytes}`);
    assert.ok(first.cpu_user_seconds > 0);
    assert.equal(first.interval_ms, 200);

    await client.trigger({ function_id: 'busy::spin', payload: { ms: 600 } });
    await eventually(async () => {
      const p = (await listed('spinner')).process!;
      assert.ok(p.cpu_user_seconds + p.cpu_system_seconds >= first.cpu_user_seconds + first.cpu_system_seconds + 0.4, `CPU ${JSON.stringify(p)} after ${JSON.stringify(first)}`);
      assert.ok((p.event_loop_lag_max_ms ?? 0) >= 400, `lag ${p.event_loop_lag_max_ms}`);
    }, 5000);
  });

  test('the reports are gauges on /metrics, one series per reporting worker up to max_function_series, the rest under _other', async () => {
    const extra = pool.make('second', { processReportIntervalMs: 100 });
    await extra.ready();
    const url = eng.engine.metricsAddress()!.url;
    await eventually(async () => {
      const text = await (await fetch(url)).text();
      const spinner = (await listed('spinner')).worker_id.slice(0, 8);
      const rss = sample(text, `svc_worker_resident_memory_bytes{worker="spinner",replica="${spinner}"}`);
      assert.ok(rss !== undefined && rss > 0, text.split('\n').filter((l) => l.startsWith('svc_worker')).join('\n'));
      assert.ok((sample(text, `svc_worker_cpu_user_seconds_total{worker="spinner",replica="${spinner}"}`) ?? 0) > 0);
      assert.ok((sample(text, 'svc_worker_resident_memory_bytes{worker="_other",replica="_other"}') ?? 0) > 0, 'the second worker counts under _other');
      assert.equal(text.includes('worker="second"'), false);
    }, 5000);
  });

  test('reports are validated where they enter', async () => {
    const bad = async (data: unknown, code: string, message: RegExp): Promise<void> => {
      await assert.rejects(client.trigger({ function_id: 'engine::workers::report', payload: data }), (e: Error & { code?: string }) => {
        assert.equal(e.code, code);
        assert.match(e.message, message);
        return true;
      });
    };
    await bad({}, 'invalid_payload', /"process" must be an object/);
    await bad({ process: { cpu_user_seconds: 1, cpu_system_seconds: 1 } }, 'invalid_payload', /"process.rss_bytes" is required/);
    await bad({ process: { cpu_user_seconds: -1, cpu_system_seconds: 1, rss_bytes: 1 } }, 'invalid_payload', /"process.cpu_user_seconds" must be a number/);
    await bad({ process: { cpu_user_seconds: 1, cpu_system_seconds: 1, rss_bytes: 'x' } }, 'invalid_payload', /"process.rss_bytes" must be a number/);
    await bad({ process: { cpu_user_seconds: 1, cpu_system_seconds: 1, rss_bytes: 1, pad: 'x'.repeat(70_000) } }, 'payload_too_large', /65536 characters/);
    // svc-state's and svc-queue's counters (service-counters.ts).
    const proc = { cpu_user_seconds: 1, cpu_system_seconds: 1, rss_bytes: 1 };
    await bad({ process: proc, state: { sets: -1 } }, 'invalid_payload', /"state.sets" must be a number/);
    await bad({ process: proc, state: [] }, 'invalid_payload', /"state" must be an object/);
    await bad({ process: proc, queues: {} }, 'invalid_payload', /"queues" must be an array/);
    await bad({ process: proc, queues: [{ queue: 'q'.repeat(129) }] }, 'invalid_payload', /"queues\[0\].queue" must be a string of 1 to 128/);
    await bad({ process: proc, queues: [{ queue: 'a' }, { queue: 'a' }] }, 'invalid_payload', /queue "a" is named twice/);
    await bad({ process: proc, queues: Array.from({ length: 201 }, (_, i) => ({ queue: `q${i}` })) }, 'invalid_payload', /at most 200 queues, got 201/);
    await bad({ process: proc, queues: [{ queue: 'a', waiting: 'many' }] }, 'invalid_payload', /"queues\[0\].waiting" must be a number/);
    // A valid one from the client (a `role: worker` connection) is kept, unknown fields left out.
    await client.trigger({ function_id: 'engine::workers::report', payload: { process: { cpu_user_seconds: 1, cpu_system_seconds: 2, rss_bytes: 3, extra: 'ignored' } } });
    const p = (await listed('caller')).process!;
    assert.deepEqual({ ...p, reported_at: 'x' }, {
      cpu_user_seconds: 1,
      cpu_system_seconds: 2,
      rss_bytes: 3,
      heap_used_bytes: null,
      heap_total_bytes: null,
      event_loop_lag_mean_ms: null,
      event_loop_lag_max_ms: null,
      interval_ms: null,
      reported_at: 'x',
    });
  });
});
