import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { STALE_WORKER_CLOSE } from 'svc-sdk/protocol';
import { Access, presentedToken, type TokenTable } from './auth.js';
import { EngineRun, presentedRunSecret, type RunIdentity } from './engine-run.js';

/** What admitting a connection reads of the engine. */
export interface AdmissionState {
  connections: number;
  maxConnections: number;
  run: EngineRun;
  tokens: TokenTable;
  warn: (message: string) => void;
}

/**
 * A connection presenting a run secret this run did not issue is a worker an earlier (or
 * another) engine started: it is refused with close code 4410, which the SDKs take as final
 * (their engine is gone: they exit). Checked before the token, which that worker may also hold.
 * With tokens configured, a connection without a valid one is told why and closed before it
 * sees anything of the registry (no `workerregistered`). Close code 4401 tells SDKs it is final.
 */
export function admitConnection(ws: WebSocket, req: IncomingMessage, on: AdmissionState): { access: Access; identity: RunIdentity | null } | null {
  if (on.connections >= on.maxConnections) {
    refuse(ws, 'overloaded', `The engine has ${on.connections} connections (engine.limits.max_connections); retry later`, 1013);
    return null;
  }
  const runSecret = presentedRunSecret(req);
  const identity = runSecret === undefined ? null : on.run.verify(runSecret);
  if (runSecret !== undefined && identity === null) {
    const theirs = EngineRun.runOf(runSecret);
    const why =
      theirs === on.run.id
        ? `This connection presents a run secret this engine run (${on.run.id}) no longer honours: the instance it was issued to has exited`
        : `This connection presents the run secret of engine run ${theirs}, but this engine is run ${on.run.id}: the engine that started this worker is gone, and a supervised worker attaches only to the engine run that started it`;
    refuse(ws, 'stale_worker', why, STALE_WORKER_CLOSE);
    on.warn(`refused a connection from ${req.socket.remoteAddress ?? 'unknown'}: ${why}`);
    return null;
  }
  const access = tokenAccess(ws, req, on.tokens);
  return access ? { access, identity } : null;
}

function tokenAccess(ws: WebSocket, req: IncomingMessage, tokens: TokenTable): Access | null {
  if (!tokens.enabled) return new Access(null);
  const secret = presentedToken(req);
  const spec = tokens.find(secret);
  if (!spec) {
    const why = secret
      ? 'The token presented is not valid for this engine'
      : 'This engine requires a token: set SVC_TOKEN (or the SDK option token, or an Authorization: Bearer header)';
    refuse(ws, 'unauthorized', why, 4401);
    return null;
  }
  return new Access(spec);
}

/** Tell a refused peer why (an `error` frame: SDKs report its code) and close with `closeCode`. */
function refuse(ws: WebSocket, code: string, message: string, closeCode: number): void {
  ws.send(JSON.stringify({ type: 'error', error: { code, message } }));
  ws.close(closeCode, `${code}: ${message}`.slice(0, 120));
}
