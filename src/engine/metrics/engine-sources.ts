import type { Invocations } from '../invocations.js';
import type { Registry } from '../registry.js';
import type { Session } from '../session.js';
import type { EngineTelemetry } from '../telemetry/engine-telemetry.js';
import type { CallMetrics } from './call-metrics.js';
import type { EngineMetricSources } from './prometheus.js';
import { workerSamples } from './worker-series.js';

type TrafficCounts = ReturnType<EngineMetricSources['traffic']>;

/**
 * Frames and bytes of the engine's connections: the open ones are summed when scraped, the closed
 * ones were added up as they closed (`closed`), so the totals never go back.
 */
export class Traffic {
  private readonly ofClosed: TrafficCounts = { framesIn: 0, framesOut: 0, bytesIn: 0, bytesOut: 0 };

  closed(s: Session): void {
    add(this.ofClosed, s);
  }

  total(open: Iterable<Session>): TrafficCounts {
    const t = { ...this.ofClosed };
    for (const s of open) add(t, s);
    return t;
  }
}

function add(into: TrafficCounts, s: Session): void {
  into.framesIn += s.framesIn;
  into.framesOut += s.framesOut;
  into.bytesIn += s.socket?.bytesRead ?? 0;
  into.bytesOut += s.socket?.bytesWritten ?? 0;
}

/** What /metrics reads of an engine (server.ts passes its parts). */
export function engineMetricSources(e: {
  calls: CallMetrics;
  invocations: Invocations;
  registry: Registry;
  sessions: () => Iterable<Session>;
  telemetrySockets: () => number;
  traffic: Traffic;
  otlp: () => EngineTelemetry | null;
}): EngineMetricSources {
  return {
    calls: e.calls,
    inFlight: () => ({ calls: e.invocations.size, bytes: e.invocations.bytes }),
    connections: () => {
      let worker = 0;
      let client = 0;
      for (const s of e.sessions()) {
        if (s.role === 'client') client++;
        else worker++;
      }
      return { worker, client, telemetry: e.telemetrySockets() };
    },
    traffic: () => e.traffic.total(e.sessions()),
    functions: () => e.registry.size,
    telemetry: () => e.otlp()?.counts() ?? null,
    // Bounded like function ids: max_function_series reporting workers get series of their own.
    workers: () => workerSamples(e.sessions(), e.calls.maxFunctions),
  };
}
