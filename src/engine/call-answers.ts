import type { CallOutcome, Reply } from './call.js';
import { EngineError, engineErrors } from './errors.js';
import { resultText } from './hot/call-frames.js';
import { exceedsBytes } from './hot/shared-with-sdk.js';
import type { Peer } from './peer.js';
import type { BuiltinHandler } from './registry.js';

/**
 * A caller's answer, whatever happened: the frame of any call's outcome (Invocations.answer writes
 * it), and a builtin's outcome and frame. None of these throws, so that every caller is answered.
 */

type Warn = (message: string) => void;

/**
 * The answer frame. Never throws: an answer that cannot be written (a value JSON cannot encode)
 * becomes an `internal_error` answer, so that the caller is answered either way.
 */
export function answerText(caller: Peer, callerIdJson: string, fidJson: string, o: CallOutcome, warn: Warn): string {
  try {
    return resultText(callerIdJson, fidJson, o.result, o.error, o.traceparent, o.baggage);
  } catch (err) {
    const fid = JSON.parse(fidJson) as string;
    warn(`cannot write the answer of ${fid} to ${caller.name}: ${(err as Error).message}`);
    return resultText(callerIdJson, fidJson, undefined, engineErrors.unwritable(fid, 'the result', err), null, null);
  }
}

/**
 * A builtin's answer frame: as any other, and over max_frame_bytes replaced by a `result_too_large`
 * error (listings have no other bound; a frame that large would close the caller's connection).
 */
export function builtinAnswerText(caller: Peer, callerIdJson: string, fidJson: string, o: CallOutcome, maxFrameBytes: number, warn: Warn): string {
  const text = answerText(caller, callerIdJson, fidJson, o, warn);
  const size = exceedsBytes(text, maxFrameBytes);
  if (size === false) return text;
  return resultText(callerIdJson, fidJson, undefined, engineErrors.builtinResultTooLarge(JSON.parse(fidJson) as string, size, maxFrameBytes), null, null);
}

/** A builtin's answer, whatever happens in it: `reply` never throws, and anything else is caught here. */
export function runBuiltin(handler: BuiltinHandler, data: unknown, caller: Peer | null, reply: Reply, frameChars: number, inOrder: boolean, warn: Warn): void {
  let started: Promise<unknown>;
  if (inOrder) {
    try {
      started = Promise.resolve(handler(data, caller, frameChars));
    } catch (err) {
      started = Promise.reject(err);
    }
  } else {
    started = Promise.resolve().then(() => handler(data, caller, frameChars));
  }
  started
    .then(
      (result) => reply({ result: result ?? null }),
      (err: unknown) =>
        reply({
          error: err instanceof EngineError ? err.body() : { code: 'invocation_failed', message: err instanceof Error ? err.message : String(err) },
        }),
    )
    .catch((err: unknown) => warn(`internal error answering a call of a builtin: ${(err as Error).stack ?? String(err)}`));
}
