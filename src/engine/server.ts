import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { SvcError } from 'svc-sdk';
import { ANSWERS_HELLO_FEATURE, DEFAULT_NAMESPACE, ENGINE_RESTART_CLOSE } from 'svc-sdk/protocol';
import { isLoopbackHost, TokenTable, type Access } from './auth.js';
import { cutString, StoredValues } from './budgets.js';
import { installBuiltins } from './builtins.js';
import { haltAllCalls, haltPeerCalls } from './call-endings.js';
import { Channels, installChannelBuiltins } from './channel-endpoint.js';
import { Cluster, ClusterError } from './cluster/cluster.js';
import { EngineRun, type RunIdentity } from './engine-run.js';
import type { NotReady } from './health.js';
import { installClusterBuiltins } from './cluster/listing.js';
import { EngineListener } from './listener.js';
import { installListingPages, listAll } from './listing-pages.js';
import { Invocations } from './invocations.js';
import { storeTelemetryFrame } from './otlp-logs.js';
import { TelemetrySockets } from './telemetry-sockets.js';
import { LogRing } from './hot/log-ring.js';
import { CallMetrics } from './metrics/call-metrics.js';
import { MetricsServer } from './metrics/metrics-server.js';
import { engineMetricSources, Traffic } from './metrics/engine-sources.js';
import { engineRegistry } from './metrics/prometheus.js';
import type { EngineTelemetry } from './telemetry/engine-telemetry.js';
import { SpanRing } from './hot/span-ring.js';
import type { LogEntry } from './logs.js';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions } from './options.js';
import { printable } from './printable.js';
import { NamespaceRules } from './namespaces.js';
import { Registry } from './registry.js';
import { Router } from './router.js';
import { EngineTriggerProvider } from './engine-triggers.js';
import { Session } from './session.js';
import { SessionWatch } from './session-watch.js';
import { Triggers } from './triggers.js';
import { installTraceBuiltins } from './trace-builtins.js';

/**
 * The engine daemon: a WebSocket server that workers connect to. It owns the sessions and wires
 * the registry, triggers, invocations and router together; it holds no routing logic itself.
 */
export class Engine {
  readonly opts: EngineOptions;
  readonly registry = new Registry();
  readonly logs: LogRing;
  /** null when tracing is off (engine.tracing: false). */
  readonly traces: SpanRing | null;
  readonly triggers: Triggers;
  readonly invocations: Invocations;
  /** null unless cluster mode is on (engine.cluster). */
  readonly cluster: Cluster | null = null;
  private readonly router: Router;
  /** `engine::functions-available` and `log`, the trigger types the engine provides (engine-triggers.ts). */
  private readonly engineTriggers: EngineTriggerProvider;
  /** Channels (channels.ts): streams between workers, relayed on /ws/channels/. */
  readonly channels: Channels;
  private readonly sessions = new Map<string, Session>();
  /** iii SDKs' `/otel` telemetry sockets. */
  private readonly telemetry: TelemetrySockets;
  /** Budgets of what registrations store (budgets.ts). */
  readonly stored: StoredValues;
  /** The HTTP server and the upgrades (listener.ts); null until start() has bound it. */
  private listener: EngineListener | null = null;
  /** Tokens in force; the supervisor adds its own at start. */
  readonly tokens: TokenTable;
  /** This run's id and the run secrets it issued to the instances it started and to its own clients. */
  readonly run = new EngineRun();
  /** What /metrics counts of calls; null when engine.metrics is off. */
  readonly callMetrics: CallMetrics | null;
  private metricsServer: MetricsServer | null = null;
  /** OTLP export of the span and log rings (engine.telemetry); null when off, and until start(). */
  get otlp(): EngineTelemetry | null {
    return this.otlpExport;
  }
  private otlpExport: EngineTelemetry | null = null;
  /** Frames and bytes of the connections (/metrics). */
  private readonly traffic = new Traffic();
  /** Liveness and slow consumers (session-watch.ts). */
  private readonly watch: SessionWatch;
  private stopping: Promise<void> | null = null;
  private started = false;
  readonly startedAt = Date.now();

