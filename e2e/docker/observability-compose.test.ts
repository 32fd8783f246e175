/**
 * compose/observability.yml, the overlay that starts an OpenTelemetry Collector and Prometheus
 * beside docker-compose.yml's stack: compose merges it with the stack (`config`), the engine gets
 * the observability config, that config is one the engine accepts and carries the stack's tokens,
 * and the collector and Prometheus configurations are valid for the real programs (the collector
 * scripts/build-otelcol.sh builds, and Debian's promtool) and point at each other. No `up`: the
 * overlay's services listen on fixed ports of the host's loopback (docs/observability.md).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { parseConfig } from '../../src/daemon/config-file.js';
import { composeCommand } from '../../test/helpers/docker.js';
import { ROOT } from '../helpers/cli.js';

const compose = composeCommand();
let skip: string | undefined;
if (!compose) {
  if (process.env.CI === 'true') throw new Error('neither `docker compose` nor `docker-compose` is installed (scripts/install-system-deps.sh installs docker-compose)');
  skip = 'neither `docker compose` nor `docker-compose` is installed';
  process.stdout.write(`# skipping: ${skip}\n`);
}

interface Service {
  image?: string;
  network_mode?: string;
  command?: string[];
  volumes?: Array<string | { source: string; target: string }>;
  depends_on?: string[] | Record<string, unknown>;
}

/** A volume entry as `target ← source`, whichever form the compose version prints. */
const mounts = (s: Service): Map<string, string> =>
  new Map(
    (s.volumes ?? []).map((v) => {
      if (typeof v !== 'string') return [v.target, v.source];
      const [source, target] = v.split(':');
      return [target!, source!];
    }),
  );

const file = (p: string): string => readFileSync(join(ROOT, p), 'utf8');

describe('compose/observability.yml', { skip }, () => {
  it('merges with docker-compose.yml: the collector and Prometheus on the host network, the engine with the observability config', () => {
    const [cmd, ...pre] = compose!;
    const text = execFileSync(cmd!, [...pre, '-f', 'docker-compose.yml', '-f', 'compose/observability.yml', 'config'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, OTELCOL_IMAGE: '', PROMETHEUS_IMAGE: '', PROMETHEUS_PORT: '' },
    });
    const services = (parse(text) as { services: Record<string, Service> }).services;
    for (const name of ['engine', 'redis', 'svc-state', 'svc-http', 'svc-queue', 'svc-cron', 'math-worker', 'caller-worker', 'console', 'otelcol', 'prometheus']) {
      assert.ok(services[name], `${name} in the merged stack`);
    }
    const { engine, otelcol, prometheus } = services as Record<string, Service>;
    assert.equal(otelcol!.image, 'svc-otelcol:local');
    assert.equal(prometheus!.image, 'svc-prometheus:local');
    assert.equal(otelcol!.network_mode, 'host');
    assert.equal(prometheus!.network_mode, 'host');
    assert.equal(mounts(engine!).get('/project/config.yaml'), join(ROOT, 'compose-config/engine-observability.yaml'), 'the overlay replaces the engine config');
    assert.equal(mounts(otelcol!).get('/etc/otelcol/config.yaml'), join(ROOT, 'compose-config/otelcol.yaml'));
    assert.equal(mounts(prometheus!).get('/etc/prometheus/prometheus.yml'), join(ROOT, 'compose-config/prometheus.yml'));
    assert.ok(prometheus!.command?.includes('--web.listen-address=127.0.0.1:9090'), JSON.stringify(prometheus!.command));
  });

  it("the engine's observability config is the stack's plus metrics and telemetry, and the collector and Prometheus point at it", () => {
    const env = { SVC_ADMIN_TOKEN: 'a'.repeat(20), SVC_WORKER_TOKEN: 'w'.repeat(20), SVC_QUEUE_TOKEN: 'q'.repeat(20), SVC_CRON_TOKEN: 'c'.repeat(20) };
    const stack = parseConfig('engine.yaml', file('compose-config/engine.yaml'), env);
    const observed = parseConfig('engine-observability.yaml', file('compose-config/engine-observability.yaml'), env);
    const { metrics, telemetry, ...rest } = observed.engine;
    assert.deepEqual({ ...rest, metrics: null, telemetry: null }, { ...stack.engine, metrics: null, telemetry: null }, 'everything else as in engine.yaml (tokens included)');
    assert.deepEqual(observed.workers, stack.workers);
    assert.equal(metrics?.host, '127.0.0.1');
    assert.equal(metrics?.port, 9464);
    assert.equal(telemetry?.endpoint, 'http://127.0.0.1:4318');

    const collector = parse(file('compose-config/otelcol.yaml')) as { receivers: { otlp: { protocols: { http: { endpoint: string } } } } };
    assert.equal(collector.receivers.otlp.protocols.http.endpoint, '127.0.0.1:4318', 'the collector receives where the engine sends');
    const scrape = parse(file('compose-config/prometheus.yml')) as { scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }> };
    assert.deepEqual(scrape.scrape_configs.find((j) => j.job_name === 'svc-engine')?.static_configs[0]?.targets, ['127.0.0.1:9464']);
  });

  it('the collector configuration is valid for svc-otelcol, and the Prometheus one for promtool', (t) => {
    const bin = execFileSync('bash', [join(ROOT, 'scripts/build-otelcol.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!;
    execFileSync(bin, ['validate', '--config', `file:${join(ROOT, 'compose-config/otelcol.yaml')}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status !== 0) {
      if (process.env.CI === 'true') throw new Error('promtool is missing (Debian package prometheus; scripts/install-system-deps.sh)');
      t.skip('promtool is not installed');
      return;
    }
    const out = execFileSync('promtool', ['check', 'config', join(ROOT, 'compose-config/prometheus.yml')], { encoding: 'utf8' });
    assert.match(out, /SUCCESS/);
  });
});
