import { resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { Engine } from '../../engine/server.js';
import { ConfigError, loadConfig } from '../../supervisor/config.js';

export default class Start extends Command {
  static override summary = 'Start the engine (same as `svc --config config.yaml`).';
  static override description =
    'Reads config.yaml (created with defaults when missing), listens for workers on the configured host and port, and prints one ready line with its address. Ctrl-C or SIGTERM lets calls in flight finish for shutdown_grace_ms, then exits 0.';
  static override examples = ['svc --config config.yaml', 'svc -c config.yaml', 'svc start --config config.yaml --port 0'];
  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Path of config.yaml.', default: 'config.yaml' }),
    port: Flags.integer({ summary: 'Override engine.port (0 = any free port).', min: 0, max: 65535 }),
    host: Flags.string({ summary: 'Override engine.host.' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Start);
    const file = resolve(flags.config);
    let cfg;
    try {
      cfg = loadConfig(file);
    } catch (e) {
      if (e instanceof ConfigError) this.error(e.message, { exit: 2 });
      throw e;
    }
    if (cfg.created) this.log(`Created ${flags.config} with default settings.`);
    const engine = new Engine({
      ...cfg.engine,
      ...(flags.port !== undefined ? { port: flags.port } : {}),
      ...(flags.host !== undefined ? { host: flags.host } : {}),
    });
    let address;
    try {
      address = await engine.start();
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why = err.code === 'EADDRINUSE' ? `port ${cfg.engine.port} is already in use (is another engine running?)` : err.message;
      this.error(`cannot start the engine on ${cfg.engine.host}:${cfg.engine.port}: ${why}`, { exit: 1 });
    }
    this.log(`svc engine ready on ${address.url}`);
    await new Promise<void>((done) => {
      const stop = (signal: string): void => {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        const n = engine.invocations.size;
        this.log(`${signal}: shutting down${n > 0 ? `, letting ${n} call(s) in flight finish (up to ${cfg.engine.shutdownGraceMs} ms)` : ''}`);
        void engine.stop().then(() => {
          this.log('engine stopped');
          done();
        });
      };
      const onInt = (): void => stop('SIGINT');
      const onTerm = (): void => stop('SIGTERM');
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
    });
  }
}
