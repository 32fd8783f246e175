import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { closestKey } from 'svc-sdk/internal';
import { Args, Command, Flags } from '@oclif/core';
import { loadConfig } from '../../../daemon/config-file.js';
import { ConfigFileError } from '../../../engine/config/config-error.js';
import { ensureWorkerImage, ImageBuildError } from '../../../supervisor/docker-image.js';
import { DockerRuntime, DockerUnavailableError } from '../../../supervisor/docker-runtime.js';
import { ensureInstalled, InstallError } from '../../../supervisor/install.js';
import { loadManifest, ManifestError } from '../../../supervisor/manifest.js';
import { BUILTIN_WORKERS, parseWorkerEntries, RUNTIMES, upsertWorkerEntry, type RuntimeName } from '../../../supervisor/worker-entries.js';
import { parseHttpWorkerConfig } from '../../../workers/http/config.js';
import { parseQueueConfig } from '../../../workers/queue/config.js';
import { parseStateConfig } from '../../../workers/state/config.js';
import { parseCronConfig } from '../../../workers/cron/config.js';
import { fail, failWith } from '../../client.js';
import { buildPayload } from '../../payload.js';
import { usageLine } from '../../usage-error.js';
import { printableJson } from '../../../engine/printable.js';
import { configFlag, runningEngine } from '../../project.js';
import { startWorker, waitFlag, whatItServes, whereItRuns } from '../../worker-start.js';

/** Each built-in's own config check, run on what `worker add` writes. */
const BUILTIN_CONFIG: Record<string, (raw: unknown) => unknown> = {
  'svc-state': parseStateConfig,
  'svc-http': parseHttpWorkerConfig,
  'svc-queue': parseQueueConfig,
  'svc-cron': parseCronConfig,
};

/** Why `target` names no worker: a mistyped built-in, a file given for its directory, or nothing there. */
function notAWorker(target: string, dir: string): string {
  const builtins = `built-in workers: ${BUILTIN_WORKERS.join(', ')}`;
  const near = closestKey(target, BUILTIN_WORKERS);
  if (near) return `${target} is not a built-in worker (did you mean "${near}"?); ${builtins}`;
  if (existsSync(dir)) return `${target} is a file: give the worker's directory (the one holding svc.worker.yaml), e.g. ${dirname(target)}`;
  const sibling = closestKey(basename(dir), subdirectories(dirname(dir)));
  if (sibling) return `${target}: no such directory (did you mean "${dirname(target)}/${sibling}"?)`;
  return `${target}: no such directory (a worker directory holds svc.worker.yaml; svc worker new ${target} --language python creates one); ${builtins}`;
}

function subdirectories(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
}

