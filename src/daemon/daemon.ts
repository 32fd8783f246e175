import { redactAddress, SvcError } from 'svc-sdk';
import { newSecret } from '../engine/auth.js';
import { Engine, EngineStartError } from '../engine/server.js';
import { describeTelemetry } from '../engine/telemetry/telemetry-options.js';
import { installSupervisorFunctions } from '../supervisor/control.js';
import { DockerRuntime } from '../supervisor/docker-runtime.js';
import { processStartToken } from '../supervisor/process-identity.js';
import { Supervisor } from '../supervisor/supervisor.js';
import { loadConfig, workerEntriesOf } from './config-file.js';
import { clearEngineState, engineAlive, readRecordedEngineState, writeEngineState, type EngineState } from './engine-state.js';
import { startDevWatch, type DevWatch } from './dev-watch.js';
import { describeStopped, stopStaleProcesses } from './stale-instances.js';

/**
 * The engine daemon of a project: config.yaml read (and created with defaults when missing), an
 * earlier engine of the project refused while it runs or cleared up after when it died, the engine
 * listening, the supervisor's token and run secrets, the Docker runtime, the workers of config.yaml
 * started, and .svc/engine.json kept up to date for the CLI and the next engine. `svc --config`
 * (src/cli/commands/start.ts) is this plus printing and signals (signals.ts).
 */

export interface DaemonOptions {
  /** config.yaml (absolute, or relative to the working directory). */
  configFile: string;
  /** How lines name the file (as the user gave it); default: configFile. */
  configName?: string;
  /** Override engine.port (0: any free port) and engine.host. */
  port?: number;
  host?: string;
  /** Each line for the operator: what was created, cleared, started, stopped. */
  log?: (line: string) => void;
  /** `svc dev`: restart a local worker when its sources change, apply edits of `workers:` (dev-watch.ts). */
  watch?: boolean;
}

export interface Daemon {
  /** Where the engine listens: the port it got when asked for 0; `url` is what workers connect to. */
  readonly address: { host: string; port: number; url: string };
  readonly configFile: string;
  readonly engine: Engine;
  readonly supervisor: Supervisor;
  /**
   * Let calls in flight finish for engine.shutdown_grace_ms, stop the workers, close, and remove
   * .svc/engine.json. `reason` starts the line it logs (`SIGTERM: shutting down…`). Called again,
   * it returns the same promise.
   */
  stop(reason: string): Promise<void>;
}

/** Why the daemon did not start, where neither config.yaml nor the engine's options are at fault. */
export class DaemonStartError extends SvcError {
  constructor(code: 'engine_already_running' | 'listen_failed', message: string) {
    super(code, message);
    this.name = 'DaemonStartError';
  }
}

/**
 * Start the daemon. Throws ConfigFileError (`invalid_config`) for config.yaml, EngineStartError for
 * engine options the engine refuses (`insecure_listen`, cluster errors), DaemonStartError when an
 * engine of the project already runs or the address cannot be listened on.
 */
/** `svc stop` for the config file as it was named (`--config` only when it is not the default). */
function stopCommand(shownFile: string): string {
  return shownFile === 'config.yaml' ? 'svc stop' : `svc stop --config ${shownFile}`;
}