  constructor(options: Partial<EngineOptions> = {}) {
    this.opts = { ...DEFAULT_ENGINE_OPTIONS, ...options };
    this.logs = new LogRing(this.opts.logBufferSize, this.opts.maxLogBytes);
    this.stored = new StoredValues(this.opts.maxStoredValueBytes, this.opts.maxStoredBytesPerWorker);
    this.tokens = new TokenTable([...this.opts.tokens]);
    const warn = (message: string, data?: Record<string, unknown>): void => this.event('warn', message, data);
    this.triggers = new Triggers(warn);
    this.registry.onSharedId = (entry, names) => {
      const ns = entry.namespace === DEFAULT_NAMESPACE ? '' : ` in namespace ${entry.namespace}`;
      const shown = names.map((n) => JSON.stringify(n));
      warn(
        `function ${entry.id}${ns} is served by workers of different names: ${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}; ` +
          'its calls are shared among them as among replicas of one worker. Two workers registering one id is usually a copied id: rename one',
        { function_id: entry.id, workers: names },
      );
    };
    this.traces = this.opts.tracing ? new SpanRing(this.opts.traceBufferSize, undefined, this.opts.maxTraceBytes, this.opts.maxStoredValueBytes) : null;
    this.telemetry = new TelemetrySockets(this, () => this.telemetryLimits);
    const m = this.opts.metrics;
    // Counted for /metrics, and for the OTLP metrics export.
    this.callMetrics = m || this.opts.telemetry?.metrics ? new CallMetrics(m?.maxFunctionSeries, m?.maxErrorCodeSeries) : null;
    this.invocations = new Invocations(this.registry, this.opts, warn, this.traces, this.callMetrics);
    this.invocations.onCalleeError = (call, error, traceId) => {
      const max = this.opts.maxStoredValueBytes;
      // A stack (or invocation_failed: a thrown non-SvcError) means nobody expected it: ERROR. A code
      // without one was raised on purpose (bad input, not found; the caller has it): WARN, no stack.
      const stack = typeof error.stacktrace === 'string' ? error.stacktrace : undefined;
      this.logs.add({
        level: stack !== undefined || error.code === 'invocation_failed' ? 'error' : 'warn',
        source: 'worker',
        worker_id: call.callee.id,
        worker_name: call.callee.name,
        function_id: call.functionId,
        invocation_id: call.id,
        ...(traceId ? { trace_id: traceId } : {}),
        message: cutString(`${call.functionId} failed: ${error.code}: ${error.message}`, max, 'message'),
        ...(stack !== undefined ? { data: { stacktrace: cutString(stack, max, 'stacktrace') } } : {}),
      });
    };
    const namespaces = new NamespaceRules(this.opts.namespaceConflicts, this.registry, () => this.sessions.values());
    this.router = new Router({
      namespaces,
      opts: this.opts,
      registry: this.registry,
      triggers: this.triggers,
      invocations: this.invocations,
      findSession: (id) => this.sessions.get(id),
      evict: (s, why) => this.cleanup(s, why, true),
      warn,
      stored: this.stored,
    });
    installBuiltins({
      registry: this.registry,
      triggers: this.triggers,
      invocations: this.invocations,
      logs: this.logs,
      sessions: () => this.sessions.values(),
      startedAt: this.startedAt,
      stored: this.stored,
      maxFrameBytes: this.opts.maxFrameBytes,
      namespaces,
      close: (p, why) => {
        if (!(p instanceof Session)) return;
        p.close(1008, 'registration rejected');
        this.cleanup(p, why, false);
      },
      onWorkerRegistered: (s) => {
        if (s.role !== 'client') this.event('info', `worker ${s.name} registered (${String(s.metadata.runtime ?? 'unknown')}, pid ${String(s.metadata.pid ?? '?')})`, { worker_id: s.id });
        this.registry.named(s);
      },
    });
    installTraceBuiltins(this.registry, this.traces);
    const router = this.router;
    this.engineTriggers = new EngineTriggerProvider({
      triggers: this.triggers,
      logs: this.logs,
      deliver: (from, msg) => router.onFrame(from, msg),
      functions: () => listAll((d) => this.invocations.call('engine::functions::list', d), 'functions'),
      functionIds: () => this.registry.list().map((e) => e.id).sort().join('\n'),
      pollMs: this.opts.functionsPollMs,
    });
    this.channels = new Channels({
      windowBytes: this.opts.channelWindowBytes,
      openTimeoutMs: this.opts.channelOpenTimeoutMs,
      maxPerWorker: this.opts.maxChannelsPerWorker,
      maxFrameBytes: this.opts.maxChannelFrameBytes,
      pingIntervalMs: this.opts.pingIntervalMs,
      maxTotalBytes: this.opts.maxChannelBytes,
      readerStallMs: this.opts.channelReaderStallMs,
      ownerGraceMs: this.opts.channelOwnerGraceMs,
      handshakeTimeoutMs: this.opts.handshakeTimeoutMs,
    });
    installChannelBuiltins(this.registry, this.channels);
    if (this.opts.cluster) {
      this.cluster = new Cluster(this.opts.cluster, {
        registry: this.registry,
        triggers: this.triggers,
        invocations: this.invocations,
        deliver: (from, msg) => router.onFrame(from, msg),
        sessions: () => this.sessions.values(),
        event: (level, message, data) => this.event(level, message, data),
        maxInvocationTimeoutMs: this.opts.maxInvocationTimeoutMs,
      });
      installClusterBuiltins(this.registry, this.cluster);
      this.channels.cluster = this.cluster;
    }
    // A character of JSON is at most 3 bytes of UTF-8: a page stays well under a frame.
    installListingPages(this.registry, Math.floor(this.opts.maxFrameBytes / 4));
    this.watch = new SessionWatch({
      opts: this.opts,
      sessions: () => this.sessions.values(),
      drop: (s, why) => this.cleanup(s, why, true),
      warn,
      pingTelemetry: () => this.telemetry.ping(),
      telemetrySockets: () => this.telemetry.all,
    });
  }

