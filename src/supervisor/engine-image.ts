import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import dockerignore from '@balena/dockerignore';
import type Docker from 'dockerode';
import tar from 'tar-fs';
import { baseImageFor, hasImage, ImageBuildError, runBuild, tagSameContent, type BuiltImage } from './docker-image.js';
import { SVC_ROOT } from './launch.js';

/**
 * The engine image (the Dockerfile at the root of svc: engine, CLI, built-in workers, console),
 * built from the svc installation's own files as `docker build .` would send them (.dockerignore
 * applied) and tagged `<repository>:<hash of those files and the base image>`, so an unchanged svc
 * is never rebuilt.
 */

// A CommonJS module whose types declare an ES default export: at run time the import is the function.
const ignore = dockerignore as unknown as typeof dockerignore.default;

/** The label the engine image carries (`svc.image=engine`): how an image of the same content under another name is found. */
const ENGINE_LABEL = 'svc.image';

/** Whether a path (relative, '/'-separated) goes into the context: .dockerignore's rules. */
function contextFilter(root: string): (rel: string) => boolean {
  const rules = existsSync(join(root, '.dockerignore')) ? readFileSync(join(root, '.dockerignore'), 'utf8').split('\n') : [];
  return ignore().add(rules).createFilter();
}

/** The context's files, relative and '/'-separated, sorted: what .dockerignore leaves of `root`. */
export function contextFiles(root: string): string[] {
  const keep = contextFilter(root);
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (!keep(r)) continue;
      const st = statSync(join(root, r));
      if (st.isDirectory()) walk(r);
      else if (st.isFile()) out.push(r);
    }
  };
  walk('');
  return out;
}

/** Make sure the engine image exists under `repository`, building it when its inputs changed. */
export async function ensureEngineImage(docker: Docker, opts: { repository: string; force?: boolean; onLine?: (l: string) => void; root?: string }): Promise<BuiltImage> {
  const t0 = Date.now();
  const root = opts.root ?? SVC_ROOT;
  const onLine = opts.onLine ?? (() => {});
  if (!existsSync(join(root, 'Dockerfile'))) throw new ImageBuildError(`no Dockerfile at ${root}: the engine image is built from an svc checkout or installation that has one`);
  const base = await baseImageFor(docker, 'typescript');
  const files = contextFiles(root);
  const h = createHash('sha256').update(`NODE_BASE=${base}\0`);
  for (const f of files) h.update(`${f} ${statSync(join(root, f)).mode & 0o111 ? 'x' : '-'}\0`).update(readFileSync(join(root, f))).update('\0');
  const tag = `${opts.repository}:${h.digest('hex').slice(0, 16)}`;
  if (!opts.force && (await hasImage(docker, tag))) return { tag, status: 'cached', seconds: (Date.now() - t0) / 1000, base };
  const from = opts.force ? undefined : await tagSameContent(docker, tag, `${ENGINE_LABEL}=engine`);
  if (from) return { tag, status: 'tagged', from, seconds: (Date.now() - t0) / 1000, base };
  onLine(`building image ${tag} from ${root} (Dockerfile, ${base})`);
  // Packed as the docker CLI sends it (directories included), so Docker's layer cache is shared with `docker build .`.
  const keep = contextFilter(root);
  const context = tar.pack(root, { ignore: (name) => name !== root && !keep(relative(root, name).split(sep).join('/')) });
  await runBuild(docker, context as unknown as NodeJS.ReadableStream, {
    tag,
    dockerfile: 'Dockerfile',
    buildargs: { NODE_BASE: base },
    force: opts.force === true,
    labels: { [ENGINE_LABEL]: 'engine' },
    what: 'the engine image',
    base: { image: base, env: 'SVC_NODE_BASE' },
  }, onLine);
  return { tag, status: 'built', seconds: (Date.now() - t0) / 1000, base };
}
