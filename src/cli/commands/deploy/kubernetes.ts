import { relative } from 'node:path';
import { Command, Flags } from '@oclif/core';
import { ConfigFileError } from '../../../engine/config/config-error.js';
import { fail, failWith } from '../../client.js';
import { DeployError, writeKubernetesManifests } from '../../deploy/kubernetes-project.js';
import { configFlag } from '../../project.js';
import { usageFail } from '../../usage-error.js';

export default class DeployKubernetes extends Command {
  static override summary = 'Write Kubernetes manifests for the project: the engine, Redis, the built-ins and one Deployment per worker.';
  static override description = [
    'Reads config.yaml and .svc/build/images.json (written by svc build) and writes plain YAML with a kustomization.yaml to deploy/kubernetes (--out): the engine with its Service and health probes (--engines N > 1: cluster mode on the Redis backplane), Redis in the cluster (or --redis-url, or a non-loopback engine.cluster.redis_url, outside it), and every worker of config.yaml with its replicas, SVC_URL pointing at the engine\'s Service and its token from a Secret (generated in secret.yaml and kept on later runs, or --secret to name your own).',
    'Apply with: kubectl apply -k deploy/kubernetes. docs/deploy.md says what each file holds.',
  ].join('\n\n');
  static override examples = [
    'svc deploy kubernetes',
    'svc deploy kubernetes --engines 3',
    'svc deploy kubernetes --redis-url rediss://:password@redis.example.com:6380 --secret svc-tokens',
    'svc deploy kubernetes --registry registry.example.com/team --image-tag 4f2a9c1e',
  ];
  static override flags = {
    config: configFlag,
    out: Flags.string({ char: 'o', summary: 'Directory of the manifests (default: deploy/kubernetes next to config.yaml).' }),
    engines: Flags.integer({ summary: 'Number of engines; more than 1 runs them in cluster mode on Redis.', min: 1, max: 64, default: 1 }),
    'redis-url': Flags.string({ summary: 'A Redis outside the cluster (managed) instead of one in it; kept in the Secret.' }),
    'redis-image': Flags.string({ summary: 'Image of the Redis run in the cluster.', default: 'redis:7-bookworm' }),
    registry: Flags.string({ summary: 'Image name prefix when .svc/build/images.json is missing (default: deploy.registry of config.yaml).' }),
    'image-tag': Flags.string({ summary: 'Image tag when .svc/build/images.json is missing.' }),
    secret: Flags.string({ summary: 'Name of an existing Secret with the tokens (SVC_ADMIN_TOKEN, SVC_WORKER_TOKEN, SVC_QUEUE_TOKEN, SVC_CRON_TOKEN); no secret.yaml is written (one of an earlier run is kept, not applied).' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DeployKubernetes);
    if (flags['redis-url'] !== undefined && !/^rediss?:\/\/./.test(flags['redis-url'])) usageFail('deploy:kubernetes', `--redis-url: must start with redis:// or rediss://, got ${JSON.stringify(flags['redis-url'])}`);
    try {
      const r = writeKubernetesManifests({
        configFile: flags.config,
        ...(flags.out !== undefined ? { out: flags.out } : {}),
        engines: flags.engines,
        ...(flags['redis-url'] !== undefined ? { redisUrl: flags['redis-url'] } : {}),
        redisImage: flags['redis-image'],
        ...(flags.registry !== undefined ? { registry: flags.registry } : {}),
        ...(flags['image-tag'] !== undefined ? { imageTag: flags['image-tag'] } : {}),
        ...(flags.secret !== undefined ? { secret: flags.secret } : {}),
      });
      const dir = relative(process.cwd(), r.dir) || '.';
      this.log(`Wrote ${r.files.length} files to ${dir}: ${r.files.join(', ')}`);
      for (const note of r.notes) this.log(`  ${note}`);
      this.log(`Apply: kubectl apply -k ${dir}`);
    } catch (e) {
      if (e instanceof ConfigFileError) failWith(e, 2);
      if (e instanceof DeployError) fail(`${e.code}: ${e.message}`, 2);
      throw e;
    }
  }
}
