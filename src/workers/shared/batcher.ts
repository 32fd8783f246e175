/**
 * Group commit for the built-ins' stores (svc-state's writes, svc-queue's steps): what arrives
 * together leaves together (one LMDB commit and fsync, one Redis script run), so a burst of N
 * concurrent writes pays the per-commit cost once instead of N times. That cost is most of a write's: bench/RESULTS.md, 2026-11-22
 * session 2.
 *
 * When: at the end of the event-loop turn in which the first queued write arrived (the frames of
 * one read from the engine are one turn), so a lone call waits for nothing. One exception: while
 * writes come in bursts, a turn that brought a small part of a burst (at most a quarter of the
 * previous batch) waits for the next turn that brings writes, at most SMALL_BATCH_WAIT_MS, and leaves
 * with it. Under load the engine writes the first frame of a burst at once and the rest at the end
 * of its turn (sdk/typescript/src/transport.ts), and the pieces of a burst arrive in separate reads:
 * committing each piece on its own cost a whole fsync each. Waiting only for a single write left,
 * in the 64-in-flight benchmark, 13-30 % of the embedded commits with 2-3 writes or one; waiting
 * for any small piece made the average commit 35-48 → 52-59 writes and cut the time svc-state's
 * event loop waits for the disk by a third to a half (bench/RESULTS.md, 2026-11-22 session 3).
 */

/** A turn whose writes number at most 1/SMALL_FRACTION of the previous batch is a piece of a burst. */
const SMALL_FRACTION = 4;
/** How long a small piece may wait for the rest of its burst (setTimeout's resolution is 1 ms). */
const SMALL_BATCH_WAIT_MS = 1;

export class TurnBatcher<T> {
  private queue: T[] = [];
  private lastBatch = 0;
  private waiting: NodeJS.Timeout | undefined;
  /** An end-of-turn check is queued (one per turn that brings writes). */
  private scheduled = false;

  /** `run` gets each batch, in arrival order, and must not throw. */
  constructor(private readonly run: (batch: T[]) => void) {}

  push(item: T): void {
    this.queue.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.endOfTurn);
    }
  }

  /** Hand everything queued to `run` now (a read that must see earlier writes, close). */
  readonly flush = (): void => {
    if (this.waiting !== undefined) {
      clearTimeout(this.waiting);
      this.waiting = undefined;
    }
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    this.lastBatch = batch.length;
    this.run(batch);
  };

  private readonly endOfTurn = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return; // flushed already in this turn
    // A piece already waiting: this turn brought the writes it waited for.
    if (this.waiting === undefined && this.queue.length * SMALL_FRACTION <= this.lastBatch) {
      this.waiting = setTimeout(this.flush, SMALL_BATCH_WAIT_MS);
      return;
    }
    this.flush();
  };
}
