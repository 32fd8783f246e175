/**
 * The Lua scripts of svc-cron's Redis store: each operation on a schedule runs as one script, so it
 * is atomic on the server (the same rules as the embedded store's transactions; one conformance
 * suite checks both). A schedule is the hash `<prefix>:s:<id>`:
 *
 *   def, created_at, last_time, paused ("1"), run_id, run_holder, run_until, last, last_run_id,
 *   last_result, fired, ok, error, skipped, missed
 *
 * `<prefix>:holders` maps each svc-cron process to "<expires_at ms> <worker name>"; a run counts as
 * running only while its holder's entry is unexpired. Record texts (`last`, `last_result`) are
 * built by the client; the scripts only pick which one to write, so no JSON is parsed in Lua.
 */

/**
 * start(key, holders, args, i): args[i..i+8] = scheduled time, run id, holder id, now, until,
 * skip ("1" = overlap skip), honor pause ("1"), then the record texts fire / skipped / paused.
 */
const START = `
local function start(key, holders, a, i)
  local now = tonumber(a[i + 3])
  if a[i + 6] == '1' and redis.call('HGET', key, 'paused') == '1' then
    redis.call('HINCRBY', key, 'skipped', 1)
    redis.call('HSET', key, 'last', a[i + 9], 'last_run_id', '')
    return 'paused'
  end
  if a[i + 5] == '1' then
    local r = redis.call('HMGET', key, 'run_holder', 'run_until')
    if r[1] and tonumber(r[2]) > now then
      local h = redis.call('HGET', holders, r[1])
      if h and tonumber(string.match(h, '^(%d+)')) > now then
        redis.call('HINCRBY', key, 'skipped', 1)
        redis.call('HSET', key, 'last', a[i + 8], 'last_run_id', '')
        return 'skipped'
      end
    end
  end
  redis.call('HSET', key, 'run_id', a[i + 1], 'run_holder', a[i + 2], 'run_until', a[i + 4], 'last', a[i + 7], 'last_run_id', a[i + 1])
  redis.call('HINCRBY', key, 'fired', 1)
  return 'fire'
end
`;

/** KEYS: schedule, holders. ARGV: def, created_at. Creates the schedule if new; returns HGETALL. */
export const REGISTER_SCRIPT = `
if redis.call('HSETNX', KEYS[1], 'def', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'created_at', ARGV[2])
end
return redis.call('HGETALL', KEYS[1])
`;

/**
 * KEYS: schedule, holders. ARGV: policy (all|last|none), n, n times (ascending), has start ("1"),
 * then start's 10 arguments. Returns {missing} for an unknown schedule, else
 * {times to run…, missed, started} (started "" when start did not apply).
 */
export const ADVANCE_SCRIPT = `${START}
if redis.call('HEXISTS', KEYS[1], 'def') == 0 then return {'missing'} end
local policy = ARGV[1]
local n = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[1], 'last_time') or '-1')
local fresh = {}
for i = 3, 2 + n do
  if tonumber(ARGV[i]) > last then fresh[#fresh + 1] = ARGV[i] end
end
if #fresh == 0 then return {'0', ''} end
redis.call('HSET', KEYS[1], 'last_time', fresh[#fresh])
local run = {}
if policy == 'all' then run = fresh elseif policy == 'last' then run = {fresh[#fresh]} end
local missed = #fresh - #run
if missed > 0 then redis.call('HINCRBY', KEYS[1], 'missed', missed) end
local started = ''
local s = 3 + n
if ARGV[s] == '1' and run[1] == ARGV[s + 1] then started = start(KEYS[1], KEYS[2], ARGV, s + 1) end
run[#run + 1] = tostring(missed)
run[#run + 1] = started
return run
`;

/** KEYS: schedule, holders. ARGV: start's 10 arguments. Returns missing | fire | skipped | paused. */
export const START_SCRIPT = `${START}
if redis.call('HEXISTS', KEYS[1], 'def') == 0 then return 'missing' end
return start(KEYS[1], KEYS[2], ARGV, 1)
`;

/** KEYS: schedule. ARGV: run id, record text, ok ("1") or error ("0"). */
export const FINISH_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], 'def') == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'run_id') == ARGV[1] then redis.call('HDEL', KEYS[1], 'run_id', 'run_holder', 'run_until') end
if redis.call('HGET', KEYS[1], 'last_run_id') == ARGV[1] then redis.call('HSET', KEYS[1], 'last', ARGV[2]) end
redis.call('HSET', KEYS[1], 'last_result', ARGV[2])
if ARGV[3] == '1' then redis.call('HINCRBY', KEYS[1], 'ok', 1) else redis.call('HINCRBY', KEYS[1], 'error', 1) end
return 1
`;

/** KEYS: schedule. ARGV: "1" to pause, "0" to resume. Returns HGETALL, or an empty reply if unknown. */
export const PAUSE_SCRIPT = `
if redis.call('HEXISTS', KEYS[1], 'def') == 0 then return {} end
if ARGV[1] == '1' then redis.call('HSET', KEYS[1], 'paused', '1') else redis.call('HDEL', KEYS[1], 'paused') end
return redis.call('HGETALL', KEYS[1])
`;

/**
 * KEYS: holders, then for each candidate its bindings key. ARGV: now, then the candidate holder
 * ids. Removes the candidates that are still expired (one may have renewed since it was read).
 */
export const REAP_SCRIPT = `
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  local h = redis.call('HGET', KEYS[1], ARGV[i])
  if h and tonumber(string.match(h, '^(%d+)')) <= now then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('DEL', KEYS[i])
  end
end
return 1
`;
