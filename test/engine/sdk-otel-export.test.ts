import { after, before, describe, test } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { otelEnabled, samplerFromEnv } from 'svc-sdk/internal';
import * as sdkTrace from '@opentelemetry/sdk-trace';
import { startEngine } from '../helpers/engine.js';
import { Collector, type CollectedSpan } from '../helpers/otelcol.js';
import { Logger } from 'svc-sdk';
import { eventually, WorkerPool } from '../helpers/util.js';

/**
 * svc-sdk's own spans (WorkerOptions.otel / OTEL_TRACES_EXPORTER=otlp), exported to a real
 * OpenTelemetry Collector beside the engine's: one trace, with the SDK's CLIENT and SERVER spans
 * linked to the engine's spans in between.
 */

describe("svc-sdk's own spans over OTLP", () => {
  let collector: Collector;
  const saved = { ...process.env };
  before(async () => {
    collector = await Collector.start();
    // The SDK's exporter reads its endpoint from the environment, as the OpenTelemetry spec says.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.httpEndpoint;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    process.env.OTEL_BLRP_SCHEDULE_DELAY = '100';
  });
  after(async () => {
    process.env = saved;
    await collector.stop();
  });

  test('a call chain client → engine → front → engine → leaf is one trace with every link, and the log line under its span', async () => {
    const telemetry = { endpoint: collector.httpEndpoint, protocol: 'http/protobuf' as const, serviceName: 'svc-engine-otel', samplingRatio: 1, maxBatchSpans: 512, exportIntervalMs: 100, logs: true, metrics: false, metricsIntervalMs: 60_000 };
    const eng = await startEngine({ telemetry });
    const pool = new WorkerPool(() => eng.url);
    try {
      const front = pool.make('otel-front', { otel: true });
      const leaf = pool.make('otel-leaf', { otel: true });
      const client = pool.make('otel-client', { otel: true });
      front.registerFunction('ot::front', (d: unknown) => front.trigger({ function_id: 'ot::leaf', payload: d }));
      const logger = new Logger(leaf);
      leaf.registerFunction('ot::leaf', () => {
        logger.warn('leaf ran', { n: 1 });
        return { ok: true };
      });
      await Promise.all([front, leaf, client].map((w) => w.ready()));
      await eventually(() => assert.ok(eng.engine.registry.get('ot::front') && eng.engine.registry.get('ot::leaf')));
      assert.deepEqual(await client.trigger({ function_id: 'ot::front', payload: {} }), { ok: true });

      const clientSpan = await eventually(() => assert.ok(collector.spans().some((s) => s.service === 'otel-client')), 10_000).then(() => collector.spans().find((s) => s.service === 'otel-client')!);
      const trace = (): CollectedSpan[] => collector.spans().filter((s) => s.traceId === clientSpan.traceId);
      await eventually(() => assert.equal(trace().length, 6, JSON.stringify(trace().map((s) => `${s.service}:${s.name}`))), 10_000);
      const one = (service: string, name: string): CollectedSpan => {
        const found = trace().filter((s) => s.service === service && s.name === name);
        assert.equal(found.length, 1, `${service} ${name}`);
        return found[0]!;
      };
      // client CLIENT → engine ot::front → front SERVER → front CLIENT → engine ot::leaf → leaf SERVER
      const engFront = one('svc-engine-otel', 'ot::front');
      const frontServer = one('otel-front', 'ot::front');
      const frontClient = one('otel-front', 'ot::leaf');
      const engLeaf = one('svc-engine-otel', 'ot::leaf');
      const leafServer = one('otel-leaf', 'ot::leaf');
      assert.equal(clientSpan.name, 'ot::front');
      assert.equal(clientSpan.parentId, '');
      assert.equal(engFront.parentId, clientSpan.spanId);
      assert.equal(frontServer.parentId, engFront.spanId);
      assert.equal(frontClient.parentId, frontServer.spanId);
      assert.equal(engLeaf.parentId, frontClient.spanId);
      assert.equal(leafServer.parentId, engLeaf.spanId);
      assert.equal(leafServer.attributes['svc.worker'], 'otel-leaf');
      assert.equal(leafServer.attributes['rpc.method'], 'ot::leaf');
      // The leaf's Logger line, exported by the leaf itself, under its SERVER span.
      await eventually(() => assert.ok(collector.logs().some((l) => l.service === 'otel-leaf')), 10_000);
      const line = collector.logs().find((l) => l.service === 'otel-leaf')!;
      assert.deepEqual([line.body, line.severity, line.traceId, line.spanId], ['leaf ran', 'WARN', clientSpan.traceId, leafServer.spanId]);
      assert.equal(line.attributes['svc.data'], '{"n":1}');
      assert.equal(line.attributes['svc.function_id'], 'ot::leaf');
    } finally {
      await pool.closeAll();
      await eng.stop();
    }
  });

  test('off by default: a worker loads no @opentelemetry module; OTEL_TRACES_EXPORTER=otlp turns export on', async () => {
    const eng = await startEngine();
    const dir = mkdtempSync(join(tmpdir(), 'svc-otel-off-'));
    try {
      // A module hook records every @opentelemetry module the child resolves.
      const hooks = `import { appendFileSync } from 'node:fs';
        export async function resolve(specifier, context, next) {
          const r = await next(specifier, context);
          if (r.url.includes('@opentelemetry')) appendFileSync(process.env.LOADED_FILE, r.url + '\\n');
          return r;
        }`;
      const program = `import { register } from 'node:module';
        register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));
        const { registerWorker } = await import('svc-sdk');
        const w = registerWorker(process.env.SVC_URL, { workerName: 'otel-off', echoLogs: false });
        w.registerFunction('off::echo', (d) => d);
        await w.ready();
        const r = await w.trigger({ function_id: 'off::echo', payload: { n: 1 } });
        await w.shutdown();
        process.stdout.write(JSON.stringify(r));`;
      const run = async (env: Record<string, string>): Promise<string[]> => {
        const loadedFile = join(dir, `loaded-${Object.keys(env).length}`);
        const child = spawn(process.execPath, ['--input-type=module', '-e', program], {
          cwd: join(import.meta.dirname, '../../..'),
          env: { ...saved, SVC_URL: eng.url, LOADED_FILE: loadedFile, OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
        assert.equal(code, 0, err);
        assert.equal(out, '{"n":1}');
        try {
          return readFileSync(loadedFile, 'utf8').trim().split('\n');
        } catch {
          return [];
        }
      };
      assert.deepEqual(await run({}), []);
      // The same harness sees the packages load when export is on (so an empty list means something).
      const loaded = await run({ OTEL_TRACES_EXPORTER: 'otlp' });
      assert.ok(loaded.some((u) => u.includes('@opentelemetry/sdk-trace')), loaded.join('\n'));
      await eventually(() => assert.ok(collector.spans().some((s) => s.service === 'otel-off' && s.name === 'off::echo')), 10_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await eng.stop();
    }
  });

  test('OTEL_TRACES_SAMPLER=always_off: the worker exports no span of its own, and its calls work', async () => {
    const telemetry = { endpoint: collector.httpEndpoint, protocol: 'http/protobuf' as const, serviceName: 'svc-engine-sampler', samplingRatio: 1, maxBatchSpans: 512, exportIntervalMs: 100, logs: false, metrics: false, metricsIntervalMs: 60_000 };
    const eng = await startEngine({ telemetry });
    const pool = new WorkerPool(() => eng.url);
    try {
      process.env.OTEL_TRACES_SAMPLER = 'always_off';
      const quiet = pool.make('otel-sampled-off', { otel: true });
      await quiet.ready();
      delete process.env.OTEL_TRACES_SAMPLER;
      const loud = pool.make('otel-sampled-on', { otel: true });
      quiet.registerFunction('smp::quiet', () => 1);
      await loud.ready();
      await eventually(() => assert.ok(eng.engine.registry.get('smp::quiet')));
      // loud's CLIENT span is sampled (a root under parentbased_always_on); quiet's SERVER span under always_off is not.
      assert.equal(await loud.trigger({ function_id: 'smp::quiet' }), 1);
      await eventually(() => assert.ok(collector.spans().some((s) => s.service === 'otel-sampled-on' && s.name === 'smp::quiet')), 10_000);
      await eventually(() => assert.equal(collector.spans().filter((s) => s.service === 'svc-engine-sampler').length, 1), 10_000);
      await quiet.shutdown();
      assert.deepEqual(collector.spans().filter((s) => s.service === 'otel-sampled-off'), []);
    } finally {
      delete process.env.OTEL_TRACES_SAMPLER;
      await pool.closeAll();
      await eng.stop();
    }
  });

  test('samplerFromEnv: the spec\'s names and argument; unknown ones warn and fall back to parentbased_always_on', () => {
    const warnings: string[] = [];
    const named = (env: NodeJS.ProcessEnv) => samplerFromEnv(sdkTrace, env, (m) => warnings.push(m)).toString();
    assert.match(named({}), /^ParentBased\{root=AlwaysOnSampler/);
    assert.equal(named({ OTEL_TRACES_SAMPLER: 'always_off' }), 'AlwaysOffSampler');
    assert.equal(named({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }), 'TraceIdRatioBased{0.25}');
    assert.match(named({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }), /^ParentBased\{root=TraceIdRatioBased\{0\}/);
    assert.equal(warnings.length, 0);
    assert.match(named({ OTEL_TRACES_SAMPLER: 'sometimes' }), /^ParentBased\{root=AlwaysOnSampler/);
    assert.match(warnings[0] ?? '', /OTEL_TRACES_SAMPLER="sometimes" is not one of/);
    assert.equal(named({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }), 'TraceIdRatioBased{1}');
    assert.match(warnings[1] ?? '', /OTEL_TRACES_SAMPLER_ARG="2" is not a ratio/);
  });

  test('otelEnabled: the option wins, else OTEL_TRACES_EXPORTER lists otlp, unless OTEL_SDK_DISABLED=true', () => {
    assert.equal(otelEnabled(undefined, {}), false);
    assert.equal(otelEnabled(undefined, { OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(otelEnabled(undefined, { OTEL_TRACES_EXPORTER: 'console, otlp' }), true);
    assert.equal(otelEnabled(undefined, { OTEL_TRACES_EXPORTER: 'none' }), false);
    assert.equal(otelEnabled(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(otelEnabled(false, { OTEL_TRACES_EXPORTER: 'otlp' }), false);
    assert.equal(otelEnabled(true, {}), true);
  });
});
