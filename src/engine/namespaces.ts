import { DEFAULT_NAMESPACE, type ErrorBody } from 'svc-sdk/protocol';
import { printable, printableJson } from './printable.js';
import type { Peer } from './peer.js';
import type { Registry } from './registry.js';

/** The longest namespace name accepted (iii leaves it open; a name is stored per worker and listed). */
export const MAX_NAMESPACE_CHARS = 128;

/**
 * Why `value`, given as the namespace of `what`, is not one, or null. A namespace is a non-blank
 * string of at most MAX_NAMESPACE_CHARS characters without control characters. Checked where one
 * is stored (a worker's, a binding's); a call's is only looked up, and an unknown one finds nothing.
 */
export function namespaceRefusal(value: unknown, what: string): ErrorBody | null {
  if (typeof value === 'string' && value.trim().length > 0 && value.length <= MAX_NAMESPACE_CHARS && !/[\p{Cc}\p{Cf}]/u.test(value)) return null;
  const shown = typeof value === 'string' ? printableJson(JSON.stringify(value.slice(0, 200))) : value === null ? 'null' : typeof value;
  return {
    code: 'invalid_namespace',
    message: `The namespace of ${what} must be a non-blank string of at most ${MAX_NAMESPACE_CHARS} characters without control characters, got ${shown}`,
  };
}

/**
 * The answer to a call of `id` in `namespace` that found nothing: iii 0.22's message for the
 * default namespace when `id` is nowhere, iii 0.23's (naming where it is) otherwise.
 */
export function functionNotFound(registry: Registry, id: string, namespace: string | null | undefined): ErrorBody {
  const ns = namespace ?? DEFAULT_NAMESPACE;
  const where = registry.namespacesOf(id);
  if (ns === DEFAULT_NAMESPACE && where.length === 0) return { code: 'function_not_found', message: `Function ${id} not found` };
  // The caller's own text, unchecked (only a stored namespace is): shown inert, and cut.
  const shown = printable(ns.length > 200 ? `${ns.slice(0, 200)}…` : ns);
  const elsewhere = where.length > 0 ? ` It is registered in namespace(s): ${where.slice(0, 20).join(', ')}` : '';
  return { code: 'function_not_found', message: `Function ${id} not found in namespace ${shown}.${elsewhere}` };
}

/** A binding's `namespace` and `trigger_namespace`, where given, must be namespaces. */
export function bindingNamespacesRefusal(m: { id: string; namespace?: string | null; trigger_namespace?: string | null }): ErrorBody | null {
  if (m.namespace != null) {
    const bad = namespaceRefusal(m.namespace, `trigger ${m.id.slice(0, 200)}`);
    if (bad) return bad;
  }
  return m.trigger_namespace != null ? namespaceRefusal(m.trigger_namespace, `trigger ${m.id.slice(0, 200)} (trigger_namespace)`) : null;
}

/**
 * iii 0.23+ gives a function id in a namespace, and a worker name there, one live owner, and
 * refuses a second with `registrationrejected`. svc serves several workers exporting one id as
 * replicas (round-robin), which iii programs running several copies of a worker rely on, so it
 * refuses only with `engine.namespace_conflicts: exclusive`, and never between two instances the
 * engine supervises (svc's own replicas of one worker).
 */
export class NamespaceRules {
  constructor(
    private readonly mode: 'replicas' | 'exclusive',
    private readonly registry: Registry,
    private readonly peers: () => Iterable<Peer>,
  ) {}

  /**
   * In exclusive mode, when another live worker exports `id` in `peer`'s namespace: tells `peer`
   * (FUNCTION_NAMESPACE_CONFLICT; it stays connected) and returns true. The registration is dropped.
   */
  functionConflict(peer: Peer, id: string): boolean {
    if (this.mode !== 'exclusive') return false;
    const owner = this.registry.lookup(id, peer.namespace)?.providers.find((p) => p !== peer && p.open && !sameSupervisedWorker(p, peer));
    if (!owner) return false;
    peer.send({ type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT', namespace: peer.namespace, function_id: id, owner_worker_id: owner.id });
    return true;
  }

  /**
   * In exclusive mode, the live worker that already holds `name` in `namespace`, if any: `peer` is
   * then refused (WORKER_NAMESPACE_CONFLICT) and its connection closed by the caller.
   */
  nameOwner(peer: Peer, name: string, namespace: string): Peer | undefined {
    if (this.mode !== 'exclusive') return undefined;
    for (const p of this.peers()) {
      if (p !== peer && p.open && p.role !== 'client' && p.name === name && p.namespace === namespace && !sameSupervisedWorker(p, peer)) return p;
    }
    return undefined;
  }
}

/** Two instances the engine started of one worker (its supervised replicas). */
function sameSupervisedWorker(a: Peer, b: Peer): boolean {
  return a.identity?.kind === 'instance' && b.identity?.kind === 'instance' && a.identity.worker === b.identity.worker;
}

/**
 * What engine::workers::register does with a worker's `namespace` and name: checks the namespace,
 * refuses (exclusive mode) a name another live worker holds there, and moves the worker's
 * functions to its namespace. Returns the refusal, or null.
 */
export function enterNamespace(
  rules: NamespaceRules,
  registry: Registry,
  peer: Peer,
  namespace: unknown,
  name: string,
  close: (peer: Peer, why: string) => void,
): ErrorBody | null {
  const ns = namespace ?? peer.namespace;
  const bad = namespaceRefusal(ns, `worker ${name.slice(0, 200)}`);
  if (bad) return bad;
  const target = ns as string;
  const owner = rules.nameOwner(peer, name, target);
  if (owner) {
    peer.send({ type: 'registrationrejected', code: 'WORKER_NAMESPACE_CONFLICT', namespace: target, worker_name: name, owner_worker_id: owner.id });
    close(peer, `worker name ${name.slice(0, 200)} is held in namespace ${target} by ${owner.id} (engine.namespace_conflicts: exclusive)`);
    return { code: 'WORKER_NAMESPACE_CONFLICT', message: `Worker name ${name.slice(0, 200)} is already held in namespace ${target} by worker ${owner.id}` };
  }
  if (target !== peer.namespace) registry.move(peer, target, (id) => rules.functionConflict(peer, id));
  return null;
}
