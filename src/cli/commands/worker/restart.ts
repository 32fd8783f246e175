import { resolve } from 'node:path';
import { Args, Command, Flags } from '@oclif/core';
import { failWith } from '../../client.js';
import { configFlag, noEngineError, runningEngine } from '../../project.js';
import { startWorker, waitFlag, whatItServes, whereItRuns } from '../../worker-start.js';

export default class WorkerRestart extends Command {
  static override summary = 'Restart a supervised worker (also after a crash loop) and wait for it to register.';
  static override description = 'If the worker exits before it registers, the command prints how it exited and its last lines of output, and exits 1.';
  static override examples = ['svc worker restart math-worker', 'svc worker restart caller-worker --force', 'svc worker restart svc-http --wait 0'];
  static override args = { name: Args.string({ required: true, description: 'Worker name.' }) };
  static override flags = { config: configFlag, force: Flags.boolean({ summary: 'Reinstall dependencies / rebuild first.', default: false }), wait: waitFlag };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerRestart);
    const engine = runningEngine(resolve(flags.config));
    if (!engine) failWith(noEngineError(flags.config, ` (start it: svc --config ${flags.config})`), 1);
    const d = await startWorker(engine, 'engine::supervisor::restart', { name: args.name, force: flags.force }, flags.wait);
    this.log(`✓ restarted ${args.name} (${whereItRuns(d)})${d.ready ? `, connected${whatItServes(d)}` : `; not connected yet${flags.wait > 0 ? ` after ${flags.wait}s` : ''} (svc worker list, svc worker logs ${args.name})`}`);
  }
}
