/**
 * The response of a streaming route (docs/http.md "Streaming responses"): the handler gets a `response`
 * channel ref and writes iii's frames to it — text control frames `{"type":"set_status"}` and
 * `{"type":"set_headers"}`, then binary chunks — which go to the client as they come (chunked).
 *
 * The call's result and the channel race: the first frame (or the channel's end) makes the channel
 * the response; a call that returns an envelope before anything arrived is answered as on any
 * route. A client that goes away cancels the call and closes the channel; a call that fails or times
 * out ends the response, also when the channel's response had begun.
 */
import type { Response } from 'express';
import type { ChannelReader, ChannelRef, ChannelWriter } from 'svc-sdk';
import { nestsDeeperThan } from './request.js';
import { envelopeStatus, envelopeToResponse, HttpError, normalizeHeaders, type HttpResponseSpec } from './response.js';
import { pumpRequestBody } from './stream-request.js';

/** What svc-http needs from its worker to stream: new channels, and either side of one. */
export interface StreamingHooks {
  createChannel(): Promise<{ writer: ChannelRef; reader: ChannelRef }>;
  openReader(ref: ChannelRef): ChannelReader;
  openWriter(ref: ChannelRef): ChannelWriter;
  /** End a channel svc-http created (`engine::channels::close`), opened or not. */
  closeChannel(channelId: string): Promise<unknown>;
}

/** A control frame larger than this, or nested deeper than MAX_CONTROL_DEPTH, is refused. */
export const MAX_CONTROL_FRAME_BYTES = 64 * 1024;
const MAX_CONTROL_DEPTH = 8;
/**
 * A call that returned something other than an envelope may still be writing its response (the
 * frames travel on another socket than the result): this long for its first frame, then 500.
 */
export const STREAM_START_GRACE_MS = 2_000;

export interface ResponseHead {
  status: number;
  headers: Record<string, string | string[]>;
}

/** Apply one text frame of the `response` channel to `head`; throws HttpError 500 `invalid_response`. */
export function applyControlFrame(text: string, head: ResponseHead, functionId: string): void {
  const who = `Function ${functionId} sent`;
  if (Buffer.byteLength(text) > MAX_CONTROL_FRAME_BYTES) {
    throw new HttpError(500, 'invalid_response', `${who} a control frame of ${Buffer.byteLength(text)} bytes on its response channel; the limit is ${MAX_CONTROL_FRAME_BYTES}`);
  }
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw new HttpError(500, 'invalid_response', `${who} a text frame on its response channel that is not JSON: ${JSON.stringify(text.slice(0, 60))}`);
  }
  if (nestsDeeperThan(text, MAX_CONTROL_DEPTH) || typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
    throw new HttpError(500, 'invalid_response', `${who} a control frame that is not {type: "set_status"|"set_headers", …} (or nests over ${MAX_CONTROL_DEPTH} levels)`);
  }
  const f = frame as { type?: unknown; status_code?: unknown; headers?: unknown };
  if (f.type === 'set_status') {
    const s = f.status_code;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < 200 || s > 599) {
      throw new HttpError(500, 'invalid_response', `${who} set_status with status_code ${JSON.stringify(s)}; expected an integer 200–599`);
    }
    head.status = s;
  } else if (f.type === 'set_headers') {
    Object.assign(head.headers, normalizeHeaders(f.headers ?? {}, `${who} set_headers with`));
  }
  // Other types are iii's or later additions that do not change the HTTP response: ignored.
}

export interface StreamedCall {
  res: Response;
  functionId: string;
  hooks: StreamingHooks;
  /** The request body when it was read whole (small JSON); otherwise the request streams. */
  buffered: Buffer | undefined;
  /** Most bytes a streamed request body may carry (svc-http's `stream_body_limit_bytes`). */
  bodyLimitBytes: number;
  /** Make the call with these refs in its payload; aborting `signal` cancels it. */
  call(refs: { request_body: ChannelRef; response: ChannelRef }, signal: AbortSignal): Promise<unknown>;
  send(spec: HttpResponseSpec): void;
  sendError(e: unknown): void;
}

function isEnvelope(v: unknown): boolean {
  return typeof v === 'object' && v !== null && typeof envelopeStatus(v as { status_code?: unknown }) === 'number';
}

