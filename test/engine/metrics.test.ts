import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { Counter, Registry } from 'prom-client';
import { InvocationError, type Worker } from 'svc-sdk';
import { MetricsServer } from '../../src/engine/metrics/metrics-server.js';
import { parseEngineConfig } from '../../src/engine/config/engine-config.js';
import { startEngine } from '../helpers/engine.js';
import { eventually, WorkerPool } from '../helpers/util.js';

type Eng = Awaited<ReturnType<typeof startEngine>>;

/** The value of one sample line of a Prometheus text exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

async function scrape(eng: Eng): Promise<string> {
  const url = eng.engine.metricsAddress()?.url;
  assert.ok(url, 'metrics are served');
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
}

describe('engine metrics (/metrics)', () => {
  let eng: Eng;
  const pool = new WorkerPool(() => eng.url);
  let client: Worker;

  before(async () => {
    // Two function ids get series of their own; the third counts under _other.
    eng = await startEngine({ metrics: { host: '127.0.0.1', port: 0, maxFunctionSeries: 2, maxErrorCodeSeries: 2 } });
    const w = pool.make('math-worker');
    w.registerFunction('math::add', async (d: { a: number; b: number }) => ({ sum: d.a + d.b }));
    w.registerFunction('math::fail', async (d: { code: string }) => {
      throw new InvocationError(d.code, 'failed on purpose');
    });
    w.registerFunction('math::third', async () => ({ ok: true }));
    client = pool.make('caller');
    await Promise.all([w.ready(), client.ready()]);
    // Registration frames are asynchronous: no call is made (and counted) before all three are in.
    await eventually(() => assert.ok(['math::add', 'math::fail', 'math::third'].every((id) => eng.engine.registry.get(id))));
  });

  after(async () => {
    await pool.closeAll();
    await eng.stop();
  });

  test('counts calls by function and status, latency, errors by code, connections and traffic', async () => {
    for (let i = 0; i < 7; i++) await client.trigger({ function_id: 'math::add', payload: { a: i, b: 1 } });
    for (const code of ['bad_input', 'bad_input', 'worker_code_2', 'worker_code_3']) {
      await assert.rejects(client.trigger({ function_id: 'math::fail', payload: { code } }));
    }
    await client.trigger({ function_id: 'math::third', payload: {} });
    await assert.rejects(client.trigger({ function_id: 'math::missing', payload: {} }), /function_not_found|not found/i);

    const text = await scrape(eng);
    if (process.env.SHOW) console.log(text);
    assert.equal(sample(text, 'svc_engine_calls_total{function="math::add",status="ok"}'), 7);
    assert.equal(sample(text, 'svc_engine_calls_total{function="math::fail",status="error"}'), 4);
    // The third function id is beyond max_function_series: its calls count, under _other.
    assert.equal(sample(text, 'svc_engine_calls_total{function="_other",status="ok"}'), 1);
    assert.equal(text.includes('math::third'), false);
    assert.equal(sample(text, 'svc_engine_call_duration_seconds_count{function="math::add"}'), 7);
    assert.equal(sample(text, 'svc_engine_call_duration_seconds_bucket{function="math::add",le="+Inf"}'), 7);
    assert.ok((sample(text, 'svc_engine_call_duration_seconds_sum{function="math::add"}') ?? 0) > 0);
    // Error codes: two get series of their own, the rest count under _other.
    assert.equal(sample(text, 'svc_engine_errors_total{code="bad_input"}'), 2);
    assert.equal(sample(text, 'svc_engine_errors_total{code="worker_code_2"}'), 1);
    assert.equal(sample(text, 'svc_engine_errors_total{code="_other"}'), 2, 'worker_code_3 and function_not_found');
    assert.equal(sample(text, 'svc_engine_call_refusals_total'), 1);
    assert.equal(sample(text, 'svc_engine_calls_in_flight'), 0);
    assert.equal(sample(text, 'svc_engine_connections{kind="worker"}'), 2);
    assert.ok((sample(text, 'svc_engine_frames_received_total') ?? 0) >= 12 * 2);
    assert.ok((sample(text, 'svc_engine_frames_sent_total') ?? 0) >= 12 * 2);
    assert.ok((sample(text, 'svc_engine_received_bytes_total') ?? 0) > 1000);
    assert.ok((sample(text, 'svc_engine_sent_bytes_total') ?? 0) > 1000);
    assert.ok((sample(text, 'process_resident_memory_bytes') ?? 0) > 0, 'process metrics of the engine');
  });

  test('only GET /metrics is served', async () => {
    const url = eng.engine.metricsAddress()!.url;
    assert.equal((await fetch(url.replace('/metrics', '/'))).status, 404);
    assert.equal((await fetch(url, { method: 'POST', body: 'x' })).status, 404);
  });

  test('off unless configured', async () => {
    const plain = await startEngine();
    try {
      assert.equal(plain.engine.metricsAddress(), null);
      assert.equal(plain.engine.callMetrics, null);
    } finally {
      await plain.stop();
    }
  });
});

describe('engine.metrics in config.yaml', () => {
  test('true, a mapping, or off', () => {
    assert.equal(parseEngineConfig('c.yaml', {}).metrics, null);
    assert.equal(parseEngineConfig('c.yaml', { metrics: false }).metrics, null);
    assert.deepEqual(parseEngineConfig('c.yaml', { metrics: true }).metrics, { host: '127.0.0.1', port: 9464, maxFunctionSeries: 1000, maxErrorCodeSeries: 100 });
    assert.deepEqual(parseEngineConfig('c.yaml', { metrics: { host: '0.0.0.0', port: 9100, max_function_series: 50 } }).metrics, {
      host: '0.0.0.0',
      port: 9100,
      maxFunctionSeries: 50,
      maxErrorCodeSeries: 100,
    });
  });

  test('bad values are refused naming the key', () => {
    assert.throws(() => parseEngineConfig('c.yaml', { metrics: { port: 'x' } }), /c\.yaml: engine\.metrics\.port: must be an integer port/);
    assert.throws(() => parseEngineConfig('c.yaml', { metrics: { max_function_series: 0 } }), /engine\.metrics\.max_function_series: must be an integer from 1/);
    assert.throws(() => parseEngineConfig('c.yaml', { metrics: { path: '/m' } }), /engine\.metrics\.path: unknown key/);
    assert.throws(() => parseEngineConfig('c.yaml', { metrics: 'yes' }), /engine\.metrics: must be true, false or a mapping/);
  });

  test('a port in use stops the start with metrics_unavailable', async () => {
    const first = await startEngine({ metrics: { host: '127.0.0.1', port: 0, maxFunctionSeries: 10, maxErrorCodeSeries: 10 } });
    try {
      const taken = first.engine.metricsAddress()!.port;
      await assert.rejects(startEngine({ metrics: { host: '127.0.0.1', port: taken, maxFunctionSeries: 10, maxErrorCodeSeries: 10 } }), (e: Error & { code?: string }) => {
        assert.equal(e.code, 'metrics_unavailable');
        assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${taken}`));
        return true;
      });
    } finally {
      await first.stop();
    }
  });
});

describe('the metrics port against browsers and floods', () => {
  let server: MetricsServer;
  let url: string;
  let renderings = 0;

  before(async () => {
    // A real registry; its metrics() is wrapped only to count how often the text is rendered.
    const registry = new Registry();
    new Counter({ name: 'svc_test_total', help: 'a test counter', registers: [registry] }).inc(3);
    const render = registry.metrics.bind(registry);
    registry.metrics = () => {
      renderings++;
      return render();
    };
    server = new MetricsServer(registry);
    url = (await server.start('127.0.0.1', 0)).url;
  });
  after(() => server.stop());

  test('a request with an Origin is refused (web pages), and so is a Host that is not loopback (DNS rebinding)', async () => {
    const fromPage = await get(url, { origin: 'http://attacker.example' });
    assert.equal(fromPage.status, 403);
    assert.match(fromPage.body, /^origin_not_allowed: .*"http:\/\/attacker\.example"/);
    const rebound = await get(url, { host: `attacker.example:${new URL(url).port}` });
    assert.equal(rebound.status, 403);
    assert.match(rebound.body, /^host_not_allowed: .*"attacker\.example:\d+"/);
    for (const host of ['localhost', '127.0.0.1', '[::1]']) {
      const ok = await get(url, { host: `${host}:${new URL(url).port}` });
      assert.equal(ok.status, 200, host);
      assert.match(ok.body, /svc_test_total 3/);
    }
  });

  test('concurrent scrapes share one rendering', async () => {
    await new Promise((r) => setTimeout(r, 300));
    const before = renderings;
    const answers = await Promise.all(Array.from({ length: 50 }, () => get(url, {})));
    assert.ok(answers.every((a) => a.status === 200 && /svc_test_total 3/.test(a.body)));
    assert.equal(renderings - before, 1, `50 concurrent scrapes rendered ${renderings - before} times`);
  });
});

/** A GET with the headers given as they are (fetch does not let a caller set Host or Origin). */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
