import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { DaemonStartError, startDaemon, type Daemon } from '../../daemon/daemon.js';
import { runUntilSignalled } from '../../daemon/signals.js';
import { ConfigFileError } from '../../engine/config/config-error.js';
import { EngineStartError } from '../../engine/server.js';
import { failWith } from '../client.js';

export default class Start extends Command {
  static override summary = 'Start the engine (same as `svc --config config.yaml`).';
  static override description =
    'Reads config.yaml (created with defaults when missing), listens for workers on the configured host and port, and prints one ready line with its address. Ctrl-C or SIGTERM lets calls in flight finish for shutdown_grace_ms, then exits 0.';
  static override examples = ['svc --config config.yaml', 'svc -c config.yaml', 'svc start --config config.yaml --port 0'];
  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Path of config.yaml.', default: 'config.yaml' }),
    port: Flags.integer({ summary: 'Override engine.port (0 = any free port).', min: 0, max: 65535 }),
    host: Flags.string({ summary: 'Override engine.host.' }),
    watch: Flags.boolean({ summary: 'Development: restart a local worker when its source files change; apply edits of config.yaml\'s workers: without restarting the engine (as `svc dev`).', default: false }),
  };

  async run(): Promise<void> {
    // The class itself: `svc dev` is this command with --watch on.
    const { flags } = await this.parse(this.constructor as typeof Start);
    let daemon: Daemon;
    try {
      daemon = await startDaemon({
        configFile: resolve(flags.config),
        configName: flags.config,
        ...(flags.port !== undefined ? { port: flags.port } : {}),
        ...(flags.host !== undefined ? { host: flags.host } : {}),
        log: (line) => this.log(line),
        watch: flags.watch,
      });
    } catch (e) {
      // A configuration the engine refuses: 2; an engine already running, a port taken: 1.
      if (e instanceof ConfigFileError || e instanceof EngineStartError) failWith(e, 2);
      if (e instanceof DaemonStartError) failWith(e, 1);
      throw e;
    }
    await runUntilSignalled(daemon);
  }
}
