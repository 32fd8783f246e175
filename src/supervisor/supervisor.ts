import { RUN_SECRET_ENV } from 'svc-sdk/internal';
import { DEFAULT_HTTP_CONFIG } from '../workers/http/config.js';
import { ensureInstalled } from './install.js';
import { launchSpecOf, logFileOf } from './launch.js';
import { lastOutputLines, tellingLine } from './output-tail.js';
import { ProcessRuntime } from './process-runtime.js';
import type { Instance, Runtime } from './runtime.js';
import type { RuntimeName, WorkerEntry } from './worker-entries.js';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** One instance the engine started, as the daemon records it in .svc/engine.json for the next engine of the project to clear. */
export interface RecordedInstance {
  worker: string;
  replica: number;
  runtime: 'process' | 'docker';
  /** Process runtime: the instance's pid, also its process group (it leads its own group). */
  pid?: number;
  /** Process runtime: processStartToken(pid) when it started; a recycled pid does not match it. */
  started?: string;
  /** Docker runtime: the container id. */
  container?: string;
}

export type WorkerStatus = 'starting' | 'running' | 'restarting' | 'crash-loop' | 'stopped' | 'failed';

export interface SupervisorOptions {
  configFile: string;
  engineUrl: string;
  runtimes?: Partial<Record<RuntimeName, Runtime>>;
  /** First restart delay; doubles per consecutive crash up to `maxRestartDelayMs`. */
  restartDelayMs?: number;
  maxRestartDelayMs?: number;
  /** This many exits within `crashWindowMs`, per replica, is a crash loop: reported, not restarted. */
  crashLoopExits?: number;
  crashWindowMs?: number;
  stopGraceMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** The secret a worker presents (SVC_TOKEN), when the engine requires tokens. */
  tokenFor?: (entry: WorkerEntry) => string | undefined;
  /**
   * The engine run's secrets (src/engine/engine-run.ts): each instance gets one of its own in
   * SVC_RUN_SECRET, revoked when it exits, so the engine knows which connection is which instance
   * and a worker of an earlier run is refused.
   */
  runSecrets?: RunSecrets;
  /** Called whenever instances start or exit: the engine records them (.svc/engine.json). */
  onInstancesChanged?: () => void;
  /** `svc dev`: a local worker's saved source restarts it, which is what its crash-loop message tells. */
  sourcesWatched?: boolean;
}

export interface RunSecrets {
  issue(identity: { kind: 'instance'; worker: string; replica: number }): string;
  revoke(secret: string): void;
}

interface Replica {
  instance: Instance | null;
  timer: NodeJS.Timeout | null;
  startedAt: number;
  /** Exits in a row, each within crashWindowMs of its start: sets the restart backoff. */
  quickExits: number;
}

/** The latest exit the supervisor did not ask for: how, when, and what the instance printed last. */
export interface ExitReport {
  replica: number;
  code: number | null;
  signal: string | null;
  /** Epoch ms. */
  at: number;
  /** `exit code 1` / `signal SIGKILL`. */
  how: string;
  /** Its last lines of output (output-tail.ts), the error itself usually among them. */
  output: string[];
}

interface Managed {
  entry: WorkerEntry;
  status: WorkerStatus;
  /** Restarts after an unexpected exit (a crash, a kill); not those asked for (restart()). */
  restarts: number;
  exits: number[];
  replicas: Replica[];
  stopping: boolean;
  /**
   * Bumped by every start and stop: a start still installing when a stop (or a restart's stop and
   * start) came in launches nothing, else its instance would be no replica's, never stopped.
   */
  generation: number;
  /**
   * Launches under way, each ending, if a stop superseded it, in the stop of what it launched:
   * stop() waits for them, so no instance of a stopped worker (or of a stopped engine) is left.
   */
  launching: Set<Promise<unknown>>;
  /**
   * Aborted by the stop that ends this generation: its install (npm/pip) and launches (an image
   * build) end what they are doing instead of finishing first, so that stop waits seconds, not minutes.
   */
  cancel: AbortController;
  lastError?: string;
  lastExit?: ExitReport;
}

/**
 * Starts the workers listed in config.yaml and keeps them running: restart on crash with
 * exponential backoff, a crash loop reported and left stopped instead of spun forever, logs kept
 * per worker, and every instance stopped when the engine stops.
 */
