import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { loadConfig } from '../../../daemon/config-file.js';
import { BUILTIN_WORKERS, parseWorkerEntries } from '../../../supervisor/worker-entries.js';
import { printableJson } from '../../../engine/printable.js';
import { ConfigFileError } from '../../../engine/config/config-error.js';
import { failWith, formatError, withClient } from '../../client.js';
import { internalFunctionIds } from '../../internal-functions.js';
import { configFlag, runningEngine, shortList, table } from '../../project.js';

/** engine::supervisor::list joins each worker with the connections proven to be its instances (src/supervisor/control.ts). */
interface SupRow {
  name: string;
  kind: string;
  runtime: string;
  pid: number | null;
  pids: number[];
  instances: Array<string | null>;
  status: string;
  restarts: number;
  replicas: number;
  connections: number;
  functions: string[];
  /** The namespaces its connections registered their functions in (iii 0.23+; `default` unless named). */
  namespaces: string[];
  /** The URLs its instances serve (svc-http's, with the port it bound). */
  urls: string[];
  last_error: string | null;
  last_exit: { how: string; at: string; output: string[] } | null;
  /** What its connected instances report of their processes, summed (engine::workers::report); null: none has. */
  process: { cpu_seconds: number; rss_bytes: number } | null;
}

/** Bytes as MiB for the table. */
const mib = (n: number): string => `${(n / (1024 * 1024)).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MiB`;

/** A status that says what a user needs to know: a worker running but not (yet) connected is not fine. */
function statusOf(s: SupRow): string {
  if (s.status === 'running' && s.connections < s.replicas) return s.connections === 0 ? 'running (not connected yet)' : `running (${s.connections}/${s.replicas} connected)`;
  return s.status;
}

export default class WorkerList extends Command {
  static override summary = 'List the workers of config.yaml: kind, pid, status, restarts, functions, last error.';
  static override description = `Every worker of config.yaml is listed, connected or not: starting, restarting, crash-loop (stopped after
repeated quick exits), stopped, failed. RESTARTS counts the engine's restarts after an unexpected exit
(a crash, a kill), not those asked for (svc worker restart, svc dev). LAST ERROR is how its latest unrequested exit went and its last
line of output; FUNCTIONS shows the first ones (… +N more), not those registered as internal (svc-cron's
cron::run_now::<process id>); --json adds every function, the last lines of output
(last_exit.output), pids, container ids and the URLs it serves (urls: svc-http's).`;
  static override examples = ['svc worker list', 'svc worker list --json'];
  static override flags = { config: configFlag, json: Flags.boolean({ summary: 'Print JSON (numbers as numbers; container ids for docker workers).', default: false }) };

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkerList);
    const configFile = resolve(flags.config);
    const engine = runningEngine(configFile);
    let rows: Array<Record<string, unknown>>;
    /** Functions registered as internal (svc-cron's cron::run_now::<process id>): left out of the table, kept in --json. */
    let internal = new Set<string>();
    if (!engine) {
      let entries;
      try {
        entries = parseWorkerEntries(configFile, loadConfig(configFile, { create: false, engineEnv: 'optional' }).workers);
      } catch (e) {
        if (e instanceof ConfigFileError) failWith(e, 2);
        throw e;
      }
      rows = entries.map((e) => ({
        name: e.name,
        kind: e.builtin ? 'builtin' : 'directory',
        runtime: e.runtime,
        replicas: e.replicas,
        pid: null,
        pids: [],
        instances: [],
        status: 'stopped (engine not running)',
        restarts: 0,
        connections: 0,
        functions: [],
        namespaces: [],
        urls: [],
        last_error: null,
        last_exit: null,
        process: null,
      }));
    } else {
      try {
        rows = await withClient(engine.url, async (w) => {
          const sup = (await w.trigger({ function_id: 'engine::supervisor::list' })) as { workers: SupRow[] };
          internal = await internalFunctionIds(w);
          return sup.workers.map((s) => ({
            name: s.name,
            kind: s.kind === 'builtin' ? 'builtin' : 'directory',
            runtime: s.runtime,
            replicas: s.replicas,
            pid: s.pid,
            pids: s.pids,
            instances: s.instances,
            status: statusOf(s),
            restarts: s.restarts,
            connections: s.connections,
            functions: s.functions,
            namespaces: s.namespaces,
            urls: s.urls,
            last_error: s.last_error,
            last_exit: s.last_exit,
            process: s.process ?? null,
          }));
        }, 5000, process.env.SVC_TOKEN ?? engine.token);
      } catch (e) {
        process.stderr.write(formatError(e) + '\n');
        return this.exit(1);
      }
    }
    if (flags.json) this.log(printableJson(JSON.stringify(rows, null, 2)));
    else if (rows.length === 0) this.log(`No workers in ${flags.config}. Add one: svc worker add <dir|${BUILTIN_WORKERS.join('|')}>`);
    else {
      const shown = rows.map((r) => ({
        ...r,
        runtime: `${String(r.runtime)}${Number(r.replicas) > 1 ? ` x${String(r.replicas)}` : ''}`,
        pid: (r.pids as number[]).length ? (r.pids as number[]).join(',') : r.runtime === 'docker' ? (r.instances as Array<string | null>).map((c) => (c ? c.slice(0, 12) : '-')).join(',') || null : null,
        cpu: r.process ? `${(r.process as SupRow['process'])!.cpu_seconds.toFixed(1)}s` : null,
        memory: r.process ? mib((r.process as SupRow['process'])!.rss_bytes) : null,
        functions: shortList((r.functions as string[]).filter((f) => !internal.has(f))),
        'last error': typeof r.last_error === 'string' && r.last_error.length > 80 ? r.last_error.slice(0, 79) + '…' : r.last_error,
      }));
      // The namespace column only once a worker is in one other than `default`.
      const namespaced = rows.some((r) => (r.namespaces as string[]).some((n) => n !== 'default'));
      const columns = ['name', 'kind', 'runtime', 'pid', 'status', 'restarts', 'cpu', 'memory', ...(namespaced ? ['namespaces'] : []), 'functions', 'last error'];
      this.log(table(shown, columns));
    }
  }
}
