/**
 * The speed tricks the engine shares with svc-sdk's own call path. They live in the SDK, which the
 * engine depends on, so that both sides use one implementation; the engine imports them from here
 * only. README.md in this directory says why each exists and which bench shows it.
 *
 * - ChurnMap: a Map for entries that come and go at the call rate (the in-flight tables).
 * - Deadlines: deadlines of calls in flight, calls of one timeout sharing a lane and its one timer.
 * - sendCoalesced: frames written to one socket in one event-loop turn leave in one syscall.
 * - exceedsBytes: a frame's UTF-8 size, measured only when it might be over a limit.
 * - jsonString: a string quoted as JSON, without JSON.stringify when nothing needs escaping.
 */
export { ChurnMap, Deadlines, exceedsBytes, jsonString, sendCoalesced, type DeadlineEntry } from 'svc-sdk/internal';
