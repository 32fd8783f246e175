import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Args, Command, Flags } from '@oclif/core';
import { notListedMessage, removeWorkerEntry, workerNamesIn } from '../../../supervisor/worker-entries.js';
import { formatError, withClient, fail } from '../../client.js';
import { configFlag, runningEngine } from '../../project.js';

export default class WorkerRemove extends Command {
  static override summary = 'Remove a worker from config.yaml and stop it, letting its calls in flight finish first.';
  static override description = `New calls stop going to the worker at once (other replicas or workers serving the same functions take
them); the calls it is running may finish for --grace seconds; then it is stopped. --force stops it at
once, failing its calls in flight.`;
  static override examples = ['svc worker remove math-worker', 'svc worker remove svc-http --config other/config.yaml'];
  static override args = { name: Args.string({ required: true, description: 'Worker name.' }) };
  static override flags = {
    config: configFlag,
    grace: Flags.integer({ summary: 'Seconds its calls in flight may take to finish.', default: 30, min: 0, max: 300 }),
    force: Flags.boolean({ summary: 'Stop it at once (calls in flight fail).', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerRemove);
    const configFile = resolve(flags.config);
    // Before: a missing config.yaml was oclif's ENOENT block with its stack.
    if (!existsSync(configFile)) fail(`invalid_config: ${configFile}: file not found`, 2);
    const engine = runningEngine(configFile);
    let stopped = false;
    let drained = '';
    if (engine) {
      try {
        const drainMs = flags.force ? 0 : flags.grace * 1000;
        const r = await withClient(
          engine.url,
          (w) => w.trigger<{ removed: boolean; in_flight: number; left: number }>({ function_id: 'engine::supervisor::remove', payload: { name: args.name, drain_ms: drainMs }, timeoutMs: drainMs + 60_000 }),
          5000,
          process.env.SVC_TOKEN ?? engine.token,
        );
        stopped = r.removed;
        if (r.in_flight > 0) drained = r.left > 0 ? ` (${r.in_flight - r.left} of ${r.in_flight} calls in flight finished; ${r.left} did not within ${flags.grace}s)` : ` (after its ${r.in_flight} call(s) in flight finished)`;
      } catch (e) {
        removeWorkerEntry(configFile, args.name);
        process.stderr.write(formatError(e) + '\n');
        return this.exit(1);
      }
    }
    // After the engine's drain and stop, not before: under `svc dev` the engine applies config.yaml
    // itself, and an entry gone first had svc dev stop the worker at once, failing its calls in flight.
    const removed = removeWorkerEntry(configFile, args.name);
    // The absolute path, as restart's (from the engine) and every other config error name it.
    if (!removed && !stopped) fail(`worker_not_found: ${notListedMessage(args.name, workerNamesIn(configFile), configFile)}`, 1);
    this.log(`✓ removed ${args.name}${removed ? ` from ${flags.config}` : ''}${stopped ? ` and stopped it${drained}` : ''}`);
  }
}
