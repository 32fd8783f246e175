import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { RUN_SECRET_HEADER } from 'svc-sdk/protocol';

/**
 * Who a run secret says a connection is: an instance the engine started (a supervised worker's
 * replica), or one of the engine's own clients (the CLI and console of its project, which read
 * the client secret from .svc/engine.json).
 */
export type RunIdentity = { kind: 'instance'; worker: string; replica: number } | { kind: 'client' };

/**
 * One run of the engine (one start of `svc --config`) and the secrets it handed out. Every
 * supervised instance gets a secret of its own in SVC_RUN_SECRET, so that the engine knows which
 * connection is which instance (svc worker list joins on it, reserved names need it) and a worker
 * left running by an earlier run, which presents that run's secret, is refused instead of serving
 * this run's calls. Secrets are kept as digests and revoked when their instance exits.
 */
export class EngineRun {
  /** Public: printed, written to .svc/engine.json, the prefix of every secret of this run. */
  readonly id = randomBytes(6).toString('hex');
  private readonly byDigest = new Map<string, RunIdentity>();
  /** The secret of the engine's own clients, for .svc/engine.json. */
  readonly clientSecret: string;

  constructor() {
    this.clientSecret = this.issue({ kind: 'client' });
  }

  /** A new secret naming `identity`; valid until revoked or this run ends. */
  issue(identity: RunIdentity): string {
    const secret = `${this.id}.${randomBytes(24).toString('base64url')}`;
    this.byDigest.set(digest(secret), identity);
    return secret;
  }

  revoke(secret: string): void {
    this.byDigest.delete(digest(secret));
  }

  /** What a presented secret names, or null when this run did not issue it (or revoked it). */
  verify(secret: string): RunIdentity | null {
    return this.byDigest.get(digest(secret)) ?? null;
  }

  /** The engine run a secret claims to come from (its prefix), for the refusal message. */
  static runOf(secret: string): string {
    const dot = secret.indexOf('.');
    return dot > 0 && dot <= 32 && /^[0-9a-f]+$/.test(secret.slice(0, dot)) ? secret.slice(0, dot) : 'unknown';
  }
}

/** The secret a connection presents, if any (one header; the SDKs send it when SVC_RUN_SECRET is set). */
export function presentedRunSecret(req: IncomingMessage): string | undefined {
  const h = req.headers[RUN_SECRET_HEADER];
  const v = Array.isArray(h) ? h[0] : h;
  return typeof v === 'string' && v.length > 0 ? v.trim() : undefined;
}

// A map keyed by the digest, not the secret: lookups then compare digests, not the secret itself.
function digest(s: string): string {
  return createHash('sha256').update(s).digest('base64');
}
