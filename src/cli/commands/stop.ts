import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { readEngineState } from '../../daemon/engine-state.js';
import { fail, failWith } from '../client.js';
import { configFlag, noEngineError } from '../project.js';

export default class Stop extends Command {
  static override summary = 'Stop the engine of config.yaml (and the workers it runs), as Ctrl-C would.';
  static override description = `Sends SIGTERM to the engine recorded in .svc/engine.json beside config.yaml: calls in flight may finish
for engine.shutdown_grace_ms, then its workers stop and it exits. Waits until it is gone (--timeout seconds).`;
  static override examples = ['svc stop', 'svc stop --config other/config.yaml'];
  static override flags = {
    config: configFlag,
    timeout: Flags.integer({ summary: 'Seconds to wait for the engine to exit.', default: 60, min: 1 }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Stop);
    const file = resolve(flags.config);
    const engine = readEngineState(file);
    if (!engine) failWith(noEngineError(flags.config, ''), 1);
    process.kill(engine.pid, 'SIGTERM');
    const deadline = Date.now() + flags.timeout * 1000;
    while (readEngineState(file)?.pid === engine.pid) {
      if (Date.now() > deadline) fail(`the engine (pid ${engine.pid}) is still running after ${flags.timeout}s`, 1);
      await new Promise((r) => setTimeout(r, 100));
    }
    this.log(`✓ stopped the engine of ${flags.config} (pid ${engine.pid}, ${engine.url})`);
  }
}
