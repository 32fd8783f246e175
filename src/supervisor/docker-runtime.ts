import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { LIVENESS_FD_ENV, RUN_SECRET_ENV } from 'svc-sdk/internal';
import { ensureWorkerImage } from './docker-image.js';
import { guardedCommand } from './liveness-guard.js';
import { appendStamped } from './log-stamp.js';
import type { ExitInfo, Instance, LaunchSpec, Runtime } from './runtime.js';
import { SvcError } from 'svc-sdk';

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

export class DockerUnavailableError extends SvcError {
  constructor(message: string) {
    super('docker_unavailable', message);
    this.name = 'DockerUnavailableError';
  }
}

/** `svc.project` label value: one engine's containers, told apart from another project's. */
export function projectLabel(configFile: string): string {
  return createHash('sha256').update(resolve(configFile)).digest('hex').slice(0, 12);
}

/** The Docker engine at DOCKER_HOST (unix:// or tcp://) or at the default socket. */
export function dockerClient(): { docker: Docker; where: string } {
  const host = process.env.DOCKER_HOST;
  if (host?.startsWith('unix://')) return { docker: new Docker({ socketPath: host.slice('unix://'.length) }), where: host.slice('unix://'.length) };
  if (host?.startsWith('tcp://')) {
    const u = new URL(host.replace(/^tcp:/, 'http:'));
    return { docker: new Docker({ host: u.hostname, port: Number(u.port || 2375) }), where: host };
  }
  return { docker: new Docker({ socketPath: DEFAULT_DOCKER_SOCKET }), where: DEFAULT_DOCKER_SOCKET };
}

/** Throws DockerUnavailableError with what to do instead when no Docker engine answers. */
export async function assertDockerReachable(docker: Docker, where: string): Promise<void> {
  try {
    await docker.ping();
  } catch (e) {
    const why = (e as Error).message.split('\n')[0];
    throw new DockerUnavailableError(
      `Docker is not reachable at ${where}: ${why} — start Docker (as root: scripts/start-dockerd.sh), or use the process runtime: svc worker add <dir> (without --runtime docker)`,
    );
  }
}

export interface DockerRuntimeOptions {
  /** config.yaml of the engine: its hash labels every container (svc.project). */
  configFile: string;
  docker?: Docker;
  where?: string;
}

/**
 * Runs each instance as a Docker container of the worker's image (docker-image.ts), on the host's
 * network (these machines have no bridge; SVC_URL is the engine's own address), with tini as PID 1
 * so SIGTERM reaches the worker, and its stdout/stderr appended to the worker's log file.
 *
 * The container's stdin is the liveness pipe, as for a process: this engine attaches to it before
 * the start and never writes, and with StdinOnce Docker closes it when that attachment ends, which
 * it does when the engine process dies however it dies. The SDKs read end-of-file there
 * (SVC_LIVENESS_FD=0) and exit, other programs are stopped by the guard (liveness-guard.ts), and
 * the container ends with them (restart policy "no").
 *
 * Restarts are the supervisor's, as for processes: the container's own restart policy is "no",
 * so Docker and the supervisor never both restart one replica (docs/design.md).
 */
