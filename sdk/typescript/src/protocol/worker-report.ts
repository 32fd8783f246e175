/**
 * The payload of `engine::workers::report` (REPORT_WORKER_FUNCTION), which both SDKs send every few
 * seconds: the worker's process, and the counters svc-state and svc-queue add (Worker.reportAlso).
 * The engine validates it where it enters (src/engine/worker-reports.ts, service-counters.ts).
 */

/** svc-state: operations one instance served since it started, and the JSON characters of the values `state::set` stored. */
export interface StateCounters {
  gets: number;
  sets: number;
  updates: number;
  deletes: number;
  lists: number;
  set_bytes: number;
}

/** svc-queue, one queue: jobs one instance handled since it started, and the queue's depth now. */
export interface QueueCounters {
  queue: string;
  enqueued: number;
  completed: number;
  retried: number;
  dead_lettered: number;
  waiting: number;
  delayed: number;
  running: number;
  dlq: number;
}
