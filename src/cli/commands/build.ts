import { relative, resolve } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { SvcError } from 'svc-sdk';
import { buildProjectImages, type ImageResult } from '../build-images.js';
import { fail } from '../client.js';
import { configFlag, table } from '../project.js';
import { dockerClient } from '../../supervisor/docker-runtime.js';

export default class Build extends Command {
  static override summary = "Build the project's images: the engine and one per worker, tagged with the content hash; --save writes them to a tarball.";
  static override description = `Builds the engine image (the engine, the CLI and the built-in workers svc-state, svc-http, svc-queue,
svc-cron) and one image per worker of config.yaml that has a directory, each named
<registry prefix><name>:<hash of what goes into it> (the engine: <prefix>svc-engine:<hash>). An image
whose tag exists is not built again: a second run builds nothing; one whose content exists under another
name (another --registry) is tagged from it, not built. The prefix is --registry, else
config.yaml's deploy.registry, else none. Writes the references to .svc/build/images.json (read by
svc deploy kubernetes). Pushing is yours: docker push <reference> for each (after docker login), or
--save FILE and docker load -i FILE on an air-gapped host. Docker's build output goes to stderr.
Exit 2 for a bad config.yaml, manifest or --registry; 1 when Docker is unreachable or a build fails.`;
  static override examples = ['svc build', 'svc build --registry registry.example.com/team', 'svc build --save images.tar'];
  static override flags = {
    config: configFlag,
    registry: Flags.string({ summary: 'Prefix of the image names, e.g. registry.example.com/team (overrides deploy.registry; "" for none).' }),
    save: Flags.string({ summary: 'Write `docker save` of the images to this file (a tar for docker load).' }),
    force: Flags.boolean({ summary: "Build every image again, without Docker's layer cache.", default: false }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Build);
    const { docker, where } = dockerClient();
    try {
      await docker.ping();
    } catch (e) {
      fail(`docker_unavailable: Docker is not reachable at ${where}: ${(e as Error).message.split('\n')[0]} — svc build needs a Docker engine (as root: scripts/start-dockerd.sh; DOCKER_HOST for another one)`, 1);
    }
    try {
      const r = await buildProjectImages(docker, {
        configFile: resolve(flags.config),
        ...(flags.registry !== undefined ? { registry: flags.registry } : {}),
        ...(flags.save ? { save: resolve(flags.save) } : {}),
        force: flags.force,
        onLine: (l) => process.stderr.write(`  ${l}\n`),
        onImage: (i: ImageResult) => process.stderr.write(`${i.status === 'built' ? '✓ built' : i.status === 'tagged' ? '✓ tagged' : '= unchanged'} ${i.tag}${i.from ? ` (same content as ${i.from})` : ''}\n`),
      });
      const rows = [
        ...r.images.map((i) => ({ name: i.name, image: i.tag, status: i.status === 'built' ? `built (${i.seconds.toFixed(1)} s)` : i.status === 'tagged' ? `tagged from ${i.from ?? '?'}, not built` : 'unchanged, not built' })),
        ...r.skipped.map((s) => ({ name: s.name, image: '-', status: `skipped: ${s.reason}` })),
      ];
      this.log(table(rows, ['name', 'image', 'status']));
      const count = (status: ImageResult['status']): number => r.images.filter((i) => i.status === status).length;
      this.log(`\n${count('built')} built, ${count('tagged')} tagged, ${count('cached')} unchanged; references in ${relative(process.cwd(), r.imagesFile) || r.imagesFile}`);
      if (r.saved) this.log(`saved ${r.images.length} images to ${r.saved.file} (${(r.saved.bytes / 2 ** 20).toFixed(1)} MiB): docker load -i ${r.saved.file}`);
      this.log(`to push: docker push <image> for each (after docker login to the registry)`);
    } catch (e) {
      if (e instanceof SvcError) fail(`${e.code}: ${e.message}`, e.code === 'image_build_failed' ? 1 : 2);
      throw e;
    }
  }
}
