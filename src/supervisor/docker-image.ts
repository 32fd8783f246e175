import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type Docker from 'dockerode';
import tar from 'tar-fs';
import { SVC_ROOT } from './launch.js';
import type { Manifest, RuntimeKind } from './manifest.js';
import { SvcError } from 'svc-sdk';

/**
 * One image per worker, built from `images/<runtime.kind>/Dockerfile` and the worker's directory,
 * tagged `svc-worker-<name>:<hash of the build context>` (`svc build` names the repository itself):
 * an unchanged worker is never rebuilt, a changed one gets a new tag, and `--force` rebuilds the
 * same tag without Docker's layer cache.
 */

export class ImageBuildError extends SvcError {
  constructor(message: string) {
    super('image_build_failed', message);
    this.name = 'ImageBuildError';
  }
}

/** What never goes into a worker's build context: host-built environments and our own state. */
const IGNORED = new Set(['node_modules', '.venv', '.svc', '.git', '__pycache__', '.pytest_cache', '.mypy_cache', '.ruff_cache', '.svc-build']);

/** Base image per kind: the build argument, the official default and the offline equivalent. */
const BASES: Record<RuntimeKind, { arg: string; env: string; official: string; local: string }> = {
  python: { arg: 'PYTHON_BASE', env: 'SVC_PYTHON_BASE', official: 'python:3.11-slim-bookworm', local: 'svc-base-python:local' },
  typescript: { arg: 'NODE_BASE', env: 'SVC_NODE_BASE', official: 'node:20-bookworm-slim', local: 'svc-base-node:local' },
};

export async function hasImage(docker: Docker, ref: string): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect();
    return true;
  } catch {
    return false;
  }
}

/**
 * The base image for a kind: $SVC_PYTHON_BASE / $SVC_NODE_BASE when set; else the official image
 * when present locally; else the offline equivalent of scripts/build-base-images.sh when present;
 * else the official one (Docker then tries to pull it).
 */
export async function baseImageFor(docker: Docker, kind: RuntimeKind): Promise<string> {
  const b = BASES[kind];
  const fromEnv = process.env[b.env];
  if (fromEnv) return fromEnv;
  if (await hasImage(docker, b.official)) return b.official;
  if (await hasImage(docker, b.local)) return b.local;
  return b.official;
}

/** Copy `src` into `dst` without IGNORED entries (the context the image is built from). */
function copyFiltered(src: string, dst: string): void {
  cpSync(src, dst, {
    recursive: true,
    dereference: true,
    filter: (p) => {
      const rel = relative(src, p);
      if (rel === '') return true;
      return !rel.split('/').some((part) => IGNORED.has(part) || part.startsWith('.venv'));
    },
  });
}

/** Every file under `dir` (sorted), hashed with its path and mode: the build's cache key. */
function hashTree(dir: string, h = createHash('sha256'), base = dir): ReturnType<typeof createHash> {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = statSync(p);
    const rel = relative(base, p);
    if (st.isDirectory()) hashTree(p, h.update(`d ${rel}\0`), base);
    else h.update(`f ${rel} ${st.mode & 0o111 ? 'x' : '-'}\0`).update(readFileSync(p)).update('\0');
  }
  return h;
}

export interface BuiltImage {
  tag: string;
  /** cached: the tag existed; tagged: the same content existed under another name (`from`), now tagged; built. */
  status: 'cached' | 'tagged' | 'built';
  seconds: number;
  base: string;
  /** tagged: the image it was tagged from. */
  from?: string;
}

/**
 * The image tag `tag` names, made from an image with the same content under another name, if
 * there is one: `svc build` with another registry prefix, or the docker runtime's
 * `svc-worker-<name>` for `svc build`'s `<prefix><name>`. The tag after the `:` is the hash of
 * everything that goes into the image, so an image of the same kind (`label`) carrying it is this
 * image; tagging it takes a moment where building it again took minutes. Returns what it tagged from.
 */
