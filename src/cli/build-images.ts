/**
 * `svc build`: the images a project runs as outside this machine. One per worker of config.yaml
 * that has a directory (built as the docker runtime builds it, from the worker's directory with its
 * vendored SDK) and the engine image (which also runs the built-in workers), each tagged
 * `<registry prefix><name>:<hash of what goes into it>`, so that an unchanged input is never built
 * twice. The references go to .svc/build/images.json, which `svc deploy kubernetes` reads.
 */
import { createWriteStream, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import { loadConfig } from '../daemon/config-file.js';
import { imagePrefix } from '../daemon/deploy-config.js';
import { ensureEngineImage } from '../supervisor/engine-image.js';
import { ensureWorkerImage, type BuiltImage } from '../supervisor/docker-image.js';
import { loadManifest } from '../supervisor/manifest.js';
import { parseWorkerEntries } from '../supervisor/worker-entries.js';

/** The image of the engine is `<prefix>svc-engine`; a worker's is `<prefix><worker name>`. */
export const ENGINE_REPOSITORY = 'svc-engine';

export interface ImageResult extends BuiltImage {
  /** 'engine' or the worker's name. */
  name: string;
}

export interface ProjectImages {
  images: ImageResult[];
  /** Workers without an image of their own, and why. */
  skipped: Array<{ name: string; reason: string }>;
  /** .svc/build/images.json of the project. */
  imagesFile: string;
  saved?: { file: string; bytes: number };
}

/** What .svc/build/images.json holds (the format `svc deploy kubernetes` reads). */
export interface ImagesFile {
  engine: string;
  workers: Record<string, string>;
}

export interface BuildProjectOptions {
  configFile: string;
  /** --registry: overrides config.yaml's deploy.registry ('' for none). */
  registry?: string;
  force?: boolean;
  /** Write `docker save` of the images to this file. */
  save?: string;
  /** Docker's build output, line by line. */
  onLine?: (line: string) => void;
  /** Each image as it is ready. */
  onImage?: (image: ImageResult) => void;
}

export async function buildProjectImages(docker: Docker, opts: BuildProjectOptions): Promise<ProjectImages> {
  const cfg = loadConfig(opts.configFile, { create: false, engineEnv: 'optional' });
  const prefix = imagePrefix(cfg.deploy, opts.registry);
  const entries = parseWorkerEntries(cfg.file, cfg.workers);
  // Every manifest is read before anything is built: a broken worker fails the command at once.
  const manifests = entries.filter((e) => e.path !== undefined).map((e) => ({ ...loadManifest(e.path!), name: e.name }));
  const images: ImageResult[] = [];
  const done = (name: string, b: BuiltImage): void => {
    const r = { name, ...b };
    images.push(r);
    opts.onImage?.(r);
  };
  const engine = await ensureEngineImage(docker, { repository: `${prefix}${ENGINE_REPOSITORY}`, ...(opts.force ? { force: true } : {}), ...(opts.onLine ? { onLine: opts.onLine } : {}) });
  done('engine', engine);
  for (const m of manifests) {
    done(m.name, await ensureWorkerImage(docker, m, { repository: `${prefix}${m.name}`, ...(opts.force ? { force: true } : {}), ...(opts.onLine ? { onLine: opts.onLine } : {}) }));
  }
  const skipped = entries.filter((e) => e.builtin !== undefined).map((e) => ({ name: e.name, reason: `built in (${e.builtin}): runs from the engine image ${engine.tag}` }));

  const imagesFile = join(dirname(cfg.file), '.svc', 'build', 'images.json');
  mkdirSync(dirname(imagesFile), { recursive: true });
  const content: ImagesFile = { engine: engine.tag, workers: Object.fromEntries(images.filter((i) => i.name !== 'engine').map((i) => [i.name, i.tag])) };
  writeFileSync(imagesFile, `${JSON.stringify(content, null, 2)}\n`);

  const result: ProjectImages = { images, skipped, imagesFile };
  if (opts.save) result.saved = await saveImages(docker, images.map((i) => i.tag), opts.save);
  return result;
}

/** `docker save` of `refs` into `file` (written beside it first, so a failed save leaves no partial file). */
async function saveImages(docker: Docker, refs: string[], file: string): Promise<{ file: string; bytes: number }> {
  const tmp = `${file}.partial`;
  try {
    // GET /images/get?names=…: dockerode has it, its types do not.
    const getImages = (docker as unknown as { getImages(o: { names: string[] }): Promise<NodeJS.ReadableStream> }).getImages.bind(docker);
    const stream = await getImages({ names: refs });
    await pipeline(stream, createWriteStream(tmp));
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
  return { file, bytes: statSync(file).size };
}
