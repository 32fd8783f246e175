/**
 * The first half of the Redis queue store's Lua script (redis-scripts.ts puts the halves together):
 * the layout's helpers, the moves every change is made of, and `step`.
 */
export const STEP_LUA = String.raw`
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

-- What claimable() read of a queue during this step's enqueues (ring not empty, running jobs), kept
-- up to date by the moves of those enqueues instead of read again for each job (two fewer commands
-- per job). Only the enqueue phase uses it; everything that shrinks the ring or the running set
-- runs before it (completions, failures, maintenance) or after it (claims).
local fresh = {}

local function ringAdd(q, lane)
  local k = K(q)
  if redis.call('ZSCORE', k .. 'ring', lane) then return end
  local s = st(q)
  s.ring = s.ring + 1
  redis.call('ZADD', k .. 'ring', s.ring, lane)
  if fresh[q] then fresh[q].ring = true end
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

-- e: {id, q, fn, data, bytes, grp, runAt, tp, meta, topic, bind}. lease: claim it at once, running until then.
local function insert(e, now, lease)
  local id, q = e[1], e[2]
  local f = {'q', q, 'fn', e[3], 'data', e[4], 'bytes', e[5], 'att', lease and 1 or 0, 'fails', 0, 'enq', now}
  local grp = val(e[6])
  if grp then f[#f + 1] = 'grp'; f[#f + 1] = grp end
  if val(e[8]) then f[#f + 1] = 'tp'; f[#f + 1] = e[8] end
  if val(e[9]) then f[#f + 1] = 'meta'; f[#f + 1] = e[9] end
  if val(e[10]) then f[#f + 1] = 'topic'; f[#f + 1] = e[10] end
  if val(e[11]) then f[#f + 1] = 'bind'; f[#f + 1] = e[11] end
  if lease then
    f[#f + 1] = 'st'; f[#f + 1] = 'r'; f[#f + 1] = 'lease'; f[#f + 1] = lease
  end
  redis.call('HSET', J(id), unpack(f))
  local s = st(q)
  s.jobs = s.jobs + 1
  s.bytes = s.bytes + e[5]
  if lease then
    redis.call('ZADD', K(q) .. 'x', lease, id)
    if grp then redis.call('SADD', K(q) .. 'busy', laneOf(e[3], grp)) end
  elseif e[7] > now then toDelayed(id, q, e[7], false) else toLane(id, q, e[3], grp, false) end
end

-- A fresh job may skip its lane and be claimed at once when it overtakes nothing: no lane of the
-- queue is waiting, its own lane is empty and free, and there is room under the concurrency.
local function claimable(e, lim, claim, absent, now)
  local q = e[2]
  local want = claim[q]
  if not want or want <= 0 or e[7] > now or absent[e[3]] then return false end
  local k = K(q)
  local f = fresh[q]
  if not f then
    f = {ring = redis.call('ZCARD', k .. 'ring') > 0, running = redis.call('ZCARD', k .. 'x')}
    fresh[q] = f
  end
  if f.ring then return false end
  local grp = val(e[6])
  if grp then
    -- A grouped lane may hold jobs while out of the ring (its group busy).
    local lane = laneOf(e[3], grp)
    if redis.call('EXISTS', k .. 'l:' .. lane) == 1 then return false end
    if redis.call('SISMEMBER', k .. 'busy', lane) == 1 then return false end
  end
  -- An ungrouped lane holding jobs is always in the ring (toLane adds it, claim keeps it while it
  -- has jobs): with the ring empty, this job's lane is empty too.
  return f.running < lim.concurrency
end

local function enqueue(e, limits, claim, absent, now, out)
  local q = e[2]
  local lim = limits[q]
  if not lim then return {'enqueue_error', q} end
  if redis.call('EXISTS', J(e[1])) == 1 then return false end
  local s = st(q)
  if s.jobs + 1 > lim.maxJobs or s.bytes + e[5] > lim.maxBytes then return {'queue_full', q, s.jobs, s.bytes} end
  if claimable(e, lim, claim, absent, now) then
    local lease = now + lim.leaseMs
    insert(e, now, lease)
    fresh[q].running = fresh[q].running + 1
    claim[q] = claim[q] - 1
    out[#out + 1] = {e[1], q, e[3], e[4], 1, 0, e[6], now, e[8], e[9], e[10], e[11]}
  else
    insert(e, now, nil)
  end
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
    insert({p[2] .. '.' .. k, s.q, s.fn, p[3], bytes, val(groups[s.q]), runAt, val(p[5]), false, topic, s.bind}, now, nil)
  end
  -- Copies per queue; cjson writes it as an object ({} when there are none).
  return adding
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
  local absent = {}
  for _, fn in ipairs(x.absent) do absent[fn] = true end
  for i, e in ipairs(x.enqueue) do out.enqueued[i] = enqueue(e, x.limits, x.claim, absent, now, out.claimed) end
  for i, p in ipairs(x.publish) do out.published[i] = publish(p, x.limits, now) end
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

`;
