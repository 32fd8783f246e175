import type { ErrorBody } from 'svc-sdk/protocol';
import type { Rights } from './auth.js';
import type { RunIdentity } from './engine-run.js';

/**
 * Names of the engine and of its built-in workers. Logs, `svc worker list` and the console show
 * them as the engine's own, so only an instance the engine started under that name may use one.
 */
export const RESERVED_WORKER_NAMES: readonly string[] = ['engine', 'svc-state', 'svc-http', 'svc-queue', 'svc-cron'];
/** Prefixes of the names the engine's own clients use (`svc-cli:<pid>`, `svc-console:<pid>`). */
export const CLIENT_NAME_PREFIXES: readonly string[] = ['svc-cli', 'svc-console'];

/**
 * The name as compared: case, compatibility forms (full-width letters), spaces and invisible
 * characters do not make `SVC-State` or `svc-state\u200b` a different name from `svc-state`.
 */
export function canonical(name: string): string {
  return name.normalize('NFKC').replace(/[\p{Cc}\p{Cf}\s]/gu, '').toLowerCase();
}

/**
 * Why a connection may not call itself `name`, or null when it may. Reserved names belong to the
 * instance the engine started as that worker (it presented the secret the supervisor gave it) and
 * to tokens granted them (`names:`, for built-ins run outside the supervisor as in
 * docker-compose.yml), client names to the engine's own clients, and all to admin tokens.
 */
export function reservedNameRefusal(name: string, identity: RunIdentity | null, token: Rights | null): ErrorBody | null {
  if (token?.admin) return null;
  const c = canonical(name);
  const reserved = RESERVED_WORKER_NAMES.find((r) => c === r);
  if (reserved !== undefined) {
    if (identity?.kind === 'instance' && canonical(identity.worker) === reserved) return null;
    if (token?.names?.includes(reserved)) return null;
    return {
      code: 'reserved_name',
      message: `Worker name ${JSON.stringify(name.slice(0, 200))} is reserved for the engine's own ${reserved === 'engine' ? 'events' : `${reserved} worker`}: only the instance the engine started as ${reserved} (it presents the SVC_RUN_SECRET it was given), a token granted the name (names:) or an admin token may use it; pick another name`,
    };
  }
  const prefix = CLIENT_NAME_PREFIXES.find((p) => c.startsWith(p));
  if (prefix !== undefined && identity?.kind !== 'client') {
    return {
      code: 'reserved_name',
      message: `Worker name ${JSON.stringify(name.slice(0, 200))} is reserved for the engine's own clients (${prefix}…): only the svc CLI and console of this project (they present the client secret of .svc/engine.json) or an admin token may use it; pick another name`,
    };
  }
  return null;
}
