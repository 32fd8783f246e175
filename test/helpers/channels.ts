/** Checks on channels shared by the single-engine and the cluster (relayed) tests. */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { SvcError, Worker } from 'svc-sdk';

/**
 * `bytes` written by `writerSide`'s worker reach `readerSide`'s, whose reader pauses its socket for
 * `pauseMs` (no pongs for several ping periods) once 256 KiB arrived: slowed, never cut.
 */
export async function assertPausedReaderGetsAll(readerSide: Worker, writerSide: Worker, bytes: number, pauseMs: number): Promise<void> {
  const pair = await writerSide.createChannel();
  const reader = readerSide.openReader(pair.reader);
  const writer = writerSide.openWriter(pair.writer);
  const errors: string[] = [];
  reader.on('error', (e: SvcError) => errors.push(`reader ${e.code}`));
  writer.on('error', (e: SvcError) => errors.push(`writer ${e.code}`));
  let got = 0;
  let paused = false;
  reader.on('data', (c: Buffer) => {
    got += c.length;
    if (!paused && got > 256 * 1024) {
      paused = true;
      reader.pause();
      setTimeout(() => reader.resume(), pauseMs);
    }
  });
  const data = randomBytes(bytes);
  writer.end(data);
  await Promise.race([once(reader, 'end'), once(reader, 'close')]);
  assert.deepEqual(errors, []);
  assert.equal(got, data.length);
}

/**
 * Send a hand-written WebSocket upgrade for `target` (path and query) to the engine at `url`, with
 * `key` as its Sec-WebSocket-Key; resolves with the engine's whole answer once it closes the socket.
 */
export async function rawChannelUpgrade(url: string, target: string, key: string): Promise<string> {
  const s = connect(Number(new URL(url).port), '127.0.0.1');
  let answer = '';
  s.setEncoding('utf8');
  s.on('data', (d: string) => (answer += d));
  s.write(
    `GET ${target} HTTP/1.1\r\n` +
      `Host: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`,
  );
  await once(s, 'close');
  return answer;
}

/** A reader on `readerSide` destroyed after its first data ends the writer on `writerSide` with channel_reader_closed. */
export async function assertEarlyReaderCloseEndsWriter(readerSide: Worker, writerSide: Worker): Promise<void> {
  const pair = await readerSide.createChannel();
  const reader = readerSide.openReader(pair.reader);
  const writer = writerSide.openWriter(pair.writer);
  writer.write(Buffer.alloc(1000));
  await once(reader, 'data');
  reader.destroy();
  const [err] = (await once(writer, 'error')) as [SvcError];
  assert.equal(err.code, 'channel_reader_closed', err.message);
}