export class Supervisor {
  private readonly workers = new Map<string, Managed>();
  /**
   * Set by stopAll (the engine is shutting down): a start still on its way, such as the second
   * half of a restart `svc dev` began, launches nothing, else its instance would outlive the stop.
   */
  private closed = false;
  /** The run secret each running instance was given, revoked when it exits. */
  private readonly secrets = new Map<Instance, string>();
  private readonly runtimes: Partial<Record<RuntimeName, Runtime>>;
  private readonly options: Required<Omit<SupervisorOptions, 'runtimes' | 'runSecrets'>> & Pick<SupervisorOptions, 'runSecrets'>;

  constructor(opts: SupervisorOptions) {
    this.runtimes = { process: new ProcessRuntime(), ...opts.runtimes };
    this.options = {
      restartDelayMs: 500,
      maxRestartDelayMs: 30_000,
      crashLoopExits: 5,
      crashWindowMs: 60_000,
      stopGraceMs: 5000,
      log: () => {},
      tokenFor: () => undefined,
      onInstancesChanged: () => {},
      sourcesWatched: false,
      ...opts,
    };
  }

  /** Start one worker (all its replicas). A worker already supervised is left as it is. */
  async start(entry: WorkerEntry, opts: { force?: boolean } = {}): Promise<Managed> {
    entry = oneHttpPerPort(entry, (m) => this.options.log('warn', m));
    const existing = this.workers.get(entry.name);
    if (existing && existing.status !== 'stopped' && existing.status !== 'crash-loop' && existing.status !== 'failed') return existing;
    const fresh = (status: WorkerStatus): Managed => ({ entry, status, restarts: 0, exits: [], replicas: [], stopping: false, generation: 0, launching: new Set(), cancel: new AbortController() });
    if (this.closed) return existing ?? fresh('stopped');
    const m = existing ?? fresh('starting');
    const generation = ++m.generation;
    m.cancel = new AbortController();
    const { signal } = m.cancel;
    m.entry = entry;
    m.status = 'starting';
    m.stopping = false;
    m.exits = [];
    delete m.lastError;
    this.workers.set(entry.name, m);
    try {
      const first = launchSpecOf(entry, this.options.configFile, this.options.engineUrl);
      if (first.manifest && entry.runtime === 'process') {
        const logFile = logFileOf(this.options.configFile, entry.name);
        mkdirSync(dirname(logFile), { recursive: true });
        const r = await this.track(
          m,
          ensureInstalled(first.manifest, { ...(opts.force ? { force: true } : {}), onLine: (l) => appendFileSync(logFile, `[install] ${l}\n`), signal, cancelGraceMs: this.options.stopGraceMs }),
        );
        if (r.status === 'installed') this.options.log('info', `installed dependencies of ${entry.name} in ${r.seconds.toFixed(1)}s`);
        if (m.generation !== generation) return m; // stopped or started again while it installed
      }
      m.replicas = Array.from({ length: entry.replicas }, () => ({ instance: null, timer: null, startedAt: 0, quickExits: 0 }));
      await Promise.all(m.replicas.map((_, i) => this.launch(m, i, opts.force === true)));
      if (m.generation === generation) m.status = 'running';
    } catch (e) {
      // Stopped or restarted while it installed or launched: this start's failure is not the
      // worker's state any more (it would mark a stopped worker, or the newer start's, failed).
      if (m.generation !== generation) {
        if (signal.aborted && e === signal.reason) this.options.log('info', `a start of ${entry.name} was cancelled: ${(e as Error).message}`);
        else this.options.log('warn', `a start of ${entry.name} that was since stopped or restarted failed: ${(e as Error).message}`);
        return m;
      }
      m.status = 'failed';
      m.lastError = (e as Error).message;
      this.options.log('error', `cannot start ${entry.name}: ${m.lastError}`);
    }
    return m;
  }

  private runtimeFor(entry: WorkerEntry): Runtime {
    const rt = this.runtimes[entry.runtime];
    if (!rt) throw new Error(`runtime ${entry.runtime} is not available in this engine`);
    return rt;
  }

  /** Launch replica `i`, recorded in m.launching while under way (stop() waits for it). */
  private launch(m: Managed, i: number, force = false): Promise<void> {
    return this.track(m, this.launchReplica(m, i, force));
  }

  /** `work` (an install, a launch) recorded in m.launching while under way: stop() waits for it. */
  private track<T>(m: Managed, work: Promise<T>): Promise<T> {
    m.launching.add(work);
    const done = (): void => void m.launching.delete(work);
    work.then(done, done);
    return work;
  }

