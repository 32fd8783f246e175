import type { Manifest } from './manifest.js';
import type { RuntimeName } from './worker-entries.js';

/** What a runtime needs to start one instance (replica) of a worker. */
export interface LaunchSpec {
  name: string;
  /** 0-based replica index. */
  replica: number;
  /** Working directory: the worker's directory, or the project's for built-ins. */
  cwd: string;
  /** Shell command that runs the worker in the foreground. */
  command: string;
  env: Record<string, string>;
  /**
   * Only the variables svc gives the worker (SVC_URL, SVC_WORKER_NAME, SVC_WORKER_CONFIG and the
   * entry's env:), without the engine's own environment: what a container gets.
   */
  containerEnv?: Record<string, string>;
  /** Where the instance's stdout and stderr are appended. */
  logFile: string;
  /** For user workers: their manifest (the docker runtime builds an image from it). */
  manifest?: Manifest;
  /** Rebuild/reinstall even when cached. */
  force?: boolean;
  /**
   * Aborted when the launch is superseded (its worker stopped or restarted, the engine stopping):
   * the runtime ends what it is doing (an image build, a container not yet started) and rejects
   * with the signal's reason, so a stop waits seconds, not the minutes a build can take.
   */
  signal?: AbortSignal;
}

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export interface Instance {
  /** OS process id where there is one on this host (process runtime). */
  readonly pid: number | undefined;
  /** pid, or container id. */
  readonly id: string;
  /** Process runtime: what tells this process from a later one with its pid (process-identity.ts). */
  readonly started?: string;
  readonly exited: Promise<ExitInfo>;
  /** Ask it to stop (SIGTERM); after `graceMs` force it. Resolves once it is gone. */
  stop(graceMs: number): Promise<void>;
}

/**
 * How a worker instance runs: a plain process (default) or a Docker container. One small
 * interface, one conformance suite (test/supervisor/runtime-conformance.ts) run against each.
 */
export interface Runtime {
  readonly name: RuntimeName;
  launch(spec: LaunchSpec): Promise<Instance>;
}