export async function startDaemon(o: DaemonOptions): Promise<Daemon> {
  const file = o.configFile;
  const shownFile = o.configName ?? file;
  const log = o.log ?? (() => {});
  const cfg = loadConfig(file);
  if (cfg.created) log(`Created ${shownFile} with default settings.`);
  const entries = workerEntriesOf(cfg);
  // An earlier engine of this project: one still running is not to be doubled (two engines
  // would share .svc/ and the data directories); one that died without stopping its workers
  // (kill -9, a crash) left them running, and they go now, before anything of ours starts.
  const previous = readRecordedEngineState(file);
  if (previous?.pid_started && engineAlive(previous)) {
    throw new DaemonStartError(
      'engine_already_running',
      `an engine of ${shownFile} is already running (pid ${previous.pid}, ${previous.url}); stop it first (${stopCommand(shownFile)}, or kill ${previous.pid}) or start this one from another project directory`,
    );
  }
  if (previous) {
    const stopped = await stopStaleProcesses(previous);
    if (stopped.length > 0) log(describeStopped(stopped, previous, shownFile));
  }
  const options = { ...cfg.engine, ...(o.port !== undefined ? { port: o.port } : {}), ...(o.host !== undefined ? { host: o.host } : {}) };
  const engine = new Engine(options);
  let address: Daemon['address'];
  try {
    address = await engine.start();
  } catch (e) {
    if (e instanceof EngineStartError) throw e;
    const err = e as NodeJS.ErrnoException;
    // A new user's second project (or another engine) holds the default port: say how to pick another.
    const why =
      err.code === 'EADDRINUSE'
        ? `port ${options.port} is already in use (is another engine running?); choose another port: engine.port in ${shownFile}, or ${o.watch ? 'svc dev' : 'svc'} --config ${shownFile} --port 0 for any free one`
        : err.message;
    throw new DaemonStartError('listen_failed', `cannot start the engine on ${options.host}:${options.port}: ${why}`);
  }
  // With tokens on, workers the engine starts itself get a token of the engine's own (admin),
  // unless their entry names a configured token.
  let supervisorToken: string | undefined;
  if (engine.tokens.enabled) {
    supervisorToken = newSecret();
    engine.tokens.add({ name: 'supervisor', token: supervisorToken, admin: true, call: [], register: [], trigger_types: [] });
    log(`auth: ${cfg.engine.tokens.length} token(s) configured; connections without a valid token are refused`);
  } else {
    log(`auth: no tokens configured, so the engine listens on ${cfg.engine.host} only (local connections); see docs/security.md to expose it`);
  }
  const tokenByName = new Map(cfg.engine.tokens.map((t) => [t.name, t.token]));
  // Docker is reached lazily: an engine without docker workers never needs it.
  const docker = new DockerRuntime({ configFile: file });
  await docker
    .removeStale()
    .then((n) => n > 0 && log(`removed ${n} container(s) left by an earlier engine of ${shownFile}`))
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
    tokenFor: (e) => (e.token ? tokenByName.get(e.token) : supervisorToken),
    runSecrets: engine.run,
    onInstancesChanged: record,
    sourcesWatched: o.watch === true,
  });
  // engine::supervisor::add|restart act on the entry as config.yaml says now: the CLI edits the file.
  installSupervisorFunctions(engine, supervisor, file, () => workerEntriesOf(loadConfig(file, { create: false })));
  record();
  // The URL is where local clients connect (loopback for a wildcard host); say the wildcard too, or
  // `host: 0.0.0.0` looked ignored: the line named only 127.0.0.1.
  const wildcard = address.host === '0.0.0.0' || address.host === '::';
  log(`svc engine ready on ${address.url}${wildcard ? ` (listening on every interface: ${address.host === '::' ? '[::]' : address.host}:${address.port})` : ''}`);
  const metrics = engine.metricsAddress();
  if (metrics) log(`metrics: Prometheus can scrape ${metrics.url}`);
  if (options.telemetry) log(describeTelemetry(options.telemetry, process.env, redactAddress));
  if (entries.length > 0) {
    log(`starting ${entries.length} worker(s) from ${shownFile}: ${entries.map((e) => e.name).join(', ')}`);
    void Promise.all(entries.map((e) => supervisor.start(e)));
  }
  const devWatch: DevWatch | undefined = o.watch ? startDevWatch({ configFile: file, supervisor, initial: entries, log: (level, message) => engine.event(level, message) }) : undefined;
  let stopping: Promise<void> | undefined;
  const stop = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      const inFlight = engine.invocations.size;
      devWatch?.close();
      log(`${reason}: shutting down${inFlight > 0 ? `, letting ${inFlight} call(s) in flight finish (up to ${options.shutdownGraceMs} ms)` : ''}`);
      await engine.stop(options.shutdownGraceMs, () => supervisor.stopAll());
      recording = false;
      clearEngineState(file, process.pid);
      log('engine stopped');
    })();
    return stopping;
  };
  return { address, configFile: file, engine, supervisor, stop };
}