export async function tagSameContent(docker: Docker, tag: string, label: string): Promise<string | undefined> {
  const colon = tag.lastIndexOf(':');
  const repo = tag.slice(0, colon);
  const hash = tag.slice(colon + 1);
  const images = await docker.listImages({ filters: { label: [label] } });
  const from = images.flatMap((i) => i.RepoTags ?? []).find((t) => t !== tag && t.slice(t.lastIndexOf(':') + 1) === hash);
  if (from === undefined) return undefined;
  await docker.getImage(from).tag({ repo, tag: hash });
  return from;
}

export interface BuildOptions {
  force?: boolean;
  /** The image's name without the tag (default `svc-worker-<name>`; `svc build` gives `<registry prefix><name>`). */
  repository?: string;
  onLine?: (line: string) => void;
  /**
   * Aborted: the build ends (Docker stops it when its request goes away; the container of the
   * step that was running is removed before this returns) and ensureWorkerImage rejects with the
   * signal's reason.
   */
  signal?: AbortSignal;
}

const inFlight = new Map<string, Promise<BuiltImage>>();

/** The dependency file that names svc-sdk by an absolute path (`file:///…`, `file:/…`), if any. */
function sdkOutsideWorker(m: Manifest): string | undefined {
  const file = m.runtime.kind === 'python' ? 'requirements.txt' : 'package.json';
  const path = join(m.dir, file);
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, 'utf8');
  const absolute = m.runtime.kind === 'python' ? /^[ \t]*svc[-_]sdk[ \t]*@[ \t]*file:\/\//im.test(text) : /"svc-sdk"\s*:\s*"file:\//.test(text);
  return absolute ? file : undefined;
}

/**
 * Make sure the image of this worker exists (building it when its context changed). Replicas
 * starting together share one build.
 */