/** Serve one request of a streaming route; resolves when the response is decided (not when it ends). */
export async function serveStreamed(s: StreamedCall): Promise<void> {
  const { res, functionId } = s;
  const [{ writer, reader }, body] = await Promise.all([s.hooks.createChannel(), s.hooks.createChannel()]);
  const stream = s.hooks.openReader(reader);
  const cancel = new AbortController();
  const head: ResponseHead = { status: 200, headers: {} };
  let settled = false; // the response is decided: the channel's, or the envelope's/error's
  let closedByUs = false; // the channel was closed here: its close is no failure to report
  let grace: NodeJS.Timeout | null = null;
  const bodyless = (): boolean => res.req.method === 'HEAD' || head.status === 204 || head.status === 304;

  const byEnvelope = (answer: () => void): void => {
    if (settled) return;
    settled = true;
    if (grace) clearTimeout(grace);
    closeChannel();
    answer();
  };
  const closeChannel = (): void => {
    closedByUs = true;
    stream.destroy();
  };
  const byChannel = (): void => {
    if (!settled) {
      settled = true;
      if (grace) clearTimeout(grace);
    }
  };
  const start = (): void => {
    byChannel();
    if (res.headersSent) return;
    res.statusCode = head.status;
    for (const name in head.headers) res.setHeader(name, head.headers[name]!);
    res.flushHeaders();
  };

  const pump = pumpRequestBody(res.req, s.buffered, s.hooks.openWriter(body.writer), s.bodyLimitBytes, (e) => {
    // Over the limit: the function's reader is told the body failed; the client gets 413 unless
    // the function's response already began.
    if (!res.headersSent) {
      cancel.abort();
      // The rest of the body is not read: the connection cannot carry another request.
      res.setHeader('connection', 'close');
      byEnvelope(() => s.sendError(e));
    }
  });
  // However the response ends, the request body's channel ends with it, also when the function
  // never opened it (else it would wait for its reader until channel_open_timeout_ms).
  res.once('close', () => {
    pump.stop();
    s.hooks.closeChannel(body.writer.channel_id).catch(() => {
      /* svc-http lost the engine: the channel went with its connection */
    });
  });
  stream.on('text', (text: string) => {
    if (res.headersSent || closedByUs) return;
    byChannel();
    try {
      applyControlFrame(text, head, functionId);
    } catch (e) {
      cancel.abort();
      closeChannel();
      s.sendError(e);
    }
  });
  stream.on('data', (chunk: Buffer) => {
    start();
    if (bodyless()) return;
    // A client slower than the handler: stop reading the channel, so the handler's writes wait.
    if (!res.write(chunk)) {
      stream.pause();
      res.once('drain', () => stream.resume());
    }
  });
  stream.on('end', () => {
    start();
    res.end();
  });
  stream.on('error', (e: Error & { code?: string }) => {
    if (closedByUs) return;
    if (!res.headersSent) {
      settled = true;
      cancel.abort();
      s.sendError(new HttpError(502, e.code ?? 'channel_closed', `The response channel of ${functionId} failed before the response began: ${e.message}`));
    } else {
      // Mid-body: cutting the connection is the only way to tell the client the body is incomplete.
      res.destroy();
    }
  });
  res.once('close', () => {
    if (res.writableFinished) return;
    cancel.abort();
    closeChannel();
  });

  s.call({ request_body: body.reader, response: writer }, cancel.signal).then(
    (result) => {
      if (settled) return;
      if (isEnvelope(result)) {
        byEnvelope(() => {
          try {
            s.send(envelopeToResponse(result, functionId));
          } catch (e) {
            s.sendError(e);
          }
        });
        return;
      }
      grace = setTimeout(
        () =>
          byEnvelope(() => {
            try {
              envelopeToResponse(result, functionId);
            } catch (e) {
              s.sendError(new HttpError(500, 'invalid_response', `${(e as Error).message}, and wrote nothing to its response channel within ${STREAM_START_GRACE_MS} ms`));
            }
          }),
        STREAM_START_GRACE_MS,
      );
    },
    (e) => {
      if (!settled) {
        byEnvelope(() => s.sendError(e));
        return;
      }
      // The channel's response began (control frames, perhaps body) and the call then failed or
      // timed out: its writer may stay open, so the call's end ends the response. Before the first
      // body byte the client gets the call's error; mid-body, cutting the connection is the only way
      // to say the body is incomplete. Either way the channel closes, so the writer fails too.
      if (res.writableEnded || res.destroyed) return;
      closeChannel();
      if (!res.headersSent) s.sendError(e);
      else res.destroy();
    },
  );
}
