import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { printable, printableJson } from '../../engine/printable.js';
import { readEngineState } from '../../daemon/engine-state.js';
import { fail, formatError, withClient } from '../client.js';
import { isInternalMetadata } from '../internal-functions.js';
import { configFlag, noEngineMessage, shortList, table } from '../project.js';

const capitalized = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
import { listAll } from '../../engine/listing-pages.js';

interface SupRow {
  name: string;
  status: string;
  replicas: number;
  connections: number;
  restarts: number;
  functions: string[];
  /** What its instances serve (svc-http's URL, with the port it bound). */
  urls?: string[];
  last_error: string | null;
}

export default class Status extends Command {
  static override summary = 'The engine of config.yaml at a glance: address, uptime, workers with their status, functions.';
  static override examples = ['svc status', 'svc status --json'];
  static override flags = { config: configFlag, json: Flags.boolean({ summary: 'Print JSON.', default: false }) };

  async run(): Promise<void> {
    const { flags } = await this.parse(Status);
    const engine = readEngineState(resolve(flags.config));
    if (!engine) {
      if (flags.json) this.log(JSON.stringify({ running: false, config: flags.config }));
      else this.log(capitalized(noEngineMessage(flags.config, ` (start it: svc --config ${flags.config}, or svc dev)`)));
      return this.exit(3);
    }
    try {
      const { workers: listed, functions } = await withClient(
        engine.url,
        async (w) => ({
          workers: (await w.trigger<{ workers: SupRow[] }>({ function_id: 'engine::supervisor::list' })).workers,
          functions: await listAll<{ function_id: string; metadata?: unknown }>((payload) => w.trigger({ function_id: 'engine::functions::list', payload }), 'functions', { include_builtins: false }),
        }),
        5000,
        process.env.SVC_TOKEN ?? engine.token,
      );
      // Neither the engine's builtins nor the functions workers registered as internal (svc-cron's
      // cron::run_now::<process id>): plumbing, not functions to call.
      const internal = new Set(functions.filter((f) => isInternalMetadata(f.metadata)).map((f) => f.function_id));
      const own = functions.map((f) => f.function_id).filter((f) => !f.startsWith('engine::') && !internal.has(f));
      const workers = listed.map((w) => ({ ...w, functions: w.functions.filter((f) => !internal.has(f)) }));
      if (flags.json) {
        this.log(printableJson(JSON.stringify({ running: true, pid: engine.pid, url: engine.url, started_at: engine.started_at, workers, functions: own }, null, 2)));
        return;
      }
      const up = Math.round((Date.now() - Date.parse(engine.started_at)) / 1000);
      this.log(`engine    ${engine.url} (pid ${engine.pid}, up ${up}s)`);
      // svc-http's address: with `port: 0` nothing else but its log says which port it bound.
      for (const w of workers) if (w.urls?.length) this.log(printable(`http      ${w.urls.join(', ')} (${w.name})`));
      const down = workers.filter((w) => w.status !== 'running' || w.connections < w.replicas);
      this.log(`workers   ${workers.length} supervised, ${workers.length - down.length} connected${down.length ? `, ${down.length} not: ${down.map((w) => `${w.name} (${w.status})`).join(', ')}` : ''}`);
      this.log(`functions ${own.length}${own.length ? `: ${own.slice(0, 12).join(', ')}${own.length > 12 ? ', …' : ''}` : ''}`);
      if (workers.length) {
        this.log('');
        this.log(table(workers.map((w) => ({ ...w, functions: shortList(w.functions), connected: `${w.connections}/${w.replicas}`, 'last error': w.last_error })), ['name', 'status', 'connected', 'restarts', 'functions', 'last error']));
      }
    } catch (e) {
      fail(formatError(e).replace(/^error: /, ''), 1);
    }
  }
}
