/**
 * The Redis queue store's one Lua script: every change to the queues runs inside it, atomic on the
 * server, so no crash (of svc-queue, or of Redis between commands) leaves a job half-moved. It is
 * the same state machine as embedded-store.ts; test/workers/queue/conformance.ts runs against both.
 *
 * ARGV: operation, key prefix P, JSON input. Keys are built from P (a standalone Redis, as the
 * state store assumes; not Redis Cluster):
 *   P:j:<id>               hash: the job (q fn data bytes grp st att fails enq run dm retry lease dead tp meta topic bind hist)
 *   P:q:<q>:l:<lane>       list: a lane's waiting ids        P:q:<q>:lanes  set: lanes holding waiting ids
 *   P:q:<q>:ring           zset: ready lanes by turn          P:q:<q>:busy   set: grouped lanes whose job runs or retries
 *   P:q:<q>:d              zset: delayed, member "<16-digit seq>|<id>" by due time (seq keeps enqueue order)
 *   P:q:<q>:x              zset: running ids by lease deadline
 *   P:q:<q>:z              zset: dead-lettered ids by when they died
 *   P:q:<q>:s              hash: counters (waiting completed failed jobs bytes seq ring)
 *   P:queues               set of queue names          P:t:<topic>  hash: fn NUL queue → subscription JSON
 *   P:topics               set of topics with subscriptions
 *
 * Counters are read once per queue per run and written once at its end. Absent values travel as
 * `false` (cjson's null is not falsy in Lua). A job's attempt history is its records' JSON texts
 * joined by newlines (JSON text holds no raw newline), trimmed without parsing.
 */
import { ADMIN_LUA } from './redis-script-admin.js';
import { STEP_LUA } from './redis-script-steps.js';

/** The whole script, loaded once (SCRIPT LOAD) and run with EVALSHA. */
export const QUEUE_SCRIPT = STEP_LUA + ADMIN_LUA;
