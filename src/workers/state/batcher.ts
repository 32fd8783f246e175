/**
 * Group commit for the stores: the writes svc-state receives together leave together (one LMDB
 * commit and fsync, one Redis script run), so a burst of N concurrent writes pays the per-commit
 * cost once instead of N times. That cost is most of a write's: bench/RESULTS.md, 2026-11-22
 * session 2.
 *
 * When: at the end of the event-loop turn in which the first queued write arrived (the frames of
 * one read from the engine are one turn), so a lone call waits for nothing. One exception: a turn
 * that brought a single write while the store is busy (the previous batch had BUSY_BATCH writes or
 * more) waits for the next turn that brings writes, at most LONE_WRITE_WAIT_MS. Under load the
 * engine writes the first frame of a burst at once and the rest at the end of its turn
 * (sdk/typescript/src/transport.ts), and committing that first write alone cost a whole fsync: in
 * the 64-in-flight benchmark a third of the embedded commits, and half of the Redis script runs,
 * carried one write.
 */

/** A previous batch this large means writes are arriving in bursts. */
const BUSY_BATCH = 4;
/** How long a lone write may wait for the rest of its burst (setTimeout's resolution is 1 ms). */
const LONE_WRITE_WAIT_MS = 1;

export class TurnBatcher<T> {
  private queue: T[] = [];
  private lastBatch = 0;
  private waiting: NodeJS.Timeout | undefined;

  /** `run` gets each batch, in arrival order, and must not throw. */
  constructor(private readonly run: (batch: T[]) => void) {}

  push(item: T): void {
    const n = this.queue.push(item);
    // The first write of a turn schedules the end of the turn; so does the first one to join a
    // lone write that is waiting.
    if (n === 1 || (n === 2 && this.waiting !== undefined)) queueMicrotask(this.endOfTurn);
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
    if (this.queue.length === 1 && this.lastBatch >= BUSY_BATCH && this.waiting === undefined) {
      this.waiting = setTimeout(this.flush, LONE_WRITE_WAIT_MS);
      return;
    }
    this.flush();
  };
}
