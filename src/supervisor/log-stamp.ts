import { createWriteStream, openSync } from 'node:fs';
import { Transform, type Readable, type TransformCallback } from 'node:stream';

/** A line is held for its newline until this much of it has come, then written as it is: a stream without newlines must not grow a buffer. */
const MAX_LINE_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/**
 * What starts every line of a worker's output in its log file: the time it was read and the
 * replica that wrote it, `2026-11-24T11:08:01.123Z [1] `. output-tail.ts takes it off again.
 */
export const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[(\d+)\] /;

/**
 * Prefixes each line of one output stream (stdout or stderr) with the time and the replica. The
 * time is taken once per chunk read (the lines of one chunk were written together). A line cut
 * by a chunk's end is held until its newline comes (or MAX_LINE_BYTES of it, or the stream ends),
 * so that the lines of two streams, or of two replicas, interleave only whole.
 */
export class LineStamper extends Transform {
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private readonly tag: string;

  constructor(replica: number) {
    super();
    this.tag = ` [${replica}] `;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const prefix = new Date().toISOString() + this.tag;
    const out: (string | Buffer)[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      out.push(prefix, ...this.takePartial(), chunk.subarray(start, nl + 1));
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.partial.push(chunk.subarray(start));
      this.partialBytes += chunk.length - start;
      if (this.partialBytes >= MAX_LINE_BYTES) out.push(prefix, ...this.takePartial(), '\n');
    }
    if (out.length > 0) this.push(Buffer.concat(out.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))));
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.partialBytes > 0) this.push(Buffer.concat([Buffer.from(new Date().toISOString() + this.tag), ...this.takePartial(), Buffer.from('\n')]));
    done();
  }

  private takePartial(): Buffer[] {
    const p = this.partial;
    this.partial = [];
    this.partialBytes = 0;
    return p;
  }
}

/**
 * Appends `streams` (an instance's stdout and stderr), each line stamped for `replica`, to
 * `logFile`, opened here (so a log file that cannot be opened fails the launch). Resolves once all
 * of them have ended and everything read is written. A worker that writes faster than the disk
 * takes it is held up by its pipe (backpressure), not buffered here; if writing the file fails
 * (a full disk), the rest of the output is read and dropped, so the worker is never blocked.
 */
export function appendStamped(logFile: string, replica: number, streams: Readable[]): Promise<void> {
  const file = createWriteStream('', { fd: openSync(logFile, 'a') });
  const stampers = streams.map(() => new LineStamper(replica));
  const written = new Promise<void>((resolve) => {
    file.once('close', resolve);
    file.on('error', () => {
      for (const st of stampers) {
        st.unpipe(file);
        st.resume();
      }
      resolve();
    });
  });
  let open = streams.length;
  streams.forEach((s, k) => {
    const stamper = stampers[k]!;
    stamper.once('end', () => {
      if (--open === 0) file.end();
    });
    s.once('error', () => {
      if (!stamper.writableEnded) stamper.end();
    });
    s.pipe(stamper).pipe(file, { end: false });
  });
  if (open === 0) file.end();
  return written;
}
