import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { loadConfig } from '../../../daemon/config-file.js';
import { BUILTIN_WORKERS, parseWorkerEntries } from '../../../supervisor/worker-entries.js';
import { printableJson } from '../../../engine/printable.js';
import { formatError, withClient } from '../../client.js';
import { configFlag, runningEngine, table } from '../../project.js';

/** engine::supervisor::list joins each worker with the connections proven to be its instances (src/supervisor/control.ts). */
interface SupRow { name: string; kind: string; runtime: string; pid: number | null; pids: number[]; status: string; restarts: number; replicas: number; connections: number; functions: string[] }

export default class WorkerList extends Command {
  static override summary = 'List the workers of config.yaml: kind, pid, status, restarts, functions.';
  static override flags = { config: configFlag, json: Flags.boolean({ summary: 'Print JSON.', default: false }) };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkerList);
    const configFile = resolve(flags.config);
    const engine = runningEngine(configFile);
    let rows: Array<Record<string, unknown>>;
    if (!engine) {
      const cfg = loadConfig(configFile, { create: false });
      rows = parseWorkerEntries(configFile, cfg.workers).map((e) => ({
        name: e.name,
        kind: e.builtin ?? 'directory',
        runtime: e.runtime,
        pid: null,
        status: 'stopped (engine not running)',
        restarts: 0,
        functions: [],
      }));
    } else {
      try {
        rows = await withClient(engine.url, async (w) => {
          const sup = (await w.trigger({ function_id: 'engine::supervisor::list' })) as { workers: SupRow[] };
          return sup.workers.map((s) => ({
            name: s.name,
            kind: s.kind === 'builtin' ? 'builtin' : 'directory',
            runtime: s.runtime + (s.replicas > 1 ? ` x${s.replicas}` : ''),
            pid: s.pids.length ? s.pids.join(',') : null,
            status: s.status === 'running' && s.connections === 0 ? 'running (not connected yet)' : s.status,
            restarts: s.restarts,
            functions: s.functions,
          }));
        }, 5000, process.env.SVC_TOKEN ?? engine.token);
      } catch (e) {
        process.stderr.write(formatError(e) + '\n');
        return this.exit(1);
      }
    }
    if (flags.json) this.log(printableJson(JSON.stringify(rows, null, 2)));
    else if (rows.length === 0) this.log(`No workers in ${flags.config}. Add one: svc worker add <dir|${BUILTIN_WORKERS.join('|')}>`);
    else this.log(table(rows, ['name', 'kind', 'runtime', 'pid', 'status', 'restarts', 'functions']));
  }
}
