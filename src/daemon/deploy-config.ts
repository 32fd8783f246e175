import { unknownKeyMessage } from 'svc-sdk/internal';
import { ConfigFileError } from '../engine/config/config-error.js';

/**
 * config.yaml's `deploy:` block: how the project's images are named outside this machine (`svc
 * build`, `svc deploy kubernetes`). The engine itself reads nothing here.
 */
export interface DeployConfig {
  /** Prefix of every image name, e.g. `registry.example.com/team/` (always ending in '/'), or '' for none. */
  registry: string;
}

const DEPLOY_KEYS = ['registry'];
/** A registry host (with an optional port) and path, as Docker's image references allow them. */
const REGISTRY = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*\/?$/;

/** `--registry` or deploy.registry as the prefix image names start with ('' for none); null when it is no registry prefix. */
export function registryPrefix(value: string): string | null {
  if (value === '') return '';
  if (!REGISTRY.test(value)) return null;
  return value.endsWith('/') ? value : `${value}/`;
}

export const REGISTRY_HINT = 'host[:port][/path], lowercase, e.g. registry.example.com/team';

export function parseDeployConfig(file: string, raw: unknown): DeployConfig {
  if (raw === undefined || raw === null) return { registry: '' };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigFileError(file, 'deploy: must be a mapping (registry:)');
  const block = raw as Record<string, unknown>;
  for (const key of Object.keys(block)) if (!DEPLOY_KEYS.includes(key)) throw new ConfigFileError(file, `deploy.${key}: ${unknownKeyMessage(key, DEPLOY_KEYS, 'key of deploy')}`);
  if (block.registry !== undefined && typeof block.registry !== 'string') throw new ConfigFileError(file, `deploy.registry: must be a string, got ${JSON.stringify(block.registry)}`);
  const registry = registryPrefix(block.registry ?? '');
  if (registry === null) throw new ConfigFileError(file, `deploy.registry: ${JSON.stringify(block.registry)} is not a registry prefix (${REGISTRY_HINT})`);
  return { registry };
}

/** The prefix images are named with: `--registry` when given (checked here), else config.yaml's deploy.registry (checked by parseDeployConfig). */
export function imagePrefix(config: DeployConfig, flag: string | undefined): string {
  if (flag === undefined) return config.registry;
  const p = registryPrefix(flag);
  if (p === null) throw new ConfigFileError('--registry', `${JSON.stringify(flag)} is not a registry prefix (${REGISTRY_HINT})`);
  return p;
}
