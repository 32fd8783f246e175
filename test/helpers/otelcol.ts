import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './util.js';

/** A span as the collector's debug exporter printed it. */
export interface CollectedSpan {
  traceId: string;
  parentId: string;
  spanId: string;
  name: string;
  service: string;
  attributes: Record<string, string>;
  /** Span events: name and attributes (the exception event of a failed call). */
  events: Array<{ name: string; attributes: Record<string, string> }>;
}

/** A log record as the debug exporter printed it. */
export interface CollectedLog {
  body: string;
  severity: string;
  traceId: string;
  spanId: string;
  service: string;
  attributes: Record<string, string>;
}

/**
 * A real OpenTelemetry Collector (svc-otelcol, scripts/build-otelcol.sh: built once from the Go
 * module proxy and cached) with an OTLP receiver on free gRPC and HTTP ports, printing what it
 * receives with its debug exporter (detailed), which `spans()` parses.
 */
export class Collector {
  private output = '';
  private constructor(
    private readonly proc: ChildProcess,
    private readonly dir: string,
    readonly httpEndpoint: string,
    readonly grpcEndpoint: string,
  ) {
    proc.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  static async start(): Promise<Collector> {
    const root = resolve(import.meta.dirname, '../../..');
    const bin = execFileSync('bash', [join(root, 'scripts/build-otelcol.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!;
    const dir = mkdtempSync(join(tmpdir(), 'svc-otelcol-'));
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    writeFileSync(
      join(dir, 'config.yaml'),
      [
        'receivers:',
        '  otlp:',
        '    protocols:',
        `      grpc: { endpoint: "127.0.0.1:${grpcPort}" }`,
        `      http: { endpoint: "127.0.0.1:${httpPort}" }`,
        'exporters:',
        '  debug: { verbosity: detailed }',
        'service:',
        '  telemetry: { metrics: { level: none } }',
        '  pipelines:',
        '    traces: { receivers: [otlp], exporters: [debug] }',
        '    logs: { receivers: [otlp], exporters: [debug] }',
        '    metrics: { receivers: [otlp], exporters: [debug] }',
        '',
      ].join('\n'),
    );
    const proc = spawn(bin, ['--config', `file:${join(dir, 'config.yaml')}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    const c = new Collector(proc, dir, `http://127.0.0.1:${httpPort}`, `http://127.0.0.1:${grpcPort}`);
    const end = Date.now() + 20_000;
    while (!c.output.includes('Everything is ready')) {
      if (proc.exitCode !== null || Date.now() > end) throw new Error(`svc-otelcol did not start:\n${c.output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return c;
  }

  /** Every span received so far. */
  spans(): CollectedSpan[] {
    const out: CollectedSpan[] = [];
    // The debug exporter prints each batch as "ResourceSpans #n", its resource attributes, then "Span #n" blocks.
    for (const resource of this.output.split('ResourceSpans #').slice(1)) {
      const [head, ...spans] = resource.split(/\nSpan #\d+\n/);
      const service = /-> service\.name: Str\(([^)]*)\)/.exec(head ?? '')?.[1] ?? '';
      for (const block of spans) {
        const m = /Trace ID\s*: (\w*)\s+Parent ID\s*: (\w*)\s+ID\s*: (\w*)\s+Name\s*: (.*)/.exec(block);
        if (!m) continue;
        const [own = '', ...eventBlocks] = block.split(/\nSpanEvent #\d+\n/);
        const attributes: Record<string, string> = {};
        for (const a of (own.split('Attributes:')[1] ?? '').matchAll(/-> ([\w.]+): \w+\((.*)\)/g)) attributes[a[1]!] = a[2]!;
        const events = eventBlocks.map((e) => {
          const attrs: Record<string, string> = {};
          // A value may span lines (a stack trace): it ends at the ")" before the next attribute or the block's end.
          for (const a of (e.split('Attributes::')[1] ?? '').matchAll(/-> ([\w.]+): \w+\(([\s\S]*?)\)(?=\n\s*-> |\s*$|\n\t)/g)) attrs[a[1]!] = a[2]!;
          return { name: /-> Name: (.*)/.exec(e)?.[1]?.trim() ?? '', attributes: attrs };
        });
        out.push({ traceId: m[1]!, parentId: m[2]!, spanId: m[3]!, name: m[4]!.trim(), service, attributes, events });
      }
    }
    return out;
  }

  /** Every log record received so far. */
  logs(): CollectedLog[] {
    const out: CollectedLog[] = [];
    for (const resource of this.output.split('ResourceLog #').slice(1)) {
      const [head, ...records] = resource.split(/\nLogRecord #\d+\n/);
      const service = /-> service\.name: Str\(([^)]*)\)/.exec(head ?? '')?.[1] ?? '';
      for (const block of records) {
        const attributes: Record<string, string> = {};
        const [, attrs = '', rest = ''] = /Attributes:\n([\s\S]*?)\n(Trace ID[\s\S]*)/.exec(block) ?? [];
        for (const a of attrs.matchAll(/-> ([\w.]+): \w+\((.*)\)/g)) attributes[a[1]!] = a[2]!;
        out.push({
          body: /Body: \w+\((.*)\)/.exec(block)?.[1] ?? '',
          severity: /SeverityText: (\w*)/.exec(block)?.[1] ?? '',
          traceId: /Trace ID: (\w*)/.exec(rest)?.[1] ?? '',
          spanId: /Span ID: (\w*)/.exec(rest)?.[1] ?? '',
          service,
          attributes,
        });
      }
    }
    return out;
  }

  /**
   * The data points of metric `name` received so far, oldest first: their attributes, value (a
   * sum's or gauge's value, a histogram's count) and the service.instance.id of their resource.
   */
  metricPoints(name: string): Array<{ attributes: Record<string, string>; value: number; instance: string }> {
    const out: Array<{ attributes: Record<string, string>; value: number; instance: string }> = [];
    for (const resource of this.output.split('ResourceMetrics #').slice(1)) {
      const [head, ...metrics] = resource.split(/\nMetric #\d+\n/);
      const instance = /-> service\.instance\.id: Str\(([^)]*)\)/.exec(head ?? '')?.[1] ?? '';
      for (const metric of metrics) {
        if (!metric.includes(`-> Name: ${name}\n`)) continue;
        for (const p of metric.split(/\n(?:Number|Histogram)DataPoints #\d+\n/).slice(1)) {
          const attributes: Record<string, string> = {};
          for (const a of (p.split('StartTimestamp')[0] ?? '').matchAll(/-> ([\w.]+): \w+\((.*)\)/g)) attributes[a[1]!] = a[2]!;
          const value = /\nValue: ([\d.e+-]+)/.exec(p)?.[1] ?? /\nCount: (\d+)/.exec(p)?.[1];
          if (value !== undefined) out.push({ attributes, value: Number(value), instance });
        }
      }
    }
    return out;
  }

  get log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
