/**
 * The request body of a streaming route (docs/http.md "Streaming request bodies"): svc-http opens
 * the write side of a `request_body` channel and pumps the body into it as it arrives, decoded
 * from its Content-Encoding, so an upload of any size passes through without being held whole. A
 * handler reading slowly slows the client (the channel's backpressure pauses the request).
 */
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { ChannelWriter } from 'svc-sdk';
import { isJsonContentType } from './request.js';
import { HttpError } from './response.js';

const DECODERS: Record<string, (() => NodeJS.ReadWriteStream) | null> = {
  '': null,
  identity: null,
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

function encodingOf(req: IncomingMessage): string {
  return (req.headers['content-encoding'] ?? '').trim().toLowerCase();
}

/** Refuse a Content-Encoding svc-http cannot decode, before any channel exists: HttpError 415 `unsupported_encoding`. */
export function checkEncoding(req: IncomingMessage): void {
  if (!(encodingOf(req) in DECODERS)) {
    throw new HttpError(415, 'unsupported_encoding', `Unsupported Content-Encoding ${JSON.stringify(req.headers['content-encoding'])}; use gzip, deflate, br or identity`);
  }
}

/**
 * Whether a streaming route's request is read whole first (so `body` is parsed as on any route):
 * JSON of a declared length within `limit`. Anything else only streams, and `body` is null.
 */
export function buffersBody(req: IncomingMessage, limit: number): boolean {
  const length = Number(req.headers['content-length']);
  return isJsonContentType(req.headers['content-type']) && Number.isFinite(length) && length <= limit;
}

/** The body's pump into its channel; `stop()` ends it early (the response is over). */
export interface RequestBodyPump {
  stop(): void;
}

/** HttpError 413 `payload_too_large` for a streamed body over `limit` (counted after decoding). */
export function streamTooLarge(limit: number): HttpError {
  return new HttpError(413, 'payload_too_large', `Request body exceeds stream_body_limit_bytes (${limit} bytes)`);
}

/** Refuse a declared Content-Length over `limit` before any channel exists. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const length = Number(req.headers['content-length']);
  if (Number.isFinite(length) && length > limit) throw streamTooLarge(limit);
}

/** Passes bytes through until `limit`; one more fails the pipeline with HttpError 413. */
function byteBudget(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
      seen += chunk.length;
      callback(seen > limit ? streamTooLarge(limit) : null, seen > limit ? undefined : chunk);
    },
  });
}

/**
 * Pump the request body (`buffered`, when it was read whole; else the request stream itself) into
 * `writer`, the write side of the `request_body` channel, at most `limit` bytes after decoding.
 * Failures end the pump only: the handler's reader is told the stream failed (`channel_writer_lost`);
 * a body over `limit` also calls `tooLarge`.
 */
export function pumpRequestBody(req: IncomingMessage, buffered: Buffer | undefined, writer: ChannelWriter, limit: number, tooLarge: (e: HttpError) => void): RequestBodyPump {
  writer.on('error', () => {
    /* the handler closed its reader, or never opened it: the body is no longer wanted */
  });
  if (buffered !== undefined) {
    writer.end(buffered);
  } else {
    const decoder = DECODERS[encodingOf(req)]?.() ?? null;
    const done = decoder ? pipeline(req, decoder, byteBudget(limit), writer) : pipeline(req, byteBudget(limit), writer);
    done.catch((e: unknown) => {
      // The writer failing stops reading the request; Node discards the rest with the connection.
      if (e instanceof HttpError) tooLarge(e);
    });
  }
  return {
    stop: () => {
      if (!writer.writableFinished) writer.destroy();
    },
  };
}
