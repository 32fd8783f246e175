import { platform } from 'node:os';
import type { Caller } from './caller.js';
import type { Connection, ConnectionHandler } from './connection.js';
import { InvocationError } from './errors.js';
import { redactAddress } from './redact.js';
import type { Invoker } from './invoker.js';
import type { LogBatcher } from './log-batcher.js';
import type { SpanTracer } from './otel-export.js';
import type { ProcessReporter } from './process-reporter.js';
import { ANSWERS_HELLO_FEATURE, FEATURES, PROTOCOL_VERSION, REGISTER_WORKER_FUNCTION } from './protocol/constants.js';
import type { HelloMsg, Message, WorkerRegisteredMsg } from './protocol/messages.js';
import { engineGone, RUN_SECRET_ENV } from './supervised.js';
import type { TriggerRegistry } from './trigger-registry.js';
import type { WorkerLifecycle } from './worker-lifecycle.js';
import type { WorkerOptions } from './worker-types.js';

/** The parts of a worker (worker.ts) that the engine's frames are for. */
export interface WorkerParts {
  readonly conn: Connection;
  readonly life: WorkerLifecycle;
  readonly caller: Caller;
  /** The functions this worker serves (its handlers' `ctx.worker` is no concern here). */
  readonly invoker: Pick<Invoker<unknown>, 'invoke' | 'cancel' | 'replay' | 'abortAll' | 'whenIdle'>;
  readonly triggers: TriggerRegistry;
  readonly logs: LogBatcher;
  /** Off for clients and with processReportIntervalMs: 0. */
  readonly reporter: ProcessReporter | undefined;
  /** Set once OpenTelemetry export is loaded. */
  readonly tracer: () => SpanTracer | undefined;
}

/**
 * A worker's conversation with its engine, over every connection the Connection opens: what it
 * says when a socket opens (`hello`, `reattach`, its registration, then the replay of everything
 * registered), each frame the engine sends handed to the part it is for, what fails when the socket
 * is lost or refused, and the shutdown that ends it.
 */
export class WorkerSession implements ConnectionHandler {
  /** The engine's answer to this worker's registration on the current connection. */
  registered: WorkerRegisteredMsg | null = null;
  /** The features the engine granted (its `hello`). */
  granted = new Set<string>();
  engineInfo: HelloMsg['engine'] | undefined;
  /** The engine answered this connection's `hello`. */
  private helloAnswered = false;
  /**
   * The engine's `workerregistered` on this connection, held until its `hello` answer arrives (an
   * engine advertising `svc.hello`): ready() must not resolve with `Worker.engine` still unknown.
   */
  private heldRegistration: WorkerRegisteredMsg | undefined;
  /** Ends shutdown()'s wait for running handlers early: the socket is gone. */
  private endDrain: (() => void) | undefined;
  private readonly conn: Connection;
  private readonly life: WorkerLifecycle;
  private readonly caller: Caller;
  private readonly invoker: WorkerParts['invoker'];
  private readonly triggers: TriggerRegistry;
  private readonly logs: LogBatcher;
  private readonly reporter: ProcessReporter | undefined;
  private readonly tracer: () => SpanTracer | undefined;

  constructor(
    parts: WorkerParts,
    private readonly opts: WorkerOptions & { role: 'worker' | 'client' },
    private readonly worker: { readonly workerName: string; readonly namespace: string | undefined; readonly version: string },
  ) {
    this.conn = parts.conn;
    this.life = parts.life;
    this.caller = parts.caller;
    this.invoker = parts.invoker;
    this.triggers = parts.triggers;
    this.logs = parts.logs;
    this.reporter = parts.reporter;
    this.tracer = parts.tracer;
  }

  onConnecting(): void {
    if (this.life.state === 'disconnected') this.life.set('connecting');
  }

  onOpen(): void {
    const previous = this.registered;
    this.helloAnswered = false;
    this.heldRegistration = undefined;
    // This connection's engine may be another (a cluster, a restart with a new limit) or not answer `hello`.
    this.conn.engineMaxFrameBytes = undefined;
    this.conn.send({ type: 'hello', protocol: PROTOCOL_VERSION, features: [...FEATURES], role: this.opts.role });
    if (previous) {
      this.conn.send({ type: 'reattach', previous_worker_id: previous.worker_id, ...(previous.reattach_token ? { reattach_token: previous.reattach_token } : {}) });
    }
    this.conn.send({
      type: 'invokefunction',
      function_id: REGISTER_WORKER_FUNCTION,
      action: { type: 'void' },
      data: {
        name: this.worker.workerName,
        runtime: 'node',
        version: this.worker.version,
        sdk: 'svc-sdk',
        os: platform(),
        pid: process.pid,
        ...this.opts.metadata,
        ...(this.worker.namespace !== undefined ? { namespace: this.worker.namespace } : {}),
      },
    });
    this.triggers.replayTypes();
    this.invoker.replay();
    this.triggers.replayBindings();
  }

