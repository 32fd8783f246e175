import type { EventEmitter } from 'node:events';
import { describeValue, InvocationError, toErrorBody } from './errors.js';
import { redactAddress } from './redact.js';
import type { WorkerEvent, WorkerEventMap, WorkerState } from './worker-events.js';

/**
 * A worker's lifecycle (drawn in worker-events.ts): its one state, what waits for `connected`
 * (`ready()`), why the engine refused it, and the events that tell the program of each change.
 * The Worker emits them; this decides what to emit and when.
 */
export class WorkerLifecycle {
  private current: WorkerState = 'disconnected';
  private waiters: Array<{ connected(): void; failed(e: InvocationError): void }> = [];
  /** Why the engine last refused this worker, until the next accepted connection. */
  lastRefusal: InvocationError | null = null;
  /** The refusal that closed this worker for good (`stale_worker`). */
  closedBy: InvocationError | null = null;
  /** The message of the engine's `error` frame that precedes its refusal's close. */
  refusalMessage: string | undefined;
  /** An unreachable engine was reported since the last accepted connection (once is enough: the SDK retries quietly). */
  private toldUnreachable = false;

  constructor(
    private readonly worker: EventEmitter<WorkerEventMap>,
    private readonly workerName: string,
    /** The engine address in use. */
    private readonly url: () => string,
    /** Runs first when the worker closes (the process reports stop). */
    private readonly closing: () => void,
  ) {}

  get state(): WorkerState {
    return this.current;
  }

  /** See Worker.ready. `open`: the socket is open (a draining worker is still connected then). */
  ready(timeoutMs: number, open: boolean): Promise<void> {
    const s = this.current;
    if (s === 'connected' || (s === 'draining' && open)) return Promise.resolve();
    if (s === 'closed' || s === 'draining') return Promise.reject(this.closedError());
    // The last attempt was refused: waiting for the next one (at the backoff's cap) is pointless.
    if (this.lastRefusal) return Promise.reject(this.lastRefusal);
    return new Promise((resolve, reject) => {
      const waiter = {
        connected: (): void => {
          clearTimeout(t);
          resolve();
        },
        failed: (e: InvocationError): void => {
          clearTimeout(t);
          reject(e);
        },
      };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(this.lastRefusal ?? new InvocationError('connection_lost', `Could not connect to the engine at ${redactAddress(this.url())} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  set(next: WorkerState): void {
    const previous = this.current;
    if (previous === next) return;
    this.current = next;
    this.worker.emit('state', next, previous);
    this.tell({ type: 'state', state: next, previous });
  }

  /** The engine accepted the connection (`workerregistered`): ready() waiters go on. */
  accepted(): void {
    this.lastRefusal = null;
    this.toldUnreachable = false;
    if (this.current === 'connecting' || this.current === 'disconnected') this.set('connected');
    for (const w of this.waiters.splice(0)) w.connected();
  }

  /** Enter `closed`: ready() waiters fail with `refusal`, else `shutting_down`. */
  close(refusal: InvocationError | null): void {
    this.closing();
    this.closedBy = refusal;
    this.set('closed');
    const err = this.closedError();
    for (const w of this.waiters.splice(0)) w.failed(err);
  }

  closedError(): InvocationError {
    return this.closedBy ?? new InvocationError('shutting_down', 'Worker is shut down');
  }

  /** The engine refused the connection (close 4401, 4410); `final`: it is closed for good. Returns the error told. */
  refused(code: 'unauthorized' | 'stale_worker', reason: string, final: boolean): InvocationError {
    const why = this.refusalMessage ?? reason.replace(/^(unauthorized|stale_worker): /, '');
    this.refusalMessage = undefined;
    const shown = redactAddress(this.url());
    const err =
      code === 'unauthorized'
        ? new InvocationError('unauthorized', `The engine at ${shown} refused this connection: ${why}`)
        : new InvocationError('stale_worker', `The engine at ${shown} refused this worker: ${why}`);
    this.lastRefusal = err;
    if (final) this.close(err);
    else for (const w of this.waiters.splice(0)) w.failed(err);
    this.tell({ type: 'refused', url: this.url(), error: err, final });
    this.report(err);
    return err;
  }

  /** Connecting cannot ever work (a malformed address): closed, and told. */
  fatal(e: Error): void {
    const err = new InvocationError('invalid_argument', `Cannot connect to the engine at ${describeValue(redactAddress(this.url()))}: ${e.message}`);
    // Nothing will ever connect: a program that ends for want of anything else to do should not
    // end with 0 (a worker run by hand, or supervised, with SVC_URL=localhost:49134).
    if (this.worker.listenerCount('error') === 0 && process.exitCode === undefined) process.exitCode = 1;
    this.close(err);
    this.report(err);
  }

  /**
   * A socket closed before it opened. Told once until a connection is accepted: a worker started
   * with a wrong SVC_URL, or before its engine, otherwise waited in silence.
   */
  unreachable(url: string, why: string): void {
    if (this.toldUnreachable || this.current === 'closed') return;
    this.toldUnreachable = true;
    this.report(new InvocationError('connection_failed', `Cannot reach the engine at ${redactAddress(url)} (${why}); retrying until it answers (the address comes from SVC_URL or registerWorker's url)`));
  }

  /** Emit `e` under its own name (but `error`, which report() emits) and under `event`. */
  tell(e: WorkerEvent): void {
    if (e.type === 'connected') this.worker.emit('connected', e);
    else if (e.type === 'disconnected') this.worker.emit('disconnected', e);
    else if (e.type === 'refused') this.worker.emit('refused', e);
    this.worker.emit('event', e);
  }

  /** A problem nobody awaits: an `error` event, or stderr when nobody listens. */
  report(err: Error): void {
    const e = err instanceof InvocationError ? err : InvocationError.from(toErrorBody(err));
    this.tell({ type: 'error', error: e });
    if (this.worker.listenerCount('error') > 0) this.worker.emit('error', e);
    else process.stderr.write(`svc-sdk [${this.workerName}]: ${e.message}\n`);
  }
}