  private async launchReplica(m: Managed, i: number, force: boolean): Promise<void> {
    const spec = launchSpecOf(m.entry, this.options.configFile, this.options.engineUrl, i);
    const token = this.options.tokenFor(m.entry);
    if (token) spec.env.SVC_TOKEN = token;
    // Only for the engine's own address: an entry whose env: points SVC_URL elsewhere (the
    // engines of a cluster) must be able to attach there.
    const secret = spec.env.SVC_URL === this.options.engineUrl ? this.options.runSecrets?.issue({ kind: 'instance', worker: m.entry.name, replica: i }) : undefined;
    if (secret) spec.env[RUN_SECRET_ENV] = secret;
    const generation = m.generation;
    let inst: Instance;
    try {
      inst = await this.runtimeFor(m.entry).launch({ ...spec, ...(force ? { force } : {}), signal: m.cancel.signal });
    } catch (e) {
      if (secret) this.options.runSecrets?.revoke(secret);
      throw e;
    }
    if (m.generation !== generation) {
      // Stopped while it launched (a container takes a while): no replica holds it, so end it here,
      // before the stop waiting for this launch returns (one ignoring SIGTERM is forced after the
      // grace, not left to outlive its engine).
      if (secret) this.options.runSecrets?.revoke(secret);
      await inst.stop(this.options.stopGraceMs);
      return;
    }
    if (secret) this.secrets.set(inst, secret);
    const rep = m.replicas[i]!;
    rep.instance = inst;
    rep.startedAt = Date.now();
    this.options.onInstancesChanged();
    this.options.log('info', `started ${m.entry.name}${m.entry.replicas > 1 ? ` [${i}]` : ''} (${m.entry.runtime}, ${inst.pid ? `pid ${inst.pid}` : `id ${inst.id.slice(0, 12)}`})`);
    void inst.exited.then((info) => this.onExit(m, i, inst, info.code, info.signal));
  }

  private onExit(m: Managed, i: number, inst: Instance, code: number | null, signal: string | null): void {
    const secret = this.secrets.get(inst);
    if (secret) this.options.runSecrets?.revoke(secret);
    this.secrets.delete(inst);
    this.options.onInstancesChanged();
    const rep = m.replicas[i];
    if (!rep || rep.instance !== inst) return;
    rep.instance = null;
    if (m.stopping) return;
    const now = Date.now();
    m.exits = m.exits.filter((t) => now - t < this.options.crashWindowMs);
    m.exits.push(now);
    const how = signal === null ? `exit code ${code}` : signal.startsWith('start failed') ? signal : `signal ${signal}`;
    const output = lastOutputLines(logFileOf(this.options.configFile, m.entry.name), i);
    m.lastExit = { replica: i, code, signal, at: now, how, output };
    const lastLine = tellingLine(output);
    m.lastError = lastLine ? `${how}: ${lastLine}` : how;
    // Counted per replica: each replica of a broken worker exits once per round, and two replicas
    // must not make a crash loop of what one replica would still be restarting.
    if (m.exits.length >= this.options.crashLoopExits * m.entry.replicas) {
      m.status = 'crash-loop';
      m.lastError = `exited ${m.exits.length} times within ${Math.round(this.options.crashWindowMs / 1000)}s (last: ${m.lastError})`;
      const then = this.options.sourcesWatched && m.entry.path ? ' and save: svc dev restarts it' : `, then \`svc worker restart ${m.entry.name}\``;
      this.options.log('error', `${m.entry.name} is crash-looping: ${m.lastError}; not restarting. See \`svc worker logs ${m.entry.name}\`, fix it${then}`);
      this.stopReplicas(m);
      return;
    }
    // A run that lasted long enough was healthy: start the backoff over.
    rep.quickExits = now - rep.startedAt > this.options.crashWindowMs ? 0 : rep.quickExits + 1;
    const delay = Math.min(this.options.maxRestartDelayMs, this.options.restartDelayMs * 2 ** Math.max(0, rep.quickExits - 1));
    m.status = 'restarting';
    m.restarts++;
    this.options.log('warn', `${m.entry.name}${m.entry.replicas > 1 ? ` [${i}]` : ''} exited (${m.lastError}); restarting in ${delay} ms (restart #${m.restarts})`);
    rep.timer = setTimeout(() => {
      rep.timer = null;
      if (m.stopping) return;
      const { signal } = m.cancel;
      this.launch(m, i)
        .then(() => {
          if (m.replicas.every((r) => r.instance)) m.status = 'running';
        })
        .catch((e: Error) => {
          if (signal.aborted) return; // cancelled by a stop: nothing to report or retry
          this.options.log('error', `restart of ${m.entry.name} failed: ${e.message}`);
          // An exit of its own: retried after the backoff, and counted toward the crash loop.
          // (onExit acts only for the replica's current instance, which this failed start left as none.)
          rep.instance = inst;
          this.onExit(m, i, inst, null, `start failed: ${e.message}`);
        });
    }, delay);
  }

