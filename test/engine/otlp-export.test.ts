import { after, before, describe, test } from 'node:test';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import assert from 'node:assert/strict';
import { Logger, type Worker } from 'svc-sdk';
import { parseEngineConfig } from '../../src/engine/config/engine-config.js';
import type { TelemetryOptions } from '../../src/engine/telemetry/telemetry-options.js';
import { startEngine } from '../helpers/engine.js';
import { Collector } from '../helpers/otelcol.js';
import { eventually, freePort, sleep, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

const telemetry = (endpoint: string, protocol: TelemetryOptions['protocol']): TelemetryOptions => ({
  endpoint,
  protocol,
  serviceName: 'svc-engine-test',
  samplingRatio: 1,
  maxBatchSpans: 512,
  exportIntervalMs: 100,
  logs: true,
  metrics: true,
  metricsIntervalMs: 60_000,
});

/** A chain front → mid → leaf on three workers; returns a client to call it with. */
async function chain(eng: Eng, pool: WorkerPool): Promise<Worker> {
  const front = pool.make('front-worker');
  const mid = pool.make('mid-worker');
  const leaf = pool.make('leaf-worker');
  front.registerFunction('o::front', async (d: unknown) => front.trigger({ function_id: 'o::mid', payload: d }));
  mid.registerFunction('o::mid', async (d: unknown) => mid.trigger({ function_id: 'o::leaf', payload: d }));
  const logger = new Logger(leaf);
  leaf.registerFunction('o::leaf', async () => {
    logger.info('leaf ran', { n: 1 });
    return { ok: true };
  });
  const client = pool.make('otlp-client');
  await Promise.all([front, mid, leaf, client].map((w) => w.ready()));
  await eventually(() => assert.ok(['o::front', 'o::mid', 'o::leaf'].every((id) => eng.engine.registry.get(id))));
  return client;
}

/** The engine's own record of a trace (engine::traces::get) and what the collector received of it agree. */
async function assertExported(eng: Eng, collector: Collector, client: Worker): Promise<void> {
  await client.trigger({ function_id: 'o::front', payload: {} });
  const ring = eng.engine.traces!;
  const [latest] = ring.list({ limit: 1 });
  assert.ok(latest);
  const ours = ring.get(latest.trace_id)!.spans;
  assert.equal(ours.length, 3);
  await eventually(() => assert.equal(collector.spans().filter((s) => s.traceId === latest.trace_id).length, 3), 10_000).catch((e: Error) => {
    throw new Error(`${e.message}\ncollector output:\n${collector.log.slice(-4000)}`);
  });
  const theirs = collector.spans().filter((s) => s.traceId === latest.trace_id);
  for (const span of ours) {
    const got = theirs.find((s) => s.spanId === span.span_id);
    assert.ok(got, `span ${span.function_id} exported`);
    assert.equal(got.name, span.function_id);
    assert.equal(got.parentId, span.parent_span_id ?? '');
    assert.equal(got.service, 'svc-engine-test');
    assert.equal(got.attributes['svc.callee.worker'], span.callee_worker_name);
    assert.equal(got.attributes['svc.caller.worker'], span.caller_worker_name);
  }
  // Parent links: leaf's parent is mid's span, mid's is front's.
  const byName = new Map(theirs.map((s) => [s.name, s]));
  assert.equal(byName.get('o::leaf')!.parentId, byName.get('o::mid')!.spanId);
  assert.equal(byName.get('o::mid')!.parentId, byName.get('o::front')!.spanId);
  // The leaf's log line arrives with its trace id, under the leaf call's span.
  await eventually(() => assert.ok(collector.logs().some((l) => l.traceId === latest.trace_id)), 10_000);
  const line = collector.logs().find((l) => l.traceId === latest.trace_id)!;
  assert.equal(line.body, 'leaf ran');
  assert.equal(line.severity, 'INFO');
  assert.equal(line.spanId, byName.get('o::leaf')!.spanId);
  assert.equal(line.attributes['svc.worker'], 'leaf-worker');
  assert.equal(line.service, 'svc-engine-test');
}

describe('OTLP span export to a real OpenTelemetry Collector', () => {
  let collector: Collector;
  before(async () => {
    collector = await Collector.start();
  });
  after(async () => {
    await collector.stop();
  });

  for (const protocol of ['http/protobuf', 'grpc'] as const) {
    test(`${protocol}: every span of a trace arrives, with its parent links and attributes`, async () => {
      const eng = await startEngine({ telemetry: telemetry(protocol === 'grpc' ? collector.grpcEndpoint : collector.httpEndpoint, protocol) });
      const pool = new WorkerPool(() => eng.url);
      try {
        await assertExported(eng, collector, await chain(eng, pool));
        assert.equal(eng.engine.otlp!.spans.counts.dropped.export_failed, 0);
        // The metrics /metrics would show, over OTLP: calls by function and status, latency.
        await eng.engine.otlp!.flushMetrics();
        await eventually(() => {
          // This engine's points (its run id is the resource's service.instance.id), of o::leaf.
          const service = (p: { attributes: Record<string, string>; instance: string }): boolean => p.instance === eng.engine.run.id && p.attributes.function === 'o::leaf';
          const calls = collector.metricPoints('svc.engine.calls').filter((p) => service(p) && p.attributes.status === 'ok');
          assert.equal(calls.at(-1)?.value, 1);
          const durations = collector.metricPoints('svc.engine.call.duration').filter(service);
          assert.equal(durations.at(-1)?.value, 1);
        }, 10_000);
      } finally {
        await pool.closeAll();
        await eng.stop();
      }
    });
  }

  test('a failed call carries an exception event with the callee\'s code, message and stack', async () => {
    const eng = await startEngine({ telemetry: telemetry(collector.httpEndpoint, 'http/protobuf') });
    const pool = new WorkerPool(() => eng.url);
    try {
      const callee = pool.make('o-failing');
      callee.registerFunction('o::fail', () => {
        throw Object.assign(new Error('out of widgets'), { code: 'out_of_stock' });
      });
      callee.registerFunction('o::ok', () => 1);
      const client = pool.make('o-fail-client');
      await Promise.all([callee.ready(), client.ready()]);
      await assert.rejects(client.trigger({ function_id: 'o::fail' }), { code: 'out_of_stock' });
      await client.trigger({ function_id: 'o::ok' });
      const mine = (name: string) => collector.spans().find((s) => s.name === name && s.service === 'svc-engine-test' && s.attributes['svc.caller.worker'] === 'o-fail-client');
      await eventually(() => assert.ok(mine('o::fail') && mine('o::ok')), 10_000);
      const failed = mine('o::fail')!;
      assert.equal(failed.events.length, 1);
      assert.equal(failed.events[0]!.name, 'exception');
      assert.equal(failed.events[0]!.attributes['exception.type'], 'out_of_stock');
      assert.equal(failed.events[0]!.attributes['exception.message'], 'out of widgets');
      assert.match(failed.events[0]!.attributes['exception.stacktrace'] ?? '', /out of widgets/);
      assert.equal(failed.attributes['exception.type'], undefined, 'event attributes are not the span\'s');
      assert.deepEqual(mine('o::ok')!.events, []);
    } finally {
      await pool.closeAll();
      await eng.stop();
    }
  });

  test("workers' process reports and svc-state's counters arrive as svc.worker.* and svc.state.* metrics", async () => {
    const eng = await startEngine({ telemetry: telemetry(collector.httpEndpoint, 'http/protobuf') });
    const pool = new WorkerPool(() => eng.url);
    try {
      // No periodic reports of its own: the one below, with svc-state's counters, stays its latest.
      const reporter = pool.make('o-reporter', { processReportIntervalMs: 0 });
      await reporter.ready();
      const process = { cpu_user_seconds: 1, cpu_system_seconds: 1, rss_bytes: 1 };
      await reporter.trigger({ function_id: 'engine::workers::report', payload: { process, state: { sets: 3, set_bytes: 30 } } });
      await eng.engine.otlp!.flushMetrics();
      await eventually(async () => {
        const mine = (p: { attributes: Record<string, string>; instance: string }): boolean => p.instance === eng.engine.run.id && p.attributes.worker === 'o-reporter';
        assert.equal(collector.metricPoints('svc.worker.memory.rss').filter(mine).at(-1)?.value, 1);
        assert.equal(collector.metricPoints('svc.state.operations').filter((p) => mine(p) && p.attributes.op === 'set').at(-1)?.value, 3);
        assert.equal(collector.metricPoints('svc.state.set_bytes').filter(mine).at(-1)?.value, 30);
        assert.equal(collector.metricPoints('svc.worker.cpu.time').filter((p) => mine(p) && p.attributes.mode === 'user').at(-1)?.value, 1);
      }, 10_000);
    } finally {
      await pool.closeAll();
      await eng.stop();
    }
  });

  test('sampling_ratio 0 exports nothing', async () => {
    const eng = await startEngine({ telemetry: { ...telemetry(collector.httpEndpoint, 'http/protobuf'), samplingRatio: 0 } });
    const pool = new WorkerPool(() => eng.url);
    try {
      const client = await chain(eng, pool);
      await client.trigger({ function_id: 'o::front', payload: {} });
      const [latest] = eng.engine.traces!.list({ limit: 1 });
      await eng.engine.otlp!.flush();
      await sleep(300);
      assert.equal(collector.spans().filter((s) => s.traceId === latest!.trace_id).length, 0);
      assert.equal(eng.engine.otlp!.spans.counts.exported, 0);
    } finally {
      await pool.closeAll();
      await eng.stop();
    }
  });
});

describe('OTLP span export with the collector down', () => {
  test('calls are unaffected; failed batches are dropped and counted, one warning, then export waits', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const eng = await startEngine({ traceBufferSize: 50, telemetry: telemetry(nowhere, 'http/protobuf'), metrics: { host: '127.0.0.1', port: 0, maxFunctionSeries: 10, maxErrorCodeSeries: 10 } });
    const pool = new WorkerPool(() => eng.url);
    const warnings: string[] = [];
    try {
      const client = await chain(eng, pool);
      for (let i = 0; i < 5; i++) assert.deepEqual(await client.trigger({ function_id: 'o::front', payload: {} }), { ok: true });
      const exp = eng.engine.otlp!.spans;
      // The first batch fails (the exporter's own retries may take seconds), is dropped and counted.
      await eventually(() => assert.ok(exp.counts.dropped.export_failed > 0), 30_000);
      // In backoff (1 s after the failure), a tick reads and converts nothing.
      const failed = exp.counts.dropped.export_failed;
      await exp.tick();
      assert.equal(exp.counts.dropped.export_failed, failed);
      // More calls than the ring holds: when reading resumes, what it overwrote counts as dropped.
      for (let i = 0; i < 30; i++) assert.deepEqual(await client.trigger({ function_id: 'o::front', payload: {} }), { ok: true });
      await eventually(() => assert.ok(exp.counts.dropped.ring_overrun > 0), 30_000);
      for (const line of eng.engine.logs.list({ level: 'warn' })) warnings.push(line.message);
      assert.equal(warnings.filter((w) => w.startsWith('OTLP span export failed')).length, 1, warnings.join('\n'));
      await eventually(async () => {
        const text = await (await fetch(eng.engine.metricsAddress()!.url)).text();
        assert.match(text, /svc_engine_otlp_dropped_total\{signal="traces",reason="export_failed"\} [1-9]/);
        assert.match(text, /svc_engine_otlp_dropped_total\{signal="traces",reason="ring_overrun"\} [1-9]/);
      });
    } finally {
      await pool.closeAll();
      await eng.stop();
    }
  });
});

