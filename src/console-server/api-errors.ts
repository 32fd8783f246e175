import type { NextFunction, Request, Response } from 'express';

/** An error as express hands it to an error middleware; body-parser's carry `status`, `type` and `expose`. */
type ThrownError = Error & { status?: number; statusCode?: number; type?: string; expose?: boolean };

/**
 * body-parser's refusals of a request body (its `type`s), as the console API's code and status.
 * Everything else that reaches the error middleware is a failure of the console server's own code.
 */
const BODY_ERRORS: Record<string, { status: number; code: string; message: (e: ThrownError, limit: string) => string }> = {
  'entity.too.large': { status: 413, code: 'payload_too_large', message: (_e, limit) => `The request body is over the console's limit of ${limit}` },
  'entity.parse.failed': { status: 400, code: 'invalid_json', message: (e) => `The request body is not JSON: ${e.message}` },
  'charset.unsupported': { status: 415, code: 'unsupported_charset', message: (e) => `The request body's charset is not supported (${e.message}): send UTF-8` },
  'encoding.unsupported': { status: 415, code: 'unsupported_encoding', message: (e) => `The request body's Content-Encoding is not supported (${e.message}): send it as is, gzip, deflate or br` },
};

/**
 * The console API's last error middleware. A body the client got wrong is the client's error, with
 * a code saying which; a failure of ours is 500 `internal_error`, logged with its stack, instead of
 * a 400 `invalid_request` that blamed the page for the console server's bug.
 */
export function apiErrors(limit: string, log: (line: string) => void) {
  return (err: ThrownError, req: Request, res: Response, next: NextFunction): void => {
    if (!err) return next();
    if (res.headersSent) return next(err); // express ends the response
    const known = err.type !== undefined ? BODY_ERRORS[err.type] : undefined;
    if (known) {
      res.status(known.status).json({ ok: false, error: { code: known.code, message: known.message(err, limit) } });
      return;
    }
    const status = err.status ?? err.statusCode;
    // Other refusals of body-parser (a body shorter than its Content-Length, a gzip body that does
    // not inflate): http-errors marks them `expose`, with a 4xx status.
    if (err.expose === true && status !== undefined && status >= 400 && status < 500) {
      res.status(status).json({ ok: false, error: { code: 'invalid_request', message: `The request body could not be read: ${err.message}` } });
      return;
    }
    log(`svc console: ${req.method} ${req.originalUrl} failed in the console server: ${err.stack ?? err.message}`);
    res.status(500).json({ ok: false, error: { code: 'internal_error', message: `The console server failed on ${req.method} ${req.baseUrl}${req.path}: ${err.message} (a bug; its log has the stack)` } });
  };
}