  private stopReplicas(m: Managed): Promise<void> {
    const all: Promise<void>[] = [];
    for (const rep of m.replicas) {
      if (rep.timer) clearTimeout(rep.timer);
      rep.timer = null;
      const inst = rep.instance;
      rep.instance = null;
      if (inst) all.push(inst.stop(this.options.stopGraceMs));
    }
    return Promise.all(all).then(() => undefined);
  }

  async stop(name: string): Promise<boolean> {
    const m = this.workers.get(name);
    if (!m) return false;
    m.generation++;
    m.stopping = true;
    // An install or image build under way ends now (killed, its half-made container removed)
    // rather than finishing for nothing.
    m.cancel.abort(new Error(`${name} was stopped while it was starting (installing, building or launching)`));
    // Launches under way see the new generation and stop what they launch: wait for that too
    // (their failures are their starts' to report).
    const launching = [...m.launching].map((l) => l.catch(() => undefined));
    await Promise.all([this.stopReplicas(m), ...launching]);
    m.status = 'stopped';
    this.options.log('info', `stopped ${name}`);
    return true;
  }

  async remove(name: string): Promise<boolean> {
    const had = await this.stop(name);
    this.workers.delete(name);
    return had;
  }

  /**
   * A restart asked for (`svc worker restart`, `svc dev` on a saved file, a changed config.yaml
   * entry): not counted in `restarts`, which counts only the restarts after an unexpected exit
   * (onExit), as a user reads RESTARTS in `svc worker list` (kubectl's "how often did it crash").
   */
  async restart(entry: WorkerEntry, opts: { force?: boolean } = {}): Promise<Managed> {
    await this.stop(entry.name);
    return this.start(entry, opts);
  }

  async stopAll(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.workers.keys()].map((n) => this.stop(n)));
  }

  /** Every instance running now, for .svc/engine.json (process-identity.ts says why `started`). */
  instances(): RecordedInstance[] {
    const out: RecordedInstance[] = [];
    for (const m of this.workers.values()) {
      m.replicas.forEach((r, replica) => {
        const inst = r.instance;
        if (!inst) return;
        if (inst.pid !== undefined) out.push({ worker: m.entry.name, replica, runtime: 'process', pid: inst.pid, ...(inst.started ? { started: inst.started } : {}) });
        else out.push({ worker: m.entry.name, replica, runtime: 'docker', container: inst.id });
      });
    }
    return out;
  }

  list(): Array<Record<string, unknown>> {
    return [...this.workers.values()].map((m) => this.describe(m));
  }

  describe(m: Managed): Record<string, unknown> {
    const pids = m.replicas.map((r) => r.instance?.pid).filter((p): p is number => p !== undefined);
    return {
      name: m.entry.name,
      kind: m.entry.builtin ? 'builtin' : 'directory',
      source: m.entry.builtin ?? m.entry.path,
      runtime: m.entry.runtime,
      replicas: m.entry.replicas,
      status: m.status,
      pid: pids[0] ?? null,
      pids,
      instances: m.replicas.map((r) => r.instance?.id ?? null),
      restarts: m.restarts,
      last_error: m.lastError ?? null,
      last_exit: m.lastExit ? { ...m.lastExit, at: new Date(m.lastExit.at).toISOString() } : null,
      log_file: logFileOf(this.options.configFile, m.entry.name),
    };
  }

  /** The latest unrequested exit of worker `name`, if any: what `worker add` waits on besides its registering. */
  lastExit(name: string): ExitReport | undefined {
    return this.workers.get(name)?.lastExit;
  }

  get(name: string): Record<string, unknown> | null {
    const m = this.workers.get(name);
    return m ? this.describe(m) : null;
  }
}

/**
 * svc-http replicas on one machine would all bind the one port of its config, and all but one
 * would crash-loop on it: start one, and say why (replicas are for containers and pods, each with
 * its own address: svc deploy kubernetes). With `port: 0` each binds a port of its own.
 */
function oneHttpPerPort(entry: WorkerEntry, warn: (message: string) => void): WorkerEntry {
  if (entry.builtin !== 'svc-http' || entry.replicas <= 1) return entry;
  const port = entry.config.port ?? DEFAULT_HTTP_CONFIG.port;
  if (port === 0) return entry;
  warn(`${entry.name}: ${entry.replicas} replicas of svc-http on this machine would all bind port ${String(port)}; starting 1 (replicas are for containers and pods: svc deploy kubernetes)`);
  return { ...entry, replicas: 1 };
}
