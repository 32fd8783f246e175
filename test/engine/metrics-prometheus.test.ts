import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEngine } from '../helpers/engine.js';
import { eventually, freePort, WorkerPool } from '../helpers/util.js';

/**
 * A real Prometheus (Debian's `prometheus` package; scripts/install-system-deps.sh) scrapes the
 * engine's /metrics every second, and a PromQL query over its HTTP API returns the call count of
 * math::add after known traffic.
 */
describe('Prometheus scrapes the engine', () => {
  let eng: Awaited<ReturnType<typeof startEngine>>;
  const pool = new WorkerPool(() => eng.url);
  let prometheus: ChildProcess | null = null;
  let promUrl = '';
  let log = '';
  const dir = mkdtempSync(join(tmpdir(), 'svc-prometheus-'));

  before(async () => {
    eng = await startEngine({ metrics: { host: '127.0.0.1', port: 0, maxFunctionSeries: 100, maxErrorCodeSeries: 100 } });
    const target = `127.0.0.1:${eng.engine.metricsAddress()!.port}`;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: svc-engine\n    static_configs:\n      - targets: ['${target}']\n`,
    );
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    prometheus.on('error', (e) => (log += `spawn failed: ${e.message} (install it: scripts/install-system-deps.sh)\n`));
    prometheus.stdout?.on('data', (d: Buffer) => (log += d.toString()));
    prometheus.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const w = pool.make('math-worker');
    w.registerFunction('math::add', async (d: { a: number; b: number }) => ({ sum: d.a + d.b }));
    await w.ready();
    await eventually(() => assert.ok(eng.engine.registry.get('math::add')));
  });

  after(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus!.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await pool.closeAll();
    await eng.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a PromQL query returns the call count of math::add', async () => {
    const client = pool.make('caller');
    await client.ready();
    for (let i = 0; i < 9; i++) await client.trigger({ function_id: 'math::add', payload: { a: i, b: i } });
    const query = async (q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> => {
      const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
      const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      assert.equal(body.status, 'success');
      return body.data.result;
    };
    try {
      await eventually(async () => {
        const [r] = await query('svc_engine_calls_total{function="math::add",status="ok"}');
        assert.equal(r?.value[1], '9');
        assert.equal(r?.metric.job, 'svc-engine');
      }, 30_000);
      // The histogram is one PromQL can use: the count of math::add's latencies.
      const [count] = await query('sum(svc_engine_call_duration_seconds_count{function="math::add"})');
      assert.equal(count?.value[1], '9');
      const [up] = await query('up{job="svc-engine"}');
      assert.equal(up?.value[1], '1');
    } catch (e) {
      throw new Error(`${(e as Error).message}\nprometheus output:\n${log.slice(-3000)}`);
    }
  });
});
