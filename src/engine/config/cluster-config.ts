import { isIP } from 'node:net';
import { unknownKeyMessage } from 'svc-sdk/internal';
import { DEFAULT_CLUSTER_LEASE_MS, DEFAULT_CLUSTER_PREFIX, NODE_ID_PATTERN, type ClusterOptions } from '../cluster/cluster.js';
import { ConfigFileError, expandEnv, isMapping } from './config-error.js';

/**
 * `engine.cluster` of config.yaml (docs/cluster.md): absent or null is a single engine. Values may
 * name environment variables (`node_id: ${SVC_NODE_ID}`), so one file can serve several engines.
 */
const CLUSTER_KEYS = ['redis_url', 'node_id', 'lease_ms', 'prefix', 'advertise_url'];

export function parseCluster(file: string, raw: unknown, env: NodeJS.ProcessEnv = process.env): ClusterOptions | null {
  if (raw === undefined || raw === null || raw === false) return null;
  if (!isMapping(raw)) throw new ConfigFileError(file, 'engine.cluster: must be a mapping (redis_url, node_id, lease_ms, prefix, advertise_url)');
  for (const k of Object.keys(raw)) {
    if (!CLUSTER_KEYS.includes(k)) throw new ConfigFileError(file, `engine.cluster.${k}: ${unknownKeyMessage(k, CLUSTER_KEYS)}`);
  }
  const str = (k: string): string | undefined => {
    const v = raw[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v.length === 0) throw new ConfigFileError(file, `engine.cluster.${k}: must be a non-empty string, got ${JSON.stringify(v)}`);
    return expandEnv(file, `engine.cluster.${k}`, v, env);
  };
  const redisUrl = str('redis_url');
  if (!redisUrl) throw new ConfigFileError(file, 'engine.cluster.redis_url: required (e.g. redis://127.0.0.1:6379)');
  if (!/^rediss?:\/\/./.test(redisUrl)) throw new ConfigFileError(file, `engine.cluster.redis_url: must start with redis:// or rediss://, got ${JSON.stringify(redisUrl)}`);
  const nodeId = str('node_id');
  if (nodeId !== undefined && !NODE_ID_PATTERN.test(nodeId)) {
    throw new ConfigFileError(file, `engine.cluster.node_id: must be 1-64 letters, digits, ".", "_" or "-", got ${JSON.stringify(nodeId)}`);
  }
  const prefix = str('prefix') ?? DEFAULT_CLUSTER_PREFIX;
  if (/[{}\s]/.test(prefix)) throw new ConfigFileError(file, `engine.cluster.prefix: must not contain braces or whitespace, got ${JSON.stringify(prefix)}`);
  const lease = raw.lease_ms ?? DEFAULT_CLUSTER_LEASE_MS;
  if (typeof lease !== 'number' || !Number.isInteger(lease) || lease < 300 || lease > 600_000) {
    throw new ConfigFileError(file, `engine.cluster.lease_ms: must be an integer from 300 to 600000, got ${JSON.stringify(lease)}`);
  }
  const given = str('advertise_url');
  const advertiseUrl = given === undefined ? undefined : engineUrlOf(given);
  if (advertiseUrl === null) {
    throw new ConfigFileError(file, `engine.cluster.advertise_url: must be ws://host:port (or wss://), no path, got ${JSON.stringify(given)}`);
  }
  return { redisUrl, ...(nodeId !== undefined ? { nodeId } : {}), leaseMs: lease, prefix, ...(advertiseUrl !== undefined ? { advertiseUrl } : {}) };
}

/**
 * `ws[s]://host[:port]` as the relay opens it (channel-proxy.ts), or null. An IPv6 address comes
 * from the environment without brackets (`ws://${SVC_POD_IP}:49134` in an IPv6 Kubernetes
 * cluster): it is bracketed, the part after its last colon being the port.
 */
function engineUrlOf(s: string): string | null {
  const v6 = /^(wss?):\/\/([0-9A-Fa-f:.]+):(\d+)$/.exec(s);
  const url = v6 && isIP(v6[2]!) === 6 ? `${v6[1]}://[${v6[2]}]:${v6[3]}` : s;
  if (!/^wss?:\/\/[^/?#\s@]+$/.test(url)) return null;
  try {
    new URL(url);
  } catch {
    return null;
  }
  return url;
}