describe('OTLP export with a collector that never answers', () => {
  test('the engine stops within a few seconds: the last export and the exporters\' shutdown are bounded', async () => {
    // Accepts connections, reads the requests, never answers: each export waits for its timeout.
    const sockets = new Set<Socket>();
    const silent = createServer((s) => {
      sockets.add(s);
      s.on('data', () => {});
      s.on('error', () => {});
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const eng = await startEngine({ telemetry: { ...telemetry(endpoint, 'http/protobuf'), metricsIntervalMs: 100 } });
    const pool = new WorkerPool(() => eng.url);
    try {
      const client = await chain(eng, pool);
      for (let i = 0; i < 5; i++) await client.trigger({ function_id: 'o::front', payload: {} });
      await eventually(() => assert.ok(sockets.size > 0, 'an export reached the silent collector'), 5000);
    } finally {
      await pool.closeAll();
      const t0 = Date.now();
      await eng.stop();
      const ms = Date.now() - t0;
      // Nothing of the engine's is left waiting on the collector either: each export request gives
      // up within EXPORT_TIMEOUT_MS (2 s), so the daemon's process can exit (the exporters' own
      // 10 s default kept it alive after "engine stopped").
      const open = (): number => [...sockets].filter((s) => !s.destroyed).length;
      const waitUntil = Date.now() + 4000;
      while (open() > 0 && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 50));
      const stillOpen = open();
      for (const s of sockets) s.destroy();
      silent.close();
      assert.ok(ms < 6000, `stop took ${ms} ms`);
      assert.equal(stillOpen, 0, `${stillOpen} export request(s) still open 4 s after stop`);
    }
  });
});

describe('engine.telemetry in config.yaml', () => {
  const env = {};
  test('absent: from OTEL_EXPORTER_OTLP_ENDPOINT, else off; false: off', () => {
    assert.equal(parseEngineConfig('c.yaml', {}, env).telemetry, null);
    const fromEnv = parseEngineConfig('c.yaml', {}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_SERVICE_NAME: 'api' }).telemetry;
    assert.equal(fromEnv?.protocol, 'grpc');
    assert.equal(fromEnv?.serviceName, 'api');
    assert.equal(fromEnv?.endpoint, undefined, 'the exporter reads the endpoint from the environment itself');
    assert.equal(parseEngineConfig('c.yaml', { telemetry: false }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).telemetry, null);
    assert.equal(parseEngineConfig('c.yaml', { telemetry: true }, { OTEL_SDK_DISABLED: 'true' }).telemetry, null);
    const signals = parseEngineConfig('c.yaml', { telemetry: { metrics_interval_ms: 5000 } }, { OTEL_LOGS_EXPORTER: 'none' }).telemetry;
    assert.deepEqual([signals?.logs, signals?.metrics, signals?.metricsIntervalMs], [false, true, 5000]);
    const noMetrics = parseEngineConfig('c.yaml', { telemetry: true }, { OTEL_METRICS_EXPORTER: 'none', OTEL_METRIC_EXPORT_INTERVAL: '7000' }).telemetry;
    assert.deepEqual([noMetrics?.logs, noMetrics?.metrics, noMetrics?.metricsIntervalMs], [true, false, 7000]);
  });

  test('a mapping, with ${ENV} in header values', () => {
    const t = parseEngineConfig(
      'c.yaml',
      { telemetry: { endpoint: 'https://api.honeycomb.io', headers: { 'x-honeycomb-team': '${HC_KEY}' }, sampling_ratio: 0.25, service_name: 'svc' } },
      { HC_KEY: 'secret' },
    ).telemetry;
    assert.deepEqual(t, { protocol: 'http/protobuf', serviceName: 'svc', samplingRatio: 0.25, maxBatchSpans: 512, exportIntervalMs: 1000, logs: true, metrics: true, metricsIntervalMs: 60000, endpoint: 'https://api.honeycomb.io', headers: { 'x-honeycomb-team': 'secret' } });
  });

  test('bad values are refused naming the key', () => {
    assert.throws(() => parseEngineConfig('c.yaml', { telemetry: { protocol: 'http/json' } }, env), /engine\.telemetry\.protocol: must be one of http\/protobuf, grpc/);
    assert.throws(() => parseEngineConfig('c.yaml', { telemetry: { sampling_ratio: 2 } }, env), /engine\.telemetry\.sampling_ratio: must be a number from 0 to 1/);
    assert.throws(() => parseEngineConfig('c.yaml', { telemetry: { endpoint: 'collector:4317' } }, env), /engine\.telemetry\.endpoint: must be an http/);
    assert.throws(() => parseEngineConfig('c.yaml', { telemetry: { url: 'x' } }, env), /engine\.telemetry\.url: unknown key/);
    assert.throws(() => parseEngineConfig('c.yaml', { tracing: false, telemetry: true }, env), /engine\.tracing is false/);
  });
});
