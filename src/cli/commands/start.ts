import { resolve } from 'node:path';
import { fail } from '../client.js';
import { Command, Flags } from '@oclif/core';
import { newSecret } from '../../engine/auth.js';
import { FATAL_EXIT_CODE, guardProcess } from '../../engine/process-guard.js';
import { Engine, EngineStartError } from '../../engine/server.js';
import { ConfigError, loadConfig } from '../../supervisor/config.js';
import { installSupervisorFunctions } from '../../supervisor/control.js';
import { DockerRuntime } from '../../supervisor/docker-runtime.js';
import { clearEngineState, engineAlive, readRecordedEngineState, writeEngineState, type EngineState } from '../../supervisor/engine-state.js';
import { processStartToken } from '../../supervisor/process-identity.js';
import { describeStopped, stopStaleProcesses } from '../../supervisor/stale-instances.js';
import { Supervisor } from '../../supervisor/supervisor.js';
import { parseWorkerEntries, type WorkerEntry } from '../../supervisor/worker-entries.js';

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
      if (e instanceof ConfigError) fail(e.message, 2);
      throw e;
    }
    if (cfg.created) this.log(`Created ${flags.config} with default settings.`);
    let entries: WorkerEntry[];
    try {
      entries = parseWorkerEntries(file, cfg.workers);
    } catch (e) {
      if (e instanceof ConfigError) fail(e.message, 2);
      throw e;
    }
    for (const e of entries) {
      if (e.token && !cfg.engine.tokens.some((t) => t.name === e.token)) fail(`${file}: workers: ${e.name}.token: no token named ${e.token} in engine.auth.tokens`, 2);
    }
    // An earlier engine of this project: one still running is not to be doubled (two engines
    // would share .svc/ and the data directories); one that died without stopping its workers
    // (kill -9, a crash) left them running, and they go now, before anything of ours starts.
    const previous = readRecordedEngineState(file);
    if (previous?.pid_started && engineAlive(previous)) {
      fail(`an engine of ${flags.config} is already running (pid ${previous.pid}, ${previous.url}); stop it first (kill ${previous.pid}) or start this one from another project directory`, 1);
    }
    if (previous) {
      const stopped = await stopStaleProcesses(previous);
      if (stopped.length > 0) this.log(describeStopped(stopped, previous, flags.config));
    }
    const engine = new Engine({
      ...cfg.engine,
      ...(flags.port !== undefined ? { port: flags.port } : {}),
      ...(flags.host !== undefined ? { host: flags.host } : {}),
    });
    let address;
    try {
      address = await engine.start();
    } catch (e) {
      if (e instanceof EngineStartError) fail(e.message, 2);
      const err = e as NodeJS.ErrnoException;
      const host = flags.host ?? cfg.engine.host;
      const port = flags.port ?? cfg.engine.port;
      const why = err.code === 'EADDRINUSE' ? `port ${port} is already in use (is another engine running?)` : err.message;
      fail(`cannot start the engine on ${host}:${port}: ${why}`, 1);
    }
    // With tokens on, workers the engine starts itself get a token of the engine's own (admin),
    // unless their entry names a configured token.
    let supervisorToken: string | undefined;
    if (engine.tokens.enabled) {
      supervisorToken = newSecret();
      engine.tokens.add({ name: 'supervisor', token: supervisorToken, admin: true, call: [], register: [], trigger_types: [] });
      this.log(`auth: ${cfg.engine.tokens.length} token(s) configured; connections without a valid token are refused`);
    } else {
      this.log(`auth: no tokens configured, so the engine listens on ${cfg.engine.host} only (local connections); see docs/security.md to expose it`);
    }
    const byName = new Map(cfg.engine.tokens.map((t) => [t.name, t.token]));
    // Docker is reached lazily: an engine without docker workers never needs it.
    const docker = new DockerRuntime({ configFile: file });
    await docker
      .removeStale()
      .then((n) => n > 0 && this.log(`removed ${n} container(s) left by an earlier engine of ${flags.config}`))
      .catch(() => undefined);
    const state: EngineState = {
      pid: process.pid,
      pid_started: processStartToken(process.pid),
      run: engine.run.id,
      url: address.url,
      config: file,
      started_at: new Date().toISOString(),
      ...(supervisorToken ? { token: supervisorToken } : {}),
      client_secret: engine.run.clientSecret,
      instances: [],
    };
    let recording = true;
    // What runs is rewritten whenever an instance starts or exits: the next engine of the
    // project clears what is recorded if this one dies without stopping it.
    const record = (): void => {
      if (!recording) return;
      state.instances = supervisor.instances();
      try {
        writeEngineState(file, state);
      } catch (e) {
        engine.event('warn', `cannot record the running workers in .svc/engine.json: ${(e as Error).message}`);
      }
    };
    const supervisor = new Supervisor({
      configFile: file,
      engineUrl: address.url,
      runtimes: { docker },
      log: (level, message) => engine.event(level, message),
      tokenFor: (e) => (e.token ? byName.get(e.token) : supervisorToken),
      runSecrets: engine.run,
      onInstancesChanged: record,
    });
    installSupervisorFunctions(engine, supervisor, file);
    record();
    this.log(`svc engine ready on ${address.url}`);
    if (entries.length > 0) {
      this.log(`starting ${entries.length} worker(s) from ${flags.config}: ${entries.map((e) => e.name).join(', ')}`);
      void Promise.all(entries.map((e) => supervisor.start(e)));
    }
    // After this, an error that escapes every handler is logged instead of ending the engine.
    let stopFor: ((why: string) => void) | undefined;
    guardProcess({
      log: (message) => engine.event('error', message),
      fatal: (why) => {
        process.exitCode = FATAL_EXIT_CODE;
        stopFor?.(`fatal error (${why})`);
      },
    });
    await new Promise<void>((done) => {
      const stop = (signal: string): void => {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        const n = engine.invocations.size;
        this.log(`${signal}: shutting down${n > 0 ? `, letting ${n} call(s) in flight finish (up to ${cfg.engine.shutdownGraceMs} ms)` : ''}`);
        void engine
          .stop(cfg.engine.shutdownGraceMs, () => supervisor.stopAll())
          .then(() => {
            recording = false;
            clearEngineState(file, process.pid);
            this.log('engine stopped');
            done();
          });
      };
      const onInt = (): void => stop('SIGINT');
      const onTerm = (): void => stop('SIGTERM');
      stopFor = stop;
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
    });
  }
}
