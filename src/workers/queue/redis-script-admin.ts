/**
 * The second half of the Redis queue store's Lua script (redis-scripts.ts puts the halves together):
 * counts and listings, redrive, delete, purge, subscriptions, and the dispatch on the operation.
 */
export const ADMIN_LUA = String.raw`local function counts(names)
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