export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  readonly docker: Docker;
  readonly where: string;
  readonly project: string;

  constructor(opts: DockerRuntimeOptions) {
    const c = opts.docker ? { docker: opts.docker, where: opts.where ?? DEFAULT_DOCKER_SOCKET } : dockerClient();
    this.docker = c.docker;
    this.where = c.where;
    this.project = projectLabel(opts.configFile);
  }

  async reachable(): Promise<void> {
    await assertDockerReachable(this.docker, this.where);
  }

  /** Remove containers this project's engine left behind (it was killed, or the machine rebooted). */
  async removeStale(): Promise<number> {
    const stale = await this.docker.listContainers({ all: true, filters: { label: [`svc.project=${this.project}`] } });
    await Promise.all(stale.map((c) => this.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
    return stale.length;
  }

  async launch(spec: LaunchSpec): Promise<Instance> {
    if (!spec.manifest) {
      throw new Error(`${spec.name}: built-in workers run with the process runtime inside the engine (in containers, run the engine image; see docker-compose.yml)`);
    }
    spec.signal?.throwIfAborted();
    await this.reachable();
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const log = createWriteStream(spec.logFile, { flags: 'a' });
    const write = (line: string): void => void log.write(line.endsWith('\n') ? line : line + '\n');
    try {
      const img = await ensureWorkerImage(this.docker, spec.manifest, {
        ...(spec.force ? { force: true } : {}),
        ...(spec.signal ? { signal: spec.signal } : {}),
        onLine: (l) => write(`[build] ${l}`),
      });
      if (img.status === 'built') write(`[build] image ${img.tag} built in ${img.seconds.toFixed(1)}s`);
      if (img.status === 'tagged') write(`[build] image ${img.tag} tagged from ${img.from ?? '?'} (the same content)`);
      spec.signal?.throwIfAborted();
      const name = `svc-${this.project}-${spec.name}-${spec.replica}`;
      // A container of this name is left from a replica that died unwatched: replace it.
      await this.docker.getContainer(name).remove({ force: true }).catch(() => undefined);
      // Never the engine's own environment: svc's variables (the supervisor may add SVC_TOKEN) and the entry's env:.
      const env: Record<string, string> = { ...(spec.containerEnv ?? {}), [LIVENESS_FD_ENV]: '0' };
      for (const k of ['SVC_URL', 'SVC_TOKEN', RUN_SECRET_ENV]) if (spec.env[k] !== undefined) env[k] = spec.env[k];
      const container = await this.docker.createContainer({
        name,
        Image: img.tag,
        Cmd: ['/bin/sh', '-c', guardedCommand(spec.manifest.scripts.start, true)],
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        OpenStdin: true,
        StdinOnce: true,
        AttachStdin: true,
        Labels: { 'svc.worker': spec.name, 'svc.replica': String(spec.replica), 'svc.project': this.project },
        HostConfig: { NetworkMode: 'host', Init: true, RestartPolicy: { Name: 'no' }, LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } } },
      });
      // Superseded before it started: remove it here, as no one else knows of it. (Once started,
      // it is returned: the supervisor stops it with the stop grace, as any instance.)
      if (spec.signal?.aborted) {
        await container.remove({ force: true }).catch(() => undefined);
        spec.signal.throwIfAborted();
      }
      write(`\n=== ${new Date().toISOString()} starting ${spec.name}${spec.replica > 0 ? ` [replica ${spec.replica}]` : ''}: container ${container.id.slice(0, 12)} (${img.tag}): ${spec.manifest.scripts.start}`);
      const liveness = (await container.attach({ stream: true, stdin: true, stdout: false, stderr: false, hijack: true })) as NodeJS.ReadWriteStream & { destroy(): void };
      liveness.on('error', () => {
        /* the container is gone; its exit is handled below */
      });
      await container.start().catch((e: unknown) => {
        liveness.destroy();
        throw e;
      });
      // Every line since the container started, stdout and stderr, appended to the worker's log
      // file, each stamped with the time and the replica (log-stamp.ts), as the process runtime does.
      const logs = (await container.logs({ follow: true, stdout: true, stderr: true })) as unknown as NodeJS.ReadableStream;
      const out = new PassThrough();
      const err = new PassThrough();
      const logsDone = appendStamped(spec.logFile, spec.replica, [out, err]);
      this.docker.modem.demuxStream(logs, out, err);
      let ended = false;
      const endOutput = (): void => {
        if (ended) return;
        ended = true;
        out.end();
        err.end();
      };
      logs.on('end', endOutput);
      logs.on('error', endOutput);
      logs.on('close', endOutput);
      const exited: Promise<ExitInfo> = container
        .wait()
        .then((w: { StatusCode: number }) => w.StatusCode)
        .catch(() => -1)
        .then(async (status) => {
          await Promise.race([logsDone, new Promise((r) => setTimeout(r, 1000))]);
          await container.remove({ force: true }).catch(() => undefined);
          liveness.destroy();
          log.end();
          const sig = status > 128 ? Object.entries(constants.signals).find(([, n]) => n === status - 128)?.[0] ?? null : null;
          return { code: status, signal: sig };
        });
      return {
        pid: undefined,
        id: container.id,
        exited,
        async stop(graceMs: number): Promise<void> {
          await container.stop({ t: Math.max(1, Math.ceil(graceMs / 1000)) }).catch(() => undefined);
          await exited;
        },
      };
    } catch (e) {
      write(`[docker] ${(e as Error).message}`);
      log.end();
      throw e;
    }
  }
}