  onMessage(m: Message): void {
    switch (m.type) {
      case 'invokefunction':
        this.invoker.invoke(m);
        return;
      case 'invocationresult':
        this.caller.onResult(m);
        return;
      case 'workerregistered':
        this.registered = m;
        // Sent at connect, before the engine read our `hello`: its answer is still to come.
        if (!this.helloAnswered && m.features?.includes(ANSWERS_HELLO_FEATURE)) this.heldRegistration = m;
        else this.accept(m);
        return;
      case 'hello': {
        this.granted = new Set(m.features);
        this.engineInfo = m.engine;
        this.conn.engineMaxFrameBytes = m.engine?.max_frame_bytes;
        if (!this.granted.has('ack')) this.triggers.settleWithoutAck();
        this.helloAnswered = true;
        const held = this.heldRegistration;
        this.heldRegistration = undefined;
        if (held) this.accept(held);
        return;
      }
      case 'triggerregistrationresult':
        this.triggers.onResult(m);
        return;
      case 'registertrigger':
        void this.triggers.provide(m);
        return;
      case 'unregistertrigger':
        void this.triggers.dropProvided(m.id);
        return;
      case 'cancel':
        this.invoker.cancel(m.invocation_id, m.reason);
        return;
      case 'ping':
        this.conn.send({ type: 'pong' });
        return;
      case 'registrationrejected':
        // Only with engine.namespace_conflicts: exclusive (iii 0.23's rules); for a worker name the engine closes the connection itself.
        this.life.report(
          new InvocationError(m.code, `The engine rejected ${m.function_id !== undefined ? `function ${m.function_id}` : `worker name ${m.worker_name ?? ''}`} in namespace ${m.namespace}: held by worker ${m.owner_worker_id}`),
        );
        return;
      case 'error':
        // `unauthorized` and `stale_worker` are followed by a close (4401, 4410), reported once from there.
        if (m.error.code === 'stale_worker' || m.error.code === 'unauthorized') this.life.refusalMessage = m.error.message;
        else this.life.report(InvocationError.from(m.error));
        return;
      default:
        return;
    }
  }

  /** The engine accepted this connection and told what it is: ready() waiters go on. */
  private accept(m: WorkerRegisteredMsg): void {
    this.life.accepted();
    this.reporter?.send();
    this.life.tell({ type: 'connected', url: this.conn.url, workerId: m.worker_id });
  }

  onDown(code: number, reason: string): void {
    if (this.life.state === 'connected' || this.life.state === 'connecting') this.life.set('disconnected');
    this.endDrain?.();
    this.lost(code, reason);
  }

  onRefused(code: 'unauthorized' | 'stale_worker', reason: string, final: boolean): void {
    this.life.refused(code, reason, final);
    // Started by an engine run that is gone (supervised.ts): the process exits.
    if (final && this.opts.runSecret === undefined && process.env[RUN_SECRET_ENV]) engineGone(`the engine at ${redactAddress(this.conn.url)} is not the engine run that started this worker`);
  }

  onFatal(e: Error): void {
    this.life.fatal(e);
  }

  onUnreachable(url: string, why: string): void {
    this.life.unreachable(url, why);
  }

  /** Worker.shutdown's work: drain (a connected worker), then close, failing what still waits. */
  async stop(graceMs: number): Promise<void> {
    if (this.life.state === 'connected') {
      this.life.set('draining');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.invoker.whenIdle(),
        new Promise<void>((resolve) => {
          this.endDrain = resolve;
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
      this.endDrain = undefined;
    }
    this.logs.flush();
    this.life.close(null);
    this.caller.failAll('shutting_down', () => 'Worker is shutting down');
    this.triggers.failAcks();
    await this.conn.close(1000);
    await this.tracer()?.shutdown().catch(() => undefined);
    this.lost(1000, 'shutdown');
  }

  /** The socket is gone: what depended on it fails now, not at its deadline. */
  private lost(code: number, reason: string): void {
    // Calls in flight are lost with the socket (the engine halts them).
    this.caller.failAll('connection_lost', (fid) => `Connection to the engine lost while calling ${fid}`);
    this.invoker.abortAll();
    // Bindings we served as a provider are parked by the engine and re-delivered on reconnect.
    this.triggers.dropAllProvided();
    this.granted.clear();
    this.life.tell({ type: 'disconnected', url: this.conn.url, code, reason });
  }
}
