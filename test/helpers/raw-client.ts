import WebSocket from 'ws';

type Frame = Record<string, unknown> & { type?: string };

/** A bare WebSocket peer for protocol-level tests: send exact frames, await the ones that match. */
export class RawClient {
  readonly frames: Frame[] = [];
  private waiters: Array<{ pred: (f: Frame) => boolean; resolve: (f: Frame) => void }> = [];
  closed = false;
  /** The engine's `workerregistered` frame for this connection. */
  registered: { worker_id: string; reattach_token: string } = { worker_id: '', reattach_token: '' };
  closeCode: number | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const f = JSON.parse(data.toString()) as Frame;
      this.frames.push(f);
      for (const w of [...this.waiters]) {
        if (w.pred(f)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(f);
        }
      }
    });
    ws.on('close', (code) => {
      this.closed = true;
      this.closeCode = code;
    });
  }

  static async connect(url: string, opts: WebSocket.ClientOptions = {}): Promise<RawClient> {
    const ws = new WebSocket(url, opts);
    const c = new RawClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    c.registered = (await c.next((f) => f.type === 'workerregistered')) as unknown as RawClient['registered'];
    return c;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first frame (already received or future) matching `pred`. */
  next(pred: (f: Frame) => boolean, timeoutMs = 3000): Promise<Frame> {
    const seen = this.frames.find(pred);
    if (seen) {
      this.frames.splice(this.frames.indexOf(seen), 1);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`no matching frame within ${timeoutMs} ms; got: ${JSON.stringify(this.frames).slice(0, 500)}`));
      }, timeoutMs);
      const done = (f: Frame): void => {
        clearTimeout(t);
        this.frames.splice(this.frames.indexOf(f), 1);
        resolve(f);
      };
      this.waiters.push({ pred, resolve: done });
    });
  }

  /** Resolve true if a matching frame arrives within `ms`, false otherwise. */
  async receives(pred: (f: Frame) => boolean, ms: number): Promise<boolean> {
    try {
      await this.next(pred, ms);
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    this.ws.terminate();
  }
}