  /** Listen; resolves with the bound address once ready. */
  async start(): Promise<{ host: string; port: number; url: string }> {
    if (!this.tokens.enabled && !isLoopbackHost(this.opts.host)) {
      throw new EngineStartError(
        'insecure_listen',
        `engine.host is ${this.opts.host} but no tokens are configured (engine.auth.tokens): anyone who can reach port ${this.opts.port} could register or call any function. Configure tokens (docs/security.md) or listen on 127.0.0.1.`,
      );
    }
    const t = this.opts.telemetry;
    if (t && this.traces) {
      // Loaded only when configured: the OpenTelemetry exporters cost every engine start ~0.5 s of CPU.
      const { EngineTelemetry } = await import('./telemetry/engine-telemetry.js');
      this.otlpExport = new EngineTelemetry(t, this.traces, this.logs, this.run.id, (message) => this.event('warn', message));
    }
    this.listener = await EngineListener.listen(this.opts, {
      notReady: () => this.notReady(),
      stopping: () => this.stopping !== null,
      connectionCount: () => this.connectionCount,
      tokens: this.tokens,
      run: this.run,
      channels: this.channels,
      event: (level, message) => this.event(level, message),
      telemetry: (ws) => {
        if (this.stopping) ws.close(ENGINE_RESTART_CLOSE, 'engine shutting down');
        else this.telemetry.accept(ws);
      },
      session: (ws, socket, access, identity) => this.accept(ws, socket, access, identity),
    });
    this.watch.start();
    const calls = this.callMetrics;
    const sources = calls
      ? engineMetricSources({
          calls,
          invocations: this.invocations,
          registry: this.registry,
          sessions: () => this.sessions.values(),
          telemetrySockets: () => this.telemetry.size,
          traffic: this.traffic,
          otlp: () => this.otlp,
        })
      : null;
    this.otlp?.start(sources, this.startedAt);
    if (this.opts.metrics && sources) {
      const { host, port } = this.opts.metrics;
      this.metricsServer = new MetricsServer(engineRegistry(sources));
      try {
        await this.metricsServer.start(host, port);
      } catch (e) {
        await this.stop(0);
        throw new EngineStartError('metrics_unavailable', `engine.metrics: cannot serve /metrics on ${host}:${port}: ${(e as Error).message}`);
      }
    }
    if (this.cluster) {
      try {
        await this.cluster.start(this.address().url, this.address().host);
      } catch (e) {
        await this.stop(0);
        throw e instanceof ClusterError ? new EngineStartError(e.code, e.message) : e;
      }
    }
    this.started = true;
    return this.address();
  }

  /** Null when ready (GET /readyz, health.ts): started, not draining, and in cluster mode on the backplane. */
  notReady(): NotReady | null {
    if (this.stopping) return 'draining';
    if (!this.started) return 'starting';
    return this.cluster && !this.cluster.ready ? 'backplane_unavailable' : null;
  }

  address(): { host: string; port: number; url: string } {
    if (!this.listener) throw new SvcError('internal_error', 'The engine is not listening: address() is known once start() has resolved');
    return this.listener.address();
  }

