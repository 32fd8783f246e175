import { createServer, type AddressInfo } from 'node:net';
import { registerWorker, type Worker, type WorkerOptions } from 'svc-sdk';

/** Poll until `fn` stops throwing (registration frames are asynchronous). */
export async function eventually(fn: () => Promise<void> | void, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      await fn();
      return;
    } catch (e) {
      if (Date.now() > end) throw e;
      await sleep(25);
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Test workers: quiet, and quick to reconnect. Collect them and shut all down in `after`. */
export class WorkerPool {
  private readonly all: Worker[] = [];
  constructor(private readonly url: () => string) {}
  make(name: string, opts: WorkerOptions = {}): Worker {
    const w = registerWorker(this.url(), { workerName: name, echoLogs: false, reconnect: { initialDelayMs: 50, maxDelayMs: 200 }, ...opts });
    this.all.push(w);
    return w;
  }
  async closeAll(): Promise<void> {
    await Promise.all(this.all.map((w) => w.shutdown()));
  }
}

/** A loopback port nothing listens on (bound, then released). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The value of one sample line (`series` with its labels) of a Prometheus text exposition, or undefined. */
export function promSample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}
