import { resolve } from 'node:path';
import { Args, Command, Flags } from '@oclif/core';
import { formatError, withClient, fail } from '../../client.js';
import { configFlag, runningEngine } from '../../project.js';

export default class WorkerRestart extends Command {
  static override summary = 'Restart a supervised worker (also after a crash loop).';
  static override args = { name: Args.string({ required: true, description: 'Worker name.' }) };
  static override flags = { config: configFlag, force: Flags.boolean({ summary: 'Reinstall dependencies / rebuild first.', default: false }) };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerRestart);
    const engine = runningEngine(resolve(flags.config));
    if (!engine) fail(`no engine is running for ${flags.config} (start it: svc --config ${flags.config})`, 1);
    try {
      const d = (await withClient(engine.url, (w) =>
        w.trigger({ function_id: 'engine::supervisor::restart', payload: { name: args.name, force: flags.force }, timeoutMs: 600_000 }),
        5000,
        process.env.SVC_TOKEN ?? engine.token,
      )) as { pid: number | null; status: string };
      this.log(`✓ restarted ${args.name} (${d.pid ? `pid ${d.pid}` : d.status})`);
    } catch (e) {
      process.stderr.write(formatError(e) + '\n');
      this.exit(1);
    }
  }
}
