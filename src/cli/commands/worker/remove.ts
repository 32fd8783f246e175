import { resolve } from 'node:path';
import { Args, Command } from '@oclif/core';
import { removeWorkerEntry } from '../../../supervisor/worker-entries.js';
import { formatError, withClient, fail } from '../../client.js';
import { configFlag, runningEngine } from '../../project.js';

export default class WorkerRemove extends Command {
  static override summary = 'Remove a worker from config.yaml and stop it.';
  static override examples = ['svc worker remove math-worker', 'svc worker remove svc-http --config other/config.yaml'];
  static override args = { name: Args.string({ required: true, description: 'Worker name.' }) };
  static override flags = { config: configFlag };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerRemove);
    const configFile = resolve(flags.config);
    const removed = removeWorkerEntry(configFile, args.name);
    const engine = runningEngine(configFile);
    let stopped = false;
    if (engine) {
      try {
        stopped = ((await withClient(engine.url, (w) => w.trigger({ function_id: 'engine::supervisor::remove', payload: { name: args.name } }), 5000, process.env.SVC_TOKEN ?? engine.token)) as { removed: boolean }).removed;
      } catch (e) {
        process.stderr.write(formatError(e) + '\n');
        return this.exit(1);
      }
    }
    if (!removed && !stopped) fail(`worker ${args.name} is not in ${flags.config}`, 1);
    this.log(`✓ removed ${args.name}${removed ? ` from ${flags.config}` : ''}${stopped ? ' and stopped it' : ''}`);
  }
}