export async function ensureWorkerImage(docker: Docker, m: Manifest, opts: BuildOptions = {}): Promise<BuiltImage> {
  const t0 = Date.now();
  const onLine = opts.onLine ?? (() => {});
  const signal = opts.signal;
  signal?.throwIfAborted();
  const dockerfile = join(SVC_ROOT, 'images', m.runtime.kind, 'Dockerfile');
  if (!existsSync(dockerfile)) throw new ImageBuildError(`no Dockerfile for runtime kind ${m.runtime.kind}: ${dockerfile} is missing`);
  const outside = sdkOutsideWorker(m);
  if (outside) throw new ImageBuildError(`${m.name} cannot be built into an image: its ${outside} names the svc SDK by an absolute path, which the image does not have (a project made by an older svc); run \`svc sdk update\` in the project to vendor the SDK into the worker`);
  const base = await baseImageFor(docker, m.runtime.kind);
  const ctx = mkdtempSync(join(tmpdir(), `svc-build-${m.name}-`));
  try {
    copyFiltered(m.dir, ctx);
    // The worker brings its SDK (vendor/, `svc sdk update`); the context adds only the Dockerfile.
    mkdirSync(join(ctx, '.svc-build'), { recursive: true });
    cpSync(dockerfile, join(ctx, '.svc-build', 'Dockerfile'));
    const buildargs = { [BASES[m.runtime.kind].arg]: base, INSTALL: m.scripts.install, START: m.scripts.start };
    const hash = hashTree(ctx).update(JSON.stringify(buildargs)).digest('hex').slice(0, 16);
    const tag = `${opts.repository ?? `svc-worker-${m.name}`}:${hash}`;
    if (!opts.force && (await hasImage(docker, tag))) return { tag, status: 'cached', seconds: (Date.now() - t0) / 1000, base };
    const from = opts.force ? undefined : await tagSameContent(docker, tag, `svc.worker=${m.name}`);
    if (from) return { tag, status: 'tagged', from, seconds: (Date.now() - t0) / 1000, base };
    signal?.throwIfAborted();
    const pending = inFlight.get(tag);
    if (pending) {
      try {
        return await abortable(pending, signal);
      } catch (e) {
        // The build joined was cancelled by its own starter (another worker of this directory
        // stopped), not by this one: build it here.
        if (signal?.aborted || !isCancellation(e)) throw e;
        return await ensureWorkerImage(docker, m, opts);
      }
    }
    onLine(`building image ${tag} from ${m.dir} (images/${m.runtime.kind}/Dockerfile, ${base})`);
    const job = runBuild(docker, tar.pack(ctx) as unknown as NodeJS.ReadableStream, {
      tag,
      dockerfile: '.svc-build/Dockerfile',
      buildargs,
      force: opts.force === true,
      labels: { 'svc.worker': m.name, 'svc.source': m.dir },
      what: `the image of ${m.name}`,
      base: { image: base, env: BASES[m.runtime.kind].env },
    }, onLine, signal).then(() => ({ tag, status: 'built' as const, seconds: (Date.now() - t0) / 1000, base }));
    inFlight.set(tag, job);
    try {
      return await job;
    } finally {
      inFlight.delete(tag);
    }
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

export interface BuildRequest {
  tag: string;
  /** Path of the Dockerfile inside the context. */
  dockerfile: string;
  buildargs: Record<string, string>;
  force: boolean;
  labels: Record<string, string>;
  /** What is built, for the error message ("the image of math-worker"). */
  what: string;
  /** The base image and the variable that chooses it, for the hint when it cannot be pulled. */
  base: { image: string; env: string };
}

/** A build ended by its AbortSignal: rejects with the signal's reason, marked so a joiner can tell. */
const CANCELLED = new WeakSet<object>();

function isCancellation(e: unknown): boolean {
  return typeof e === 'object' && e !== null && CANCELLED.has(e);
}

function cancellation(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  if (typeof reason === 'object' && reason !== null) CANCELLED.add(reason);
  return reason;
}

/** `p`, or the signal's reason as soon as it aborts (`p` itself goes on for whoever else awaits it). */
function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(cancellation(signal));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The legacy builder names the container of each RUN step: ` ---> Running in 0e3b1fe2ad1b`. */
const STEP_CONTAINER = /^\s*---> Running in ([0-9a-f]{12,64})\s*$/;

/**
 * Build one image from a packed context, passing Docker's output on line by line; fails with its
 * last 20 lines. On `signal`, the request is dropped (Docker cancels the build and kills the step
 * running) and the step's container removed here too, so none is left when this rejects.
 */
export async function runBuild(docker: Docker, context: NodeJS.ReadableStream, req: BuildRequest, onLine: (l: string) => void, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  const steps = new Set<string>();
  const stream: NodeJS.ReadableStream = await docker
    .buildImage(context, {
      ...(signal ? { abortSignal: signal } : {}),
      t: req.tag,
      dockerfile: req.dockerfile,
      buildargs: req.buildargs,
      // No bridge on these machines: the build reaches the package registries through the host's network.
      networkmode: 'host',
      nocache: req.force,
      rm: true,
      forcerm: true,
      labels: req.labels,
    })
    .catch((e: unknown) => {
      throw signal?.aborted ? cancellation(signal) : e;
    });
  const tail: string[] = [];
  let failure: string | undefined;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err) => (err ? reject(err) : resolve()),
      (ev: { stream?: string; error?: string; errorDetail?: { message?: string } }) => {
        if (ev.error) failure = ev.errorDetail?.message ?? ev.error;
        for (const line of (ev.stream ?? ev.error ?? '').split('\n')) {
          if (line.trim() === '') continue;
          const step = STEP_CONTAINER.exec(line)?.[1];
          if (step) steps.add(step);
          tail.push(line);
          if (tail.length > 20) tail.shift();
          onLine(line);
        }
      },
    );
  }).catch((e: Error) => {
    failure ??= e.message;
  });
  if (signal?.aborted) {
    await Promise.all([...steps].map((id) => docker.getContainer(id).remove({ force: true }).catch(() => undefined)));
    throw cancellation(signal);
  }
  if (failure !== undefined) {
    const hint = /pull access denied|not found|manifest unknown|dial tcp|lookup .* on/i.test(failure)
      ? `\nThe base image ${req.base.image} is not on this machine and cannot be pulled; build the offline equivalents with scripts/build-base-images.sh (or set ${req.base.env}).`
      : '';
    throw new ImageBuildError(`building ${req.what} failed: ${failure}\n${tail.join('\n')}${hint}`);
  }
}
