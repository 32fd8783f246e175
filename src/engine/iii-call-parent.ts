import type { Call } from './call.js';
import type { IdGenerator } from './ids.js';
import type { Peer } from './peer.js';

/**
 * The engine span a call made inside an iii client's handler descends from. iii SDKs (no `hello`
 * features) name their own spans as parents, which the engine never records (npm 0.22.1 with its
 * telemetry off sends the trace with a span id of its own; with it on, spans the engine drains),
 * so the tree would break there. While such a client serves exactly one call, and the new call
 * has no traceparent or one in that call's trace, that call is the parent. With none or several
 * served, the traceparent is taken as it is. svc-sdk peers name engine spans themselves.
 *
 * Invocations.dispatch asks this for every traced call; when the trace is listed, adoptIiiParents
 * (traces.ts) puts the call under the client's own span if the client sent its spans.
 */
export function onlyServedCall(caller: Peer | null, traceId: string | undefined, ids: IdGenerator): Call | undefined {
  if (caller === null || caller.features.size !== 0 || caller.node !== undefined || caller.incoming.size !== 1) return undefined;
  for (const c of caller.incoming.values()) {
    return traceId === undefined || traceId === (c.traceId || ids.traceId(c.idNumber)) ? c : undefined;
  }
  return undefined;
}
