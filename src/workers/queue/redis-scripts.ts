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
export const QUEUE_SCRIPT = String.raw`
local op = ARGV[1]
local P = ARGV[2]
local input = cjson.decode(ARGV[3])
local MAX_HISTORY = 20
local PROMOTE_BATCH = 1000
local RECLAIM_BATCH = 100
local RECLAIM_HOLD_MS = 30000
local RING_SCAN = 1000
local PURGE_BATCH = 10000

local function K(q) return P .. ':q:' .. q .. ':' end
local function J(id) return P .. ':j:' .. id end
local function laneOf(fn, grp) if grp then return fn .. '\0' .. grp end return fn end
local function fnOfLane(lane)
  local i = string.find(lane, '\0', 1, true)
  if i then return string.sub(lane, 1, i - 1) end
  return lane
end
local function val(v) if v == nil or v == cjson.null then return false end return v end

local stats = {}
local COUNTERS = {'waiting', 'completed', 'failed', 'jobs', 'bytes', 'seq', 'ring'}
local function st(q)
  local s = stats[q]
  if not s then
    local v = redis.call('HMGET', K(q) .. 's', unpack(COUNTERS))
    s = {}
    for i, name in ipairs(COUNTERS) do s[name] = tonumber(v[i]) or 0 end
    stats[q] = s
  end
  return s
end
local function flush()
  for q, s in pairs(stats) do
    local args = {}
    for _, name in ipairs(COUNTERS) do args[#args + 1] = name; args[#args + 1] = s[name] end
    redis.call('HSET', K(q) .. 's', unpack(args))
    redis.call('SADD', P .. ':queues', q)
  end
end

local function ringAdd(q, lane)
  local k = K(q)
  if redis.call('ZSCORE', k .. 'ring', lane) then return end
  local s = st(q)
  s.ring = s.ring + 1
  redis.call('ZADD', k .. 'ring', s.ring, lane)
end

local function toLane(id, q, fn, grp, front)
  local k = K(q)
  local lane = laneOf(fn, grp)
  local lk = k .. 'l:' .. lane
  if front then
    redis.call('LPUSH', lk, id)
    if grp then redis.call('SREM', k .. 'busy', lane) end
  else
    redis.call('RPUSH', lk, id)
  end
  redis.call('SADD', k .. 'lanes', lane)
  st(q).waiting = st(q).waiting + 1
  redis.call('HSET', J(id), 'st', 'w')
  if not (grp and redis.call('SISMEMBER', k .. 'busy', lane) == 1) then ringAdd(q, lane) end
end

local function release(q, fn, grp)
  if not grp then return end
  local k = K(q)
  local lane = laneOf(fn, grp)
  redis.call('SREM', k .. 'busy', lane)
  if redis.call('LLEN', k .. 'l:' .. lane) > 0 then ringAdd(q, lane) end
end

local function toDelayed(id, q, runAt, retry)
  local s = st(q)
  s.seq = s.seq + 1
  local member = string.format('%016d', s.seq) .. '|' .. id
  redis.call('ZADD', K(q) .. 'd', runAt, member)
  redis.call('HSET', J(id), 'st', 'd', 'run', runAt, 'dm', member, 'retry', retry and '1' or '0')
end

local CLAIMED = {'q', 'fn', 'data', 'att', 'fails', 'grp', 'enq', 'tp', 'meta', 'topic', 'bind'}
local function claimedOf(id)
  local v = redis.call('HMGET', J(id), unpack(CLAIMED))
  return {id, v[1], v[2], v[3], tonumber(v[4]), tonumber(v[5]), v[6], tonumber(v[7]), v[8], v[9], v[10], v[11]}
end

-- e: {id, q, fn, data, bytes, grp, runAt, tp, meta, topic, bind}
local function insert(e, now)
  local id, q = e[1], e[2]
  local f = {'q', q, 'fn', e[3], 'data', e[4], 'bytes', e[5], 'att', 0, 'fails', 0, 'enq', now}
  local opt = {grp = val(e[6]), tp = val(e[8]), meta = val(e[9]), topic = val(e[10]), bind = val(e[11])}
  for _, name in ipairs({'grp', 'tp', 'meta', 'topic', 'bind'}) do
    if opt[name] then f[#f + 1] = name; f[#f + 1] = opt[name] end
  end
  redis.call('HSET', J(id), unpack(f))
  local s = st(q)
  s.jobs = s.jobs + 1
  s.bytes = s.bytes + e[5]
  if e[7] > now then toDelayed(id, q, e[7], false) else toLane(id, q, e[3], opt.grp, false) end
end

local function enqueue(e, limits, now)
  local q = e[2]
  local lim = limits[q]
  if not lim then return {'enqueue_error', q} end
  if redis.call('EXISTS', J(e[1])) == 1 then return false end
  local s = st(q)
  if s.jobs + 1 > lim.maxJobs or s.bytes + e[5] > lim.maxBytes then return {'queue_full', q, s.jobs, s.bytes} end
  insert(e, now)
  return false
end

-- p: {topic, id, data, bytes, tp, groups, delays, liveSince}
local function publish(p, limits, now)
  local topic, bytes = p[1], p[4]
  local tk = P .. ':t:' .. topic
  local all = redis.call('HGETALL', tk)
  local subs = {}
  for i = 1, #all, 2 do
    local field = all[i]
    local v = cjson.decode(all[i + 1])
    if v.seen_at < p[8] then
      redis.call('HDEL', tk, field)
    else
      local sep = string.find(field, '\0', 1, true)
      local q = string.sub(field, sep + 1)
      if limits[q] then subs[#subs + 1] = {key = field, fn = string.sub(field, 1, sep - 1), q = q, bind = v.binding} end
    end
  end
  table.sort(subs, function(a, b) return a.key < b.key end)
  local adding = {}
  for _, s in ipairs(subs) do adding[s.q] = (adding[s.q] or 0) + 1 end
  for q, n in pairs(adding) do
    local s, lim = st(q), limits[q]
    if s.jobs + n > lim.maxJobs or s.bytes + n * bytes > lim.maxBytes then
      return {'queue_full', q, s.jobs + n - 1, s.bytes + (n - 1) * bytes}
    end
  end
  local groups, delays = p[6], p[7]
  for k, s in ipairs(subs) do
    local delay = tonumber(delays[s.q]) or 0
    local runAt = 0
    if delay > 0 then runAt = now + delay end
    insert({p[2] .. '.' .. k, s.q, s.fn, p[3], bytes, val(groups[s.q]), runAt, val(p[5]), false, topic, s.bind}, now)
  end
  return #subs
end

local function runningJob(id, att)
  local v = redis.call('HMGET', J(id), 'st', 'att', 'q', 'fn', 'grp', 'bytes', 'fails', 'hist')
  if v[1] ~= 'r' or tonumber(v[2]) ~= att then return nil end
  return v
end

local function complete(c)
  local id = c[1]
  local v = runningJob(id, c[2])
  if not v then return end
  local q = v[3]
  local s = st(q)
  redis.call('ZREM', K(q) .. 'x', id)
  redis.call('DEL', J(id))
  s.completed = s.completed + 1
  s.jobs = s.jobs - 1
  s.bytes = s.bytes - tonumber(v[6])
  release(q, v[4], v[5])
end

local function pushHistory(h, rec)
  if not h or h == '' then h = rec else h = h .. '\n' .. rec end
  local n = 1
  for _ in string.gmatch(h, '\n') do n = n + 1 end
  while n > MAX_HISTORY do
    h = string.sub(h, string.find(h, '\n', 1, true) + 1)
    n = n - 1
  end
  return h
end

-- f: {id, attempt, outcome, runAt, record JSON or false}
local function fail(f, now)
  local id = f[1]
  local v = runningJob(id, f[2])
  if not v then return end
  local q, fn, grp = v[3], v[4], v[5]
  redis.call('ZREM', K(q) .. 'x', id)
  if f[3] == 'return' then
    redis.call('HSET', J(id), 'att', f[2] - 1)
    toLane(id, q, fn, grp, true)
    return
  end
  local s = st(q)
  s.failed = s.failed + 1
  redis.call('HSET', J(id), 'fails', (tonumber(v[7]) or 0) + 1)
  if f[5] then redis.call('HSET', J(id), 'hist', pushHistory(v[8], f[5])) end
  if f[3] == 'retry' then
    toDelayed(id, q, f[4], true)
  else
    redis.call('HSET', J(id), 'st', 'x', 'dead', now)
    redis.call('ZADD', K(q) .. 'z', now, id)
    release(q, fn, grp)
  end
end

local function promote(q, now)
  local k = K(q)
  local due = redis.call('ZRANGEBYSCORE', k .. 'd', '-inf', now, 'LIMIT', 0, PROMOTE_BATCH)
  for _, m in ipairs(due) do
    redis.call('ZREM', k .. 'd', m)
    local id = string.sub(m, 18)
    local v = redis.call('HMGET', J(id), 'fn', 'grp', 'retry')
    if v[1] then
      redis.call('HSET', J(id), 'retry', '0')
      toLane(id, q, v[1], v[2], v[3] == '1')
    end
  end
end

local function reclaim(q, now, out)
  local k = K(q)
  local ids = redis.call('ZRANGEBYSCORE', k .. 'x', '-inf', '(' .. now, 'LIMIT', 0, RECLAIM_BATCH)
  for _, id in ipairs(ids) do
    local lease = now + RECLAIM_HOLD_MS
    redis.call('ZADD', k .. 'x', lease, id)
    redis.call('HSET', J(id), 'lease', lease)
    out[#out + 1] = claimedOf(id)
  end
end

local function claim(q, want, lim, absent, now, out)
  local k = K(q)
  local s = st(q)
  local n = math.min(want, lim.concurrency - redis.call('ZCARD', k .. 'x'))
  if n <= 0 then return end
  local ring = redis.call('ZRANGE', k .. 'ring', 0, RING_SCAN - 1)
  local lanes = {}
  for _, lane in ipairs(ring) do
    if not absent[fnOfLane(lane)] then lanes[#lanes + 1] = {lane = lane, open = true, visited = false} end
  end
  local progressed = true
  while n > 0 and progressed do
    progressed = false
    for _, l in ipairs(lanes) do
      if n == 0 then break end
      if l.open then
        l.visited = true
        local lk = k .. 'l:' .. l.lane
        local id = redis.call('LPOP', lk)
        if not id then
          l.open = false
        else
          local v = redis.call('HMGET', J(id), unpack(CLAIMED))
          local att = tonumber(v[4]) + 1
          local lease = now + lim.leaseMs
          redis.call('HSET', J(id), 'st', 'r', 'att', att, 'lease', lease)
          redis.call('ZADD', k .. 'x', lease, id)
          s.waiting = s.waiting - 1
          n = n - 1
          progressed = true
          out[#out + 1] = {id, v[1], v[2], v[3], att, tonumber(v[5]), v[6], tonumber(v[7]), v[8], v[9], v[10], v[11]}
          local left = redis.call('LLEN', lk)
          if left == 0 then redis.call('SREM', k .. 'lanes', l.lane) end
          if v[6] then
            redis.call('SADD', k .. 'busy', l.lane)
            l.open = false
          elseif left == 0 then
            l.open = false
          end
        end
      end
    end
  end
  for _, l in ipairs(lanes) do
    if l.visited then
      redis.call('ZREM', k .. 'ring', l.lane)
      if l.open then ringAdd(q, l.lane) end
    end
  end
end

local function step(x)
  local now = x.now
  local out = {enqueued = {}, published = {}, claimed = {}, expired = {}, due = false}
  for _, c in ipairs(x.complete) do complete(c) end
  for _, f in ipairs(x.fail) do fail(f, now) end
  if x.maintain then
    for q, _ in pairs(x.limits) do
      promote(q, now)
      reclaim(q, now, out.expired)
    end
  end
  for i, e in ipairs(x.enqueue) do out.enqueued[i] = enqueue(e, x.limits, now) end
  for i, p in ipairs(x.publish) do out.published[i] = publish(p, x.limits, now) end
  local absent = {}
  for _, fn in ipairs(x.absent) do absent[fn] = true end
  for q, n in pairs(x.claim) do
    local lim = x.limits[q]
    if lim and n > 0 then claim(q, n, lim, absent, now, out.claimed) end
  end
  for q, _ in pairs(x.limits) do
    local first = redis.call('ZRANGE', K(q) .. 'd', 0, 0, 'WITHSCORES')
    if first[2] then
      local at = tonumber(first[2])
      if not out.due or at < out.due then out.due = at end
    end
  end
  flush()
  return cjson.encode(out)
end

local function counts(names)
  local set = {}
  local out = {}
  for _, q in ipairs(names) do set[q] = true end
  for _, q in ipairs(redis.call('SMEMBERS', P .. ':queues')) do set[q] = true end
  for q, _ in pairs(set) do
    local k = K(q)
    local v = redis.call('HMGET', k .. 's', 'waiting', 'completed', 'failed', 'jobs', 'bytes')
    out[#out + 1] = {q, tonumber(v[1]) or 0, redis.call('ZCARD', k .. 'd'), redis.call('ZCARD', k .. 'x'), redis.call('ZCARD', k .. 'z'),
      tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0, tonumber(v[5]) or 0}
  end
  return cjson.encode(out)
end

local function jobOf(id)
  local h = redis.call('HGETALL', J(id))
  if #h == 0 then return false end
  h[#h + 1] = 'id'
  h[#h + 1] = id
  return h
end

local function list(x)
  local k = K(x.queue)
  local ids, total = {}, 0
  if x.state == 'waiting' then
    total = tonumber(redis.call('HGET', k .. 's', 'waiting')) or 0
    local lanes = redis.call('SMEMBERS', k .. 'lanes')
    table.sort(lanes)
    local skip, left = x.offset, x.limit
    for _, lane in ipairs(lanes) do
      if left <= 0 then break end
      local len = redis.call('LLEN', k .. 'l:' .. lane)
      if skip >= len then
        skip = skip - len
      else
        for _, id in ipairs(redis.call('LRANGE', k .. 'l:' .. lane, skip, skip + left - 1)) do ids[#ids + 1] = id end
        left = x.limit - #ids
        skip = 0
      end
    end
  else
    local z = ({delayed = 'd', running = 'x', dlq = 'z'})[x.state]
    total = redis.call('ZCARD', k .. z)
    for _, m in ipairs(redis.call('ZRANGE', k .. z, x.offset, x.offset + x.limit - 1)) do
      if z == 'd' then m = string.sub(m, 18) end
      ids[#ids + 1] = m
    end
  end
  local jobs = {}
  for _, id in ipairs(ids) do
    local j = jobOf(id)
    if j then jobs[#jobs + 1] = j end
  end
  return cjson.encode({total = total, jobs = jobs})
end

local function deadIds(q, ids)
  local k = K(q)
  if ids == false or ids == cjson.null then return redis.call('ZRANGE', k .. 'z', 0, -1) end
  local out, seen = {}, {}
  for _, id in ipairs(ids) do
    if not seen[id] and redis.call('ZSCORE', k .. 'z', id) then out[#out + 1] = id end
    seen[id] = true
  end
  return out
end

local function redrive(x)
  local n = 0
  for _, id in ipairs(deadIds(x.queue, x.ids)) do
    redis.call('ZREM', K(x.queue) .. 'z', id)
    local v = redis.call('HMGET', J(id), 'fn', 'grp')
    redis.call('HSET', J(id), 'fails', 0)
    toLane(id, x.queue, v[1], v[2], false)
    n = n + 1
  end
  flush()
  return n
end

local function deleteDead(x)
  local n = 0
  local s = st(x.queue)
  for _, id in ipairs(deadIds(x.queue, x.ids)) do
    redis.call('ZREM', K(x.queue) .. 'z', id)
    s.jobs = s.jobs - 1
    s.bytes = s.bytes - (tonumber(redis.call('HGET', J(id), 'bytes')) or 0)
    redis.call('DEL', J(id))
    n = n + 1
  end
  flush()
  return n
end

-- At most PURGE_BATCH jobs per run (a long script would hold Redis): {purged, more}.
local function purge(x)
  local q = x.queue
  local k = K(q)
  local s = st(q)
  local n = 0
  local function drop(id)
    s.jobs = s.jobs - 1
    s.bytes = s.bytes - (tonumber(redis.call('HGET', J(id), 'bytes')) or 0)
    redis.call('DEL', J(id))
    n = n + 1
  end
  for _, lane in ipairs(redis.call('SMEMBERS', k .. 'lanes')) do
    if n >= PURGE_BATCH then break end
    local lk = k .. 'l:' .. lane
    local ids = redis.call('LRANGE', lk, 0, PURGE_BATCH - n - 1)
    redis.call('LTRIM', lk, #ids, -1)
    for _, id in ipairs(ids) do drop(id) end
    s.waiting = s.waiting - #ids
    if redis.call('LLEN', lk) == 0 then
      redis.call('SREM', k .. 'lanes', lane)
      redis.call('ZREM', k .. 'ring', lane)
    end
  end
  if n < PURGE_BATCH then
    for _, m in ipairs(redis.call('ZRANGE', k .. 'd', 0, PURGE_BATCH - n - 1)) do
      redis.call('ZREM', k .. 'd', m)
      local id = string.sub(m, 18)
      local v = redis.call('HMGET', J(id), 'fn', 'grp', 'retry')
      if v[3] == '1' and v[2] then redis.call('SREM', k .. 'busy', laneOf(v[1], v[2])) end
      drop(id)
    end
  end
  flush()
  local more = redis.call('SCARD', k .. 'lanes') > 0 or redis.call('ZCARD', k .. 'd') > 0
  return cjson.encode({n, more})
end

local function subscribe(x)
  for _, sub in ipairs(x.subs) do
    local tk = P .. ':t:' .. sub.topic
    local field = sub.function_id .. '\0' .. sub.queue
    local old = redis.call('HGET', tk, field)
    local created = x.now
    if old then created = cjson.decode(old).created_at end
    redis.call('HSET', tk, field, cjson.encode({binding = sub.binding, created_at = created, seen_at = x.now}))
    redis.call('SADD', P .. ':topics', sub.topic)
  end
  return 0
end

local function subscriptions()
  local out = {}
  for _, topic in ipairs(redis.call('SMEMBERS', P .. ':topics')) do
    local all = redis.call('HGETALL', P .. ':t:' .. topic)
    if #all == 0 then redis.call('SREM', P .. ':topics', topic) end
    for i = 1, #all, 2 do out[#out + 1] = {topic, all[i], all[i + 1]} end
  end
  return cjson.encode(out)
end

if op == 'step' then return step(input)
elseif op == 'counts' then return counts(input)
elseif op == 'list' then return list(input)
elseif op == 'redrive' then return redrive(input)
elseif op == 'delete' then return deleteDead(input)
elseif op == 'purge' then return purge(input)
elseif op == 'subscribe' then return subscribe(input)
elseif op == 'subscriptions' then return subscriptions()
end
return redis.error_reply('unknown operation ' .. tostring(op))
`;
