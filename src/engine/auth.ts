import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ErrorBody } from 'svc-sdk/protocol';
import { engineErrors } from './errors.js';

/**
 * Tokens and what each may do. With no tokens configured, auth is off and the engine refuses to
 * listen beyond loopback (see server.ts); with tokens, every connection must present one.
 */
export interface TokenSpec {
  /** Shown in logs and denials; never the secret. */
  name: string;
  token: string;
  /** May do everything, including `engine::*` management functions. */
  admin: boolean;
  /** Function ids it may call: exact ids or prefix patterns ending in `*` (`math::*`). */
  call: string[];
  /** Function ids it may register (and bind triggers to). */
  register: string[];
  /** Trigger types it may provide (svc-http needs `http`). */
  trigger_types: string[];
  /**
   * Reserved worker names (svc-state, svc-http, …: worker-names.ts) a connection with this token may
   * use: for built-ins run outside the supervisor, as in docker-compose.yml. Admin tokens may use all.
   */
  names?: string[];
}

/** Callable by every authenticated peer: what any worker needs to announce itself, report its process and log. */
const ALWAYS_CALLABLE = ['engine::workers::register', 'engine::workers::report', 'engine::log::*', 'engine::health::check'];

export function matches(pattern: string, id: string): boolean {
  if (pattern.endsWith('*')) {
    const prefix = pattern.slice(0, -1);
    // A broad pattern (`*`, `m*`) never reaches into the engine's own management namespace: only
    // a pattern that names `engine::` itself grants those.
    if (id.startsWith('engine::') && !prefix.startsWith('engine::')) return false;
    return id.startsWith(prefix);
  }
  return pattern === id;
}

/** A token's rights without its secret: what travels between the engines of a cluster. */
export type Rights = Omit<TokenSpec, 'token'>;

/** What one connection may do. `null` token: auth is off, everything is allowed. */
export class Access {
  constructor(readonly token: Rights | null) {}

  get name(): string {
    return this.token?.name ?? 'anonymous';
  }

  /** The rights alone (null: auth is off), for another engine to authorize with. */
  get rights(): Rights | null {
    if (!this.token) return null;
    const { name, admin, call, register, trigger_types } = this.token;
    return { name, admin, call, register, trigger_types };
  }

  canCall(id: string): boolean {
    if (!this.token || this.token.admin) return true;
    return ALWAYS_CALLABLE.some((p) => matches(p, id)) || this.token.call.some((p) => matches(p, id));
  }

  /** Why a call of `id` is refused, or null when it is allowed. */
  callRefusal(id: string): ErrorBody | null {
    return this.canCall(id) ? null : engineErrors.forbiddenCall(this.name, id);
  }

  canRegister(id: string): boolean {
    if (!this.token || this.token.admin) return true;
    return this.token.register.some((p) => matches(p, id));
  }

  canProvideTriggerType(id: string): boolean {
    if (!this.token || this.token.admin) return true;
    return this.token.trigger_types.some((p) => matches(p, id));
  }
}

export const OPEN_ACCESS = new Access(null);

/**
 * What a trigger type's provider may call for one binding (`invokefunction` with `binding_id`):
 * the bound function, which the binder was allowed to bind (triggers.ts), and any other function
 * (a condition) that both the binder and the provider may call. So a binder never borrows the
 * provider's rights, and a provider never gains the binder's.
 */
export class BindingAccess extends Access {
  constructor(
    private readonly binder: Access,
    private readonly provider: Access,
    private readonly functionId: string,
  ) {
    super(binder.token);
  }

  override canCall(id: string): boolean {
    return id === this.functionId || (this.binder.canCall(id) && this.provider.canCall(id));
  }

  override callRefusal(id: string): ErrorBody | null {
    if (id === this.functionId) return null;
    if (!this.binder.canCall(id)) return engineErrors.forbiddenBindingCall(this.binder.name, id, this.functionId);
    return this.provider.callRefusal(id);
  }
}

/** Constant-time lookup of a presented secret. */
export class TokenTable {
  private readonly byDigest: Array<{ digest: Buffer; spec: TokenSpec }>;

  constructor(readonly tokens: TokenSpec[]) {
    this.byDigest = tokens.map((spec) => ({ digest: digest(spec.token), spec }));
  }

  get enabled(): boolean {
    return this.tokens.length > 0;
  }

  find(secret: string | undefined): TokenSpec | null {
    if (!secret) return null;
    const d = digest(secret);
    let found: TokenSpec | null = null;
    for (const t of this.byDigest) if (timingSafeEqual(t.digest, d)) found = t.spec;
    return found;
  }

  /** Add a token at run time (the supervisor's own, for the workers it starts). */
  add(spec: TokenSpec): void {
    this.tokens.push(spec);
    this.byDigest.push({ digest: digest(spec.token), spec });
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export function newSecret(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * A token travels as `Authorization: Bearer <token>` or, for clients that cannot set headers, `?token=`.
 * The query value is percent-decoded with `+` kept as `+` (RFC 3986, not form encoding): a token made
 * with `openssl rand -base64 24`, as docs/security.md suggests, is pasted into a URL as it is, `+` and all.
 */
export function presentedToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (typeof h === 'string' && h.toLowerCase().startsWith('bearer ')) return h.slice(7).trim();
  const q = (req.url ?? '').split('?')[1];
  const raw = q?.split('&').find((p) => p.startsWith('token='))?.slice('token='.length);
  if (!raw) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a stray `%`: as sent, so that it is refused as not valid rather than ignored
  }
}

/** Loopback addresses: the only ones the engine listens on without tokens. */
export function isLoopbackHost(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}