  /** Where Prometheus scrapes this engine (engine.metrics); null when metrics are off. */
  metricsAddress(): { host: string; port: number; url: string } | null {
    return this.metricsServer?.address() ?? null;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** The peers connected to this engine (not other engines' workers in cluster mode). */
  connections(): IterableIterator<Session> {
    return this.sessions.values();
  }

  /** Bounds of an iii SDK's telemetry frame and of each value stored from it. */
  private get telemetryLimits(): { maxValue: number; maxFrameBytes: number } {
    return { maxValue: this.opts.maxStoredValueBytes, maxFrameBytes: this.opts.maxFrameBytes };
  }

  /** Open connections: sessions, `/otel` sockets and channel sockets (all count against max_connections). */
  get connectionCount(): number {
    return this.sessions.size + this.telemetry.size + this.channels.socketCount;
  }

  private accept(ws: WebSocket, socket: Socket, access: Access, identity: RunIdentity | null): void {
    const ip = socket.remoteAddress ?? 'unknown';
    if (this.stopping) {
      ws.close(ENGINE_RESTART_CLOSE, 'engine shutting down');
      return;
    }
    const s = new Session(ws, ip, socket);
    s.access = access;
    s.identity = identity;
    s.client = this.invocations.clients.join(access, identity, ip);
    this.sessions.set(s.id, s);
    ws.on('message', (data, isBinary) => {
      s.alive = true;
      s.framesIn++;
      // Binary frames carry iii SDKs' OTLP telemetry: their log lines and spans are kept, metrics ignored.
      if (isBinary) {
        storeTelemetryFrame(data as Buffer, this, this.telemetryLimits, s);
        return;
      }
      this.router.onText(s, data.toString());
    });
    ws.on('pong', () => {
      s.alive = true;
    });
    ws.on('error', () => {
      /* 'close' follows; cleanup happens there */
    });
    ws.on('close', (code) => this.cleanup(s, code === 1000 || code === 1001 ? 'worker disconnected' : `worker connection lost (code ${code})`, false));
    // `observe.v1`: iii-sdk 0.25's observe() (observers.ts); no `local-dispatch.v1`, so every call passes here.
    // `svc.hello`: svc SDKs wait for the answer to their `hello` (sent after this) before they are ready.
    s.send({ type: 'workerregistered', worker_id: s.id, reattach_token: s.reattachToken, features: ['observe.v1', ANSWERS_HELLO_FEATURE] });
  }

  /** Runs once per session, whichever comes first: socket close, liveness failure, or reattach. */
  private cleanup(s: Session, why: string, terminate: boolean): void {
    if (s.closed) return;
    s.closed = true;
    if (terminate) s.terminate();
    this.sessions.delete(s.id);
    this.traffic.closed(s);
    haltPeerCalls(this.invocations, s, `${s.name} ${why.startsWith('worker') ? why.slice(7) : why}`.trim());
    if (s.client) this.invocations.clients.leave(s.client);
    this.registry.removeAll(s);
    this.triggers.removePeer(s);
    this.channels.ownerLeft(s);
    if (s.role !== 'client') this.event('info', `worker ${s.name} left: ${why}`, { worker_id: s.id });
  }

  /** The engine's own log line: stored with worker logs and printed. */
  event(level: LogEntry['level'], message: string, data?: Record<string, unknown>): void {
    // A line may quote what a peer sent (an id, a name): within the budget of any stored value.
    message = cutString(message, this.opts.maxStoredValueBytes, 'message');
    this.logs.add({ level, message, source: 'engine', ...(data ? { data } : {}) });
    if (this.opts.printEvents) {
      // The message often holds a client's text (a worker's name, an error it sent): one line, inert.
      const line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${printable(message)}\n`;
      (level === 'error' || level === 'warn' ? process.stderr : process.stdout).write(line);
    }
  }

  /**
   * Graceful stop: refuse new connections and new top-level calls, let in-flight calls finish for
   * `graceMs`, then end what is left with `shutting_down` and close every connection with 1012 (service restart), which
   * every SDK, iii's included, answers by reconnecting.
   */
  stop(graceMs = this.opts.shutdownGraceMs, beforeClose?: () => Promise<void>): Promise<void> {
    if (this.stopping) return this.stopping;
    this.stopping = (async () => {
      this.invocations.draining = true;
      this.watch.stop();
      // The other engines stop routing here while what is in flight finishes.
      await this.cluster?.withdraw();
      if (this.invocations.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([this.invocations.whenIdle(), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
        clearTimeout(timer);
      }
      // E.g. stop supervised workers while their connections are still up, so they exit cleanly
      // instead of reconnecting to an engine that is going away.
      if (beforeClose) await beforeClose();
      haltAllCalls(this.invocations, { code: 'shutting_down', message: 'The engine shut down before the call finished' });
      for (const s of [...this.sessions.values()]) {
        s.close(ENGINE_RESTART_CLOSE, 'engine shutting down');
      }
      this.telemetry.closeAll(ENGINE_RESTART_CLOSE, 'engine shutting down');
      this.channels.close();
      await this.listener?.close();
      for (const s of [...this.sessions.values()]) this.cleanup(s, 'engine stopped', true);
      this.engineTriggers.stop();
      await this.cluster?.stop();
      await this.otlp?.stop();
      await this.metricsServer?.stop();
    })();
    return this.stopping;
  }
}

/** The engine could not start listening (`insecure_listen`, the cluster's codes; docs/errors.md). */
export class EngineStartError extends SvcError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'EngineStartError';
  }
}
