import { unknownKeyMessage } from 'svc-sdk/internal';
import type { TokenSpec } from '../auth.js';
import { RESERVED_WORKER_NAMES } from '../worker-names.js';
import { ConfigFileError, expandEnv, isMapping } from './config-error.js';

/**
 * `engine.auth` of config.yaml. Token values may name environment variables
 * (`token: ${SVC_ADMIN_TOKEN}`), so secrets need not live in the file.
 */

const TOKEN_KEYS = ['name', 'token', 'admin', 'call', 'register', 'trigger_types', 'names'];

export function parseAuth(file: string, raw: unknown, env: NodeJS.ProcessEnv = process.env): TokenSpec[] {
  if (raw === undefined || raw === null) return [];
  if (!isMapping(raw)) throw new ConfigFileError(file, 'engine.auth: must be a mapping with tokens');
  for (const k of Object.keys(raw)) if (k !== 'tokens') throw new ConfigFileError(file, `engine.auth.${k}: ${unknownKeyMessage(k, ['tokens'])}`);
  const list = raw.tokens ?? [];
  if (!Array.isArray(list)) throw new ConfigFileError(file, 'engine.auth.tokens: must be a list');
  const names = new Set<string>();
  return list.map((t, i) => {
    const at = `engine.auth.tokens[${i}]`;
    if (!isMapping(t)) throw new ConfigFileError(file, `${at}: must be a mapping with name and token`);
    for (const k of Object.keys(t)) if (!TOKEN_KEYS.includes(k)) throw new ConfigFileError(file, `${at}.${k}: ${unknownKeyMessage(k, TOKEN_KEYS)}`);
    if (typeof t.name !== 'string' || t.name === '') throw new ConfigFileError(file, `${at}.name: must be a non-empty string`);
    if (names.has(t.name)) throw new ConfigFileError(file, `${at}.name: ${t.name} is used twice`);
    names.add(t.name);
    if (typeof t.token !== 'string' || t.token === '') throw new ConfigFileError(file, `${at}.token: must be a non-empty string (or \${ENV_VAR})`);
    const token = expandEnv(file, `${at}.token`, t.token, env);
    if (token.length < 16) throw new ConfigFileError(file, `${at}.token: must be at least 16 characters (got ${token.length}); use a random secret`);
    const list = (k: string): string[] => {
      const v = t[k] ?? [];
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) throw new ConfigFileError(file, `${at}.${k}: must be a list of function ids or prefix patterns like "math::*"`);
      return v as string[];
    };
    if (t.admin !== undefined && typeof t.admin !== 'boolean') throw new ConfigFileError(file, `${at}.admin: must be true or false`);
    const granted = t.names ?? [];
    if (!Array.isArray(granted) || granted.some((n) => typeof n !== 'string' || !RESERVED_WORKER_NAMES.includes(n))) {
      throw new ConfigFileError(file, `${at}.names: must be a list of reserved worker names (${RESERVED_WORKER_NAMES.join(', ')}); other names need no grant, got ${JSON.stringify(granted)}`);
    }
    return {
      name: t.name,
      token,
      admin: t.admin === true,
      call: list('call'),
      register: list('register'),
      trigger_types: list('trigger_types'),
      ...(granted.length > 0 ? { names: granted as string[] } : {}),
    };
  });
}
