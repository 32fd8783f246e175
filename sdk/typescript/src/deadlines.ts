/**
 * Deadlines of calls in flight, without a timer per call: the engine's (a call's `timeout_ms`) and
 * a Caller's (the safety net a second after it, caller.ts).
 *
 * A `setTimeout` per invocation (plus `clearTimeout` when it ends) allocated a Timeout and a
 * closure and churned Node's timer lists on every routed call. Here entries with the same
 * duration share a lane: a FIFO linked through the entries themselves, so adding and removing is
 * a few pointer writes. Entries of one lane are added in deadline order (same duration, later
 * start), so only the lane's head can be due; each lane has at most one timer, armed for its head.
 * Removing an entry does not re-arm anything: when the timer fires it expires whatever is due and
 * re-arms for the new head. Calls almost always end long before their deadline, so a lane's timer
 * fires about once per duration, whatever the call rate.
 *
 * An entry never expires early: the timer may fire before the head's deadline (Node measures from
 * its cached loop time), and then it is simply re-armed for the rest.
 */

/** The fields an entry carries for its lane (an Invocation has them). */
export interface DeadlineEntry {
  /** performance.now() at which it is due. */
  deadlineAt: number;
  lane: Lane | null;
  prevDue: DeadlineEntry | null;
  nextDue: DeadlineEntry | null;
}

class Lane {
  head: DeadlineEntry | null = null;
  tail: DeadlineEntry | null = null;
  timer: NodeJS.Timeout | null = null;
  /** Set while expiring, so that entries added meanwhile do not arm a second timer. */
  firing = false;
  constructor(readonly ms: number) {}
}

export type { Lane };

export class Deadlines<E extends DeadlineEntry> {
  private readonly lanes = new Map<number, Lane>();
  /** The lane of the last add: nearly every call uses the default timeout. */
  private last: Lane | null = null;

  constructor(private readonly onExpire: (entry: E) => void) {}

  /** `now`: performance.now() of the caller, so that one clock read serves both. */
  add(entry: E, ms: number, now: number): void {
    entry.deadlineAt = now + ms;
    let lane = this.last;
    if (lane === null || lane.ms !== ms) {
      lane = this.lanes.get(ms) ?? null;
      if (lane === null) {
        lane = new Lane(ms);
        this.lanes.set(ms, lane);
      }
      this.last = lane;
    }
    entry.lane = lane;
    entry.prevDue = lane.tail;
    entry.nextDue = null;
    if (lane.tail) lane.tail.nextDue = entry;
    else lane.head = entry;
    lane.tail = entry;
    if (lane.timer === null && !lane.firing) this.arm(lane, now);
  }

  remove(entry: E): void {
    const lane = entry.lane;
    if (lane === null) return;
    if (entry.prevDue) entry.prevDue.nextDue = entry.nextDue;
    else lane.head = entry.nextDue;
    if (entry.nextDue) entry.nextDue.prevDue = entry.prevDue;
    else lane.tail = entry.prevDue;
    entry.lane = entry.prevDue = entry.nextDue = null;
  }

  private arm(lane: Lane, now: number): void {
    const head = lane.head!;
    // Unref'd: a call in flight always has a connection (or an engine-internal caller) that keeps
    // the process alive; a lane must not hold it up for a whole timeout after the last call.
    lane.timer = setTimeout(() => this.fire(lane), Math.max(1, Math.ceil(head.deadlineAt - now)));
    lane.timer.unref();
  }

  private fire(lane: Lane): void {
    lane.timer = null;
    lane.firing = true;
    try {
      for (;;) {
        const head = lane.head;
        if (head === null || head.deadlineAt > performance.now()) break;
        this.remove(head as E);
        this.onExpire(head as E);
      }
    } finally {
      lane.firing = false;
      if (lane.head !== null) this.arm(lane, performance.now());
      else {
        this.lanes.delete(lane.ms);
        if (this.last === lane) this.last = null;
      }
    }
  }
}