export default class WorkerAdd extends Command {
  static override summary = 'Add a worker to config.yaml, install its dependencies and start it.';
  static override description = `TARGET is a worker directory (holding svc.worker.yaml) or a built-in worker: ${BUILTIN_WORKERS.join(', ')}.
The worker is appended to config.yaml (comments kept; adding it again does not duplicate it), its
dependencies are installed (Python into <dir>/.venv, TypeScript with npm; skipped when unchanged,
--force reinstalls), and it is started: by the running engine of this config.yaml at once, or else
with the engine the next time it starts. With a running engine the command waits (--wait seconds)
until the worker has registered; if it exits first, the command prints how it exited and its last
lines of output, and exits 1. A worker that runs already, with its entry unchanged, is left as it is
(svc worker restart restarts it; --force reinstalls and restarts).`;
  static override examples = [
    'svc worker add svc-state',
    'svc worker add svc-http',
    'svc worker add svc-queue --set queues.emails.max_attempts=5',
    'svc worker add svc-cron --replicas 2',
    'svc worker add ./workers/math-worker',
    'svc worker add ./workers/caller-worker --force',
  ];
  static override args = { target: Args.string({ required: true, description: `Worker directory, or ${BUILTIN_WORKERS.join(' / ')}.` }) };
  static override flags = {
    config: configFlag,
    force: Flags.boolean({ summary: 'Reinstall dependencies (rebuild the image for docker) and restart it.', default: false }),
    runtime: Flags.string({ summary: 'How the worker runs.', options: [...RUNTIMES], default: 'process' }),
    replicas: Flags.integer({ summary: 'Number of instances.', min: 1, max: 64 }),
    wait: waitFlag,
    json: Flags.boolean({ summary: 'Print one JSON object at the end (the progress lines go to stderr): name, change, started, ready, pid, pids, instances (container ids), status, urls (what it serves: the URL of svc-http).', default: false }),
    set: Flags.string({
      summary: 'Set a key of the worker\'s config block, e.g. --set port=3112 or --set queues.emails.max_attempts=5 (dots name nested keys; repeatable; values typed as in svc trigger).',
      multiple: true,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerAdd);
    // With --json, stdout holds the JSON only; what a person reads goes to stderr.
    const say = (line: string): void => {
      if (flags.json) process.stderr.write(line + '\n');
      else this.log(line);
    };
    const configFile = resolve(flags.config);
    try {
      const cfg = loadConfig(configFile, { engineEnv: 'optional' });
      if (cfg.created) say(`Created ${flags.config} with default settings.`);
    } catch (e) {
      if (e instanceof ConfigFileError) failWith(e, 2);
      throw e;
    }
    const runtime = flags.runtime as RuntimeName;
    const settings = buildPayload(undefined, flags.set ?? []);
    if (!settings.ok) {
      process.stderr.write(usageLine('worker:add', `--set: ${settings.message}`));
      process.exit(2);
    }
    const config = Object.keys(settings.payload).length > 0 ? { config: settings.payload } : {};
    let name: string;
    let entry: Parameters<typeof upsertWorkerEntry>[1];
    let manifest;
    if ((BUILTIN_WORKERS as readonly string[]).includes(args.target)) {
      name = args.target;
      entry = { name, builtin: name, runtime, ...(flags.replicas ? { replicas: flags.replicas } : {}), ...config };
    } else {
      const dir = resolve(args.target);
      if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`worker_not_found: ${notAWorker(args.target, dir)}`, 2);
      try {
        manifest = loadManifest(dir);
      } catch (e) {
        if (e instanceof ManifestError) failWith(e, 2);
        throw e;
      }
      name = manifest.name;
      entry = { name, path: dir, runtime, ...(flags.replicas ? { replicas: flags.replicas } : {}), ...config };
    }
    // A docker worker needs a Docker engine: say so before config.yaml is touched.
    let docker: DockerRuntime | undefined;
    if (runtime === 'docker' && manifest) {
      docker = new DockerRuntime({ configFile });
      try {
        await docker.reachable();
      } catch (e) {
        if (e instanceof DockerUnavailableError) failWith(e, 1);
        throw e;
      }
    }
    const before = readFileSync(configFile, 'utf8');
    const change = upsertWorkerEntry(configFile, entry);
    // The entry as written must be one the engine accepts, and a built-in's config one it can run with.
    try {
      const written = parseWorkerEntries(configFile, loadConfig(configFile, { engineEnv: 'optional' }).workers).find((e) => e.name === name)!;
      if (written.builtin) BUILTIN_CONFIG[written.builtin]?.(written.config);
    } catch (e) {
      writeFileSync(configFile, before);
      const err = e as Error & { code?: unknown };
      if (typeof err.code === 'string') failWith({ code: err.code, message: err.message }, 2, ` (${flags.config} is unchanged)`);
      fail(`${err.message} (${flags.config} is unchanged)`, 2);
    }
    say(
      change === 'added'
        ? `✓ added ${name} to ${flags.config}`
        : change === 'updated'
          ? `✓ updated ${name} in ${flags.config}`
          : `✓ ${name} is already in ${flags.config}`,
    );
    if (manifest && runtime === 'process') {
      say(`installing dependencies of ${name} (${manifest.runtime.package_manager}: ${manifest.scripts.install}) …`);
      try {
        const r = await ensureInstalled(manifest, { force: flags.force, onLine: (l) => say(`  │ ${l}`) });
        say(r.status === 'cached' ? '✓ dependencies up to date (unchanged since the last install; --force reinstalls)' : `✓ dependencies installed in ${r.seconds.toFixed(1)}s`);
      } catch (e) {
        if (e instanceof InstallError) {
          // Its output was just shown line by line: the first line of the message says the rest.
          // The entry stays in config.yaml (the engine retries it when it starts): say how to go on.
          fail(`${e.code}: ${e.message.split('\n')[0]!.replace(/:$/, '')} (its output is above)\nfix it, then: svc worker add ${args.target}   (${name} stays listed in ${flags.config}; svc worker remove ${name} takes it out)`, 1);
        }
        throw e;
      }
    }
    if (manifest && docker) {
      // Built here, with its output shown; the engine then finds the image cached (same context hash).
      say(`building the image of ${name} (images/${manifest.runtime.kind}/Dockerfile + ${args.target}) …`);
      try {
        const img = await ensureWorkerImage(docker.docker, manifest, { force: flags.force, onLine: (l) => say(`  │ ${l}`) });
        say(
          img.status === 'cached'
            ? `✓ image ${img.tag} up to date (unchanged worker; --force rebuilds)`
            : img.status === 'tagged'
              ? `✓ image ${img.tag} tagged from ${img.from ?? '?'} (the same content; --force rebuilds)`
              : `✓ image ${img.tag} built in ${img.seconds.toFixed(1)}s (base ${img.base})`,
        );
      } catch (e) {
        if (e instanceof ImageBuildError) failWith(e, 1);
        throw e;
      }
    }
    const engine = runningEngine(configFile);
    if (!engine) {
      say(`${name} will start with the engine: svc --config ${flags.config}`);
      if (flags.json) this.log(JSON.stringify({ name, change, started: false, ready: false }));
      return;
    }
    // --force or a changed entry restarts it. Its dependencies (or image) were installed just above,
    // so the engine is not asked to force them again: that installed twice (once here, once on the restart).
    const restart = flags.force || change === 'updated';
    const d = await startWorker(engine, restart ? 'engine::supervisor::restart' : 'engine::supervisor::add', { name, force: false }, flags.wait);
    // Running before this command only counts for an entry it left unchanged: a new entry under
    // `svc dev` was started by the engine's watch of config.yaml, as this command asked.
    const alreadyRunning = d.already_running === true && change === 'unchanged';
    if (flags.json) this.log(printableJson(JSON.stringify({ name, change, started: !alreadyRunning, ready: d.ready, status: d.status, pid: d.pid, pids: d.pids, instances: d.instances, urls: d.urls ?? [] })));
    if (alreadyRunning) {
      say(`✓ ${name} was already running (${whereItRuns(d)}${d.ready ? ', connected' : ''})${whatItServes(d)}, supervised by the engine at ${engine.url}; left as it is (svc worker restart ${name} restarts it)`);
      return;
    }
    // A restart (--force, a changed entry) says so: "auto-started" read as if it had not been running.
    // A worker config.yaml did not list was not running, whatever --force did to its dependencies.
    const started = restart && change !== 'added' ? 'restarted' : 'auto-started';
    if (d.ready) say(`✓ ${name} ${started} (${whereItRuns(d)}) and connected${whatItServes(d)}, supervised by the engine at ${engine.url}`);
    else say(`✓ ${name} ${started} (${whereItRuns(d)}), supervised by the engine at ${engine.url}; not connected yet${flags.wait > 0 ? ` after ${flags.wait}s` : ''} (svc worker list, svc worker logs ${name})`);
  }
}
