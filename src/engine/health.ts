import type { IncomingMessage, ServerResponse } from 'node:http';

/** Why the engine is not ready: a fixed word, never data. */
export type NotReady = 'starting' | 'draining' | 'backplane_unavailable';

/** The probe paths on the engine's own port (docs/deploy.md, "Health"). */
export const LIVENESS_PATH = '/healthz';
export const READINESS_PATH = '/readyz';

/**
 * Answers the health probes on the engine's port; false when the request is not a probe (the
 * caller answers it as before). `GET /healthz`: 200 while the process serves HTTP (liveness).
 * `GET /readyz`: 200 when the engine accepts connections, else 503 with the reason's word: starting,
 * draining (SIGTERM: calls in flight finish, new connections are refused), backplane_unavailable
 * (cluster mode: not joined, or the backplane lost for over a lease).
 *
 * Probes come from the kubelet, which connects to the pod's IP and sends it as Host, with no token
 * and no Origin. So, unlike /metrics, any Host is answered and no token is asked: the answer is one
 * of four fixed words, changes nothing, and reveals nothing an open TCP port does not already
 * (whether an engine runs there, and whether it takes connections). A request with an Origin (a
 * web page) is refused all the same: browsers are untrusted and a probe never sends one.
 */
export function answerHealth(req: IncomingMessage, res: ServerResponse, notReady: () => NotReady | null): boolean {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== LIVENESS_PATH && path !== READINESS_PATH) return false;
  const headers = { 'content-type': 'text/plain', 'cache-control': 'no-store' };
  if (req.headers.origin !== undefined) {
    res.writeHead(403, headers);
    res.end('origin_not_allowed: the health endpoint does not answer web pages; probes send no Origin\n');
    return true;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...headers, allow: 'GET, HEAD' });
    res.end(`method_not_allowed: ${path} answers GET and HEAD, not ${String(req.method).slice(0, 20)}\n`);
    return true;
  }
  const why = path === READINESS_PATH ? notReady() : null;
  res.writeHead(why ? 503 : 200, headers);
  res.end(req.method === 'HEAD' ? undefined : why ? `not ready: ${why}\n` : path === LIVENESS_PATH ? 'live\n' : 'ready\n');
  return true;
}
