/**
 * Lua run by Redis for every write of the Redis store, so each write is atomic on the server (a
 * script runs alone) and concurrent callers on any number of engines never lose a write.
 *
 * One script, WRITE_SCRIPT, carries a batch of writes (set, delete, update): redis-store.ts sends
 * every write issued in one event-loop turn as one EVALSHA, so a burst of N concurrent writes
 * costs one command, one reply and one script start instead of N (the client-side cost of a
 * command was most of svc-state's CPU per call: bench/RESULTS.md, 2026-11-22 session 2). The
 * writes apply in order, each on its own: one that fails (a type error) writes nothing and the
 * others still apply, exactly as if each had been its own script. Inside a run, each field is
 * read once and each changed field written once, at the end (a burst of increments of one hot
 * key is one HGET and one HSET); the set of scopes is brought up to date for every hash touched.
 *
 * Layout: KEYS[1] = the set of scopes, KEYS[2..] = the scope hashes (field = key, value = JSON
 * text) the batch touches.
 *
 * Updates implement the op rules of ops.ts. The script parses JSON losslessly itself (cjson would
 * turn [] into {}, lose key order and print numbers with 14 digits): strings and numbers keep their
 * original text, and only a number changed by increment/decrement is printed anew, with 17
 * significant digits so that it parses back to the same double in JavaScript.
 */

/**
 * ARGV[1] = max_value_bytes, ARGV[2] = the length of "<prefix>:scope:" (a hash's scope is the
 * rest of its name), then per write: kind, hash (index into KEYS), field, and
 *   kind "s" (set):    the value's JSON text
 *   kind "d" (delete): nothing more
 *   kind "u" (update, best-effort) or "a" (update, atomic): the op count n, then per op three
 *                      args: type ("appendf" is an append on a field name), path (JSON array;
 *                      "[]" is the root), operand (the value's JSON text, or "by" as a number's
 *                      text, or "" for remove)
 * → three elements per write, in order: old and new JSON text ("" when absent; a set answers "" as
 *   new, the client has it) and the ops that failed in a best-effort update (a JSON array of
 *   "<code> <op index> <detail>", or ""); or null, the error ("<code> <op index> <detail>" for the
 *   errors ops.ts defines) and "".
 */
export const WRITE_SCRIPT = `
local find, sub, byte = string.find, string.sub, string.byte

local function fail(code, i, detail) error({err = code .. ' ' .. i .. ' ' .. detail}) end

-- Lossless JSON: nodes are {t='o', keys={...}, vals={}} | {t='a', items={...}} | {t='n', raw, num}
-- | {t='s', raw} | {t='l', raw} (true, false) | {t='z'} (null)
local parse
local function ws(s, i) local _, e = find(s, '^[ \\t\\r\\n]*', i) return e + 1 end
local function pstring(s, i)
  local j = i + 1
  while true do
    local k = find(s, '["\\\\]', j)
    if byte(s, k) == 34 then return sub(s, i, k), k + 1 end
    j = k + 2
  end
end
local function strval(raw)
  if find(raw, '\\\\', 1, true) then return cjson.decode(raw) end
  return sub(raw, 2, -2)
end
parse = function(s, i)
  i = ws(s, i)
  local c = byte(s, i)
  if c == 123 then
    local node = {t = 'o', keys = {}, vals = {}}
    i = ws(s, i + 1)
    if byte(s, i) == 125 then return node, i + 1 end
    while true do
      local raw; raw, i = pstring(s, ws(s, i))
      i = ws(s, i) + 1 -- ':'
      local k = strval(raw)
      local v; v, i = parse(s, i)
      if node.vals[k] == nil then node.keys[#node.keys + 1] = k end
      node.vals[k] = v
      i = ws(s, i)
      if byte(s, i) == 125 then return node, i + 1 end
      i = i + 1 -- ','
    end
  elseif c == 91 then
    local node = {t = 'a', items = {}}
    i = ws(s, i + 1)
    if byte(s, i) == 93 then return node, i + 1 end
    while true do
      local v; v, i = parse(s, i)
      node.items[#node.items + 1] = v
      i = ws(s, i)
      if byte(s, i) == 93 then return node, i + 1 end
      i = i + 1
    end
  elseif c == 34 then
    local raw; raw, i = pstring(s, i)
    return {t = 's', raw = raw}, i
  elseif c == 116 then return {t = 'l', raw = 'true'}, i + 4
  elseif c == 102 then return {t = 'l', raw = 'false'}, i + 5
  elseif c == 110 then return {t = 'z'}, i + 4
  else
    local _, e = find(s, '^[-+0-9.eE]+', i)
    local raw = sub(s, i, e)
    return {t = 'n', raw = raw, num = tonumber(raw)}, e + 1
  end
end

local encode
encode = function(n, out)
  local t = n.t
  if t == 'o' then
    out[#out + 1] = '{'
    for idx, k in ipairs(n.keys) do
      if idx > 1 then out[#out + 1] = ',' end
      out[#out + 1] = cjson.encode(k)
      out[#out + 1] = ':'
      encode(n.vals[k], out)
    end
    out[#out + 1] = '}'
  elseif t == 'a' then
    out[#out + 1] = '['
    for idx, v in ipairs(n.items) do
      if idx > 1 then out[#out + 1] = ',' end
      encode(v, out)
    end
    out[#out + 1] = ']'
  elseif t == 'z' then out[#out + 1] = 'null'
  else out[#out + 1] = n.raw end
end

local function describe(n)
  if n == nil then return 'nothing' end
  local t = n.t
  if t == 'o' then return 'an object' elseif t == 'a' then return 'an array'
  elseif t == 'z' then return 'null' elseif t == 'n' then return 'number ' .. n.raw
  elseif t == 'l' then return 'boolean ' .. n.raw
  else
    local s = strval(n.raw)
    if #s > 40 then s = sub(s, 1, 40) .. '…' end
    return 'the string ' .. cjson.encode(s)
  end
end

local function absent(n) return n == nil or n.t == 'z' end

-- The JSON text of a number, or nil when it is not finite.
local function num_text(x)
  if x ~= x or x == math.huge or x == -math.huge then return nil end
  if x == math.floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
local function num(x)
  local raw = num_text(x)
  if raw == nil then return nil end
  return {t = 'n', raw = raw, num = x}
end

-- Resolve a segment inside container c: returns the lookup key (object: string; array: 1-based).
local function seg_key(c, seg, i)
  if c.t == 'o' then
    if type(seg) == 'number' then return string.format('%d', seg) end
    return seg
  end
  local n
  if type(seg) == 'number' then n = seg
  elseif find(seg, '^0$') or find(seg, '^[1-9][0-9]*$') then n = tonumber(seg) end
  if n == nil then fail('type_error', i, 'segment ' .. cjson.encode(seg) .. ' indexes an array and must be an integer') end
  if n > #c.items then fail('invalid_path', i, 'index ' .. n .. ' is past the end of an array of length ' .. #c.items) end
  return n + 1
end
local function get(c, k) if c.t == 'o' then return c.vals[k] end return c.items[k] end
local function put(c, k, v)
  if c.t == 'o' then
    if c.vals[k] == nil then c.keys[#c.keys + 1] = k end
    c.vals[k] = v
  else c.items[k] = v end
end
local function remove(c, k)
  if c.t == 'o' then
    if c.vals[k] == nil then return end
    c.vals[k] = nil
    for idx, name in ipairs(c.keys) do if name == k then table.remove(c.keys, idx) break end end
  elseif k <= #c.items then table.remove(c.items, k) end
end
local function container(n, path, d, i)
  if n.t == 'o' or n.t == 'a' then return n end
  local at = 'the value'
  if d > 0 then
    local parts = {}
    for x = 1, d do parts[x] = path[x] end
    at = cjson.encode(parts)
  end
  fail('type_error', i, 'cannot step into ' .. at .. ': it is ' .. describe(n) .. ', not an object or array')
end

local function leaf(v, op, i)
  local ty = op.type
  if ty == 'set' then return op.value
  elseif ty == 'remove' then return nil
  elseif ty == 'merge' then
    if absent(v) then v = {t = 'o', keys = {}, vals = {}}
    elseif v.t ~= 'o' then fail('type_error', i, 'merge needs an object, found ' .. describe(v)) end
    for _, k in ipairs(op.value.keys) do put(v, k, op.value.vals[k]) end
    return v
  elseif ty == 'increment' or ty == 'decrement' then
    local cur = 0
    if not absent(v) then
      if v.t ~= 'n' then fail('type_error', i, 'cannot ' .. ty .. ' ' .. describe(v) .. '; the value there is not a number') end
      cur = v.num
    end
    local r
    if ty == 'increment' then r = cur + op.by else r = cur - op.by end
    local node = num(r)
    if node == nil then fail('type_error', i, 'result ' .. tostring(r) .. ' is not a finite number') end
    return node
  else -- append, or appendf (on a field name: a string appended to nothing is that string)
    if absent(v) then
      if ty == 'appendf' and op.value.t == 's' then return op.value end
      return {t = 'a', items = {op.value}}
    end
    if v.t == 'a' then v.items[#v.items + 1] = op.value return v end
    if v.t == 's' and op.value.t == 's' then
      return {t = 's', raw = sub(v.raw, 1, -2) .. sub(op.value.raw, 2)}
    end
    fail('type_error', i, 'cannot append ' .. describe(op.value) .. ' to ' .. describe(v) .. '; append needs an array (or two strings)')
  end
end

local function apply(root, op, i)
  local path = op.path
  if #path == 0 then return leaf(root, op, i) end
  if absent(root) then
    if op.type == 'remove' then return root end
    root = {t = 'o', keys = {}, vals = {}}
  end
  local node = root
  for d = 1, #path - 1 do
    local c = container(node, path, d - 1, i)
    local k = seg_key(c, path[d], i)
    local child = get(c, k)
    if absent(child) then
      if op.type == 'remove' then return root end
      child = {t = 'o', keys = {}, vals = {}}
      put(c, k, child)
    end
    node = child
  end
  local parent = container(node, path, #path - 1, i)
  local k = seg_key(parent, path[#path], i)
  if op.type == 'remove' then remove(parent, k) return root end
  put(parent, k, leaf(get(parent, k), op, i))
  return root
end

local max_bytes = tonumber(ARGV[1])
local hash_prefix = tonumber(ARGV[2]) -- length of "<prefix>:scope:", to recover a hash's scope
local scopes = KEYS[1]
local ROOT = {}

local function scope_of(h) return sub(h, hash_prefix + 1) end

-- The batch reads each field once and writes each changed field once, at the end (a burst of
-- increments of one hot key is one HGET and one HSET). values[h][field] = JSON text, or false
-- when absent.
local values, dirty, dirty_hashes = {}, {}, {}
local function current(h, field)
  local t = values[h]
  if not t then t = {} values[h] = t end
  local v = t[field]
  if v == nil then
    v = redis.call('HGET', h, field)
    t[field] = v
  end
  return v
end
local function assign(h, field, v)
  values[h][field] = v
  local d = dirty[h]
  if not d then d = {} dirty[h] = d dirty_hashes[#dirty_hashes + 1] = h end
  d[field] = true
end

local function write_set(h, field, json)
  local old = current(h, field)
  assign(h, field, json)
  return old or '', '' -- the client has the new text already
end

local function write_delete(h, field)
  local old = current(h, field)
  if not old then return '', '' end
  assign(h, field, false)
  return old, ''
end

local function store_json(h, field, old, json)
  if #json > max_bytes then fail('value_too_large', -1, tostring(#json)) end
  if json ~= old then assign(h, field, json) end
  return old or '', json
end

-- ARGV[a] = op count, then the ops. Every failure is raised before assign(). Best-effort (not
-- atomic): an op that fails is skipped (it changed nothing: ops.ts) and listed in the third answer.
local function write_update(h, field, a, atomic)
  local nops = tonumber(ARGV[a])
  local old = current(h, field)
  -- Fast path, the same rules without building a tree: one increment or decrement of a number
  -- (or of nothing, or null) at the root. Anything else takes the general path below.
  if nops == 1 and ARGV[a + 2] == '[]' and (ARGV[a + 1] == 'increment' or ARGV[a + 1] == 'decrement') then
    local cur
    if not old or old == 'null' then cur = 0
    else
      local c = byte(old, 1)
      if c == 45 or (c >= 48 and c <= 57) then cur = tonumber(old) end
    end
    if cur then
      local by = tonumber(ARGV[a + 3])
      local r
      if ARGV[a + 1] == 'increment' then r = cur + by else r = cur - by end
      local json = num_text(r)
      if json == nil then
        local detail = 'result ' .. tostring(r) .. ' is not a finite number'
        if atomic then fail('type_error', 0, detail) end
        return old or '', old or '', cjson.encode({'type_error 0 ' .. detail})
      end
      local o, n = store_json(h, field, old, json)
      return o, n, ''
    end
  end
  local root = nil
  if old then root = parse(old, 1) end
  local errs = {}
  for n = 0, nops - 1 do
    local o = a + 1 + n * 3
    local ty, rawpath, operand = ARGV[o], ARGV[o + 1], ARGV[o + 2]
    local op = {type = ty}
    if rawpath == '[]' then op.path = ROOT else op.path = cjson.decode(rawpath) end
    if ty == 'increment' or ty == 'decrement' then op.by = tonumber(operand)
    elseif ty ~= 'remove' then op.value = parse(operand, 1) end
    if atomic then root = apply(root, op, n)
    else
      local ok, r = pcall(apply, root, op, n)
      -- Redis hands pcall a raised {err = text} as the text itself (7.x) or as the table.
      local text = r
      if not ok and type(r) == 'table' then text = r.err end
      if ok then root = r
      elseif type(text) == 'string' and (find(text, '^type_error ') or find(text, '^invalid_path ')) then errs[#errs + 1] = text
      else error(r) end
    end
  end
  local errtext = ''
  if #errs > 0 then errtext = cjson.encode(errs) end
  if root == nil then
    if old then assign(h, field, false) end
    return old or '', '', errtext
  end
  local out = {}
  encode(root, out)
  local o, n = store_json(h, field, old, table.concat(out))
  return o, n, errtext
end

local replies, nr = {}, 0
local a = 3
while a <= #ARGV do
  local kind, h, field = ARGV[a], KEYS[tonumber(ARGV[a + 1])], ARGV[a + 2]
  local ok, old, new, errs
  if kind == 's' then
    ok, old, new = pcall(write_set, h, field, ARGV[a + 3])
    a = a + 4
  elseif kind == 'd' then
    ok, old, new = pcall(write_delete, h, field)
    a = a + 3
  else
    ok, old, new, errs = pcall(write_update, h, field, a + 3, kind == 'a')
    a = a + 4 + 3 * tonumber(ARGV[a + 3])
  end
  if ok then replies[nr + 1] = old replies[nr + 2] = new replies[nr + 3] = errs or ''
  else
    replies[nr + 1] = false -- a null reply: this write failed, the next element says why
    if type(old) == 'table' then replies[nr + 2] = tostring(old.err) else replies[nr + 2] = tostring(old) end
    replies[nr + 3] = ''
  end
  nr = nr + 3
end

-- Write what changed, and keep the set of scopes to the non-empty hashes.
for _, h in ipairs(dirty_hashes) do
  local sets, dels = {}, {}
  for field in pairs(dirty[h]) do
    local v = values[h][field]
    if v then sets[#sets + 1] = field sets[#sets + 1] = v else dels[#dels + 1] = field end
  end
  if #sets > 0 then redis.call('HSET', h, unpack(sets)) end
  if #dels > 0 then redis.call('HDEL', h, unpack(dels)) end
  if redis.call('EXISTS', h) == 1 then redis.call('SADD', scopes, scope_of(h))
  else redis.call('SREM', scopes, scope_of(h)) end
end
return replies
`;
