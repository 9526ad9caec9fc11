-- Sliding-window rate limiting for two scopes (workspace, key) and two dimensions (requests,
-- tokens), checked and charged in one round trip. The in-memory limiter (memory-limiter.ts)
-- implements the same steps; limiter-contract.ts holds both to the same tests.
--
-- KEYS[1]: the workspace's hash, KEYS[2]: the key's hash. Both carry the workspace id as hash tag,
-- so they live in one Redis Cluster slot.
-- Hash fields: o = oldest live bucket, r / t = request and token totals of the live buckets,
-- r<i> / t<i> = the counts of bucket i (i = floor(now / width)).
--
-- admit:  ARGV = 'admit', now_ms ('' = Redis's clock), width_ms, buckets,
--                workspace rpm, workspace tpm, key rpm, key tpm, tokens to reserve,
--                lease requests, lease tokens, lease share (0 0 1 = no lease: a block, this request
--                included, charged at once when every scope's room left in both dimensions is at
--                least share times it; otherwise the request alone is checked),
--                then any settlements of the same workspace (see settle_all)
--         returns {failed check (0 = admitted; 1..4 = ws requests, ws tokens, key requests,
--                  key tokens), retry_ms (-1 = never fits), now_ms, bucket,
--                  ws requests, ws tokens, key requests, key tokens, 1 if the lease was charged}
-- settle: ARGV = 'settle', now_ms, width_ms, buckets, then settlements (see settle_all)
--         returns {}
-- KEYS[3..]: the hashes of other keys of the workspace that settlements name.

local mode = ARGV[1]
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local width = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local cur = math.floor(now / width)
local oldest = cur - n + 1
local ttl = (n + 1) * width

-- The hashes this call touches, each read once (dropping the buckets that left the window) and
-- written once at the end, so an admission costs one HMGET, one HSET and at most one PEXPIRE per
-- scope, however many settlements ride along. A state: o = oldest live bucket (nil: no hash),
-- r / t = live totals, rc / tc = the current bucket's counts, older = counts of older buckets as
-- read or changed (by field name), set = fields to write, expire = whether the expiry must be renewed.
local states, touched = {}, {}

local function load(key)
  local s = states[key]
  if s then return s end
  local v = redis.call('HMGET', key, 'o', 'r', 't', 'r' .. cur, 't' .. cur)
  s = { key = key, o = tonumber(v[1]), r = tonumber(v[2]) or 0, t = tonumber(v[3]) or 0,
        rc = tonumber(v[4]) or 0, tc = tonumber(v[5]) or 0, older = {}, set = {}, expire = false }
  if s.o and s.o < oldest then
    if s.o + n - 1 < oldest then
      redis.call('DEL', key)
      s.o, s.r, s.t, s.rc, s.tc = nil, 0, 0, 0, 0
    else
      for i = s.o, oldest - 1 do
        local b = redis.call('HMGET', key, 'r' .. i, 't' .. i)
        s.r = s.r - (tonumber(b[1]) or 0)
        s.t = s.t - (tonumber(b[2]) or 0)
        redis.call('HDEL', key, 'r' .. i, 't' .. i)
      end
      s.o = oldest
      s.set.o, s.set.r, s.set.t = s.o, s.r, s.t
    end
  end
  -- Every first charge of a bucket renews the expiry to outlive that bucket, so a later charge of
  -- the same bucket needs none.
  s.cur_empty = s.rc == 0 and s.tc == 0
  states[key] = s
  touched[#touched + 1] = s
  return s
end

-- The count of `field` ('r' or 't') in bucket `b`, this call's changes included.
local function count(s, field, b)
  if b == cur then return field == 'r' and s.rc or s.tc end
  local name = field .. b
  if s.older[name] then return s.older[name] end
  local v = tonumber(redis.call('HGET', s.key, name)) or 0
  s.older[name] = v
  return v
end

-- Milliseconds until enough of the window's oldest usage has left it for `cost` to fit.
local function wait_for(s, field, used, cost, limit)
  if cost > limit then return -1 end
  local need = used + cost - limit
  local freed = 0
  for i = oldest, cur do
    freed = freed + count(s, field, i)
    if freed >= need then return (i + n) * width - now end
  end
  return n * width
end

local function charge(s, field, amount, b)
  local have = count(s, field, b) + amount
  if not s.o or b < s.o then
    s.o = b
    s.set.o = b
  end
  s[field] = s[field] + amount
  s.set[field] = s[field]
  s.set[field .. b] = have
  if b == cur then
    if field == 'r' then s.rc = have else s.tc = have end
    if s.cur_empty then s.expire = true end
  else
    s.older[field .. b] = have
  end
end

-- `delta` more (or fewer) of `field` in `bucket`, never below zero; once that bucket has left the
-- window, only an excess counts, from now.
local function adjust(s, field, bucket, delta)
  if delta == 0 then return end
  if bucket >= oldest and s.o then
    local d = delta
    local have = count(s, field, bucket)
    if have + d < 0 then d = -have end
    if d ~= 0 then charge(s, field, d, bucket) end
  elseif delta > 0 then
    charge(s, field, delta, cur)
  end
end

-- Settlements travel as (index into KEYS of the key's hash, bucket, token delta, request delta)
-- from ARGV[first] on; each applies to the workspace (KEYS[1]) and to that key. A reservation
-- replaced by the real usage moves tokens only; a lease's unused part gives back both.
local function settle_all(first)
  for j = first, #ARGV, 4 do
    local bucket, tokens, requests = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
    for _, key in ipairs({ KEYS[1], KEYS[tonumber(ARGV[j])] }) do
      local s = load(key)
      adjust(s, 't', bucket, tokens)
      adjust(s, 'r', bucket, requests)
    end
  end
end

local function write_all()
  for _, s in ipairs(touched) do
    local fields = {}
    for f, v in pairs(s.set) do
      fields[#fields + 1] = f
      fields[#fields + 1] = v
    end
    if #fields > 0 then redis.call('HSET', s.key, unpack(fields)) end
    if s.expire then redis.call('PEXPIRE', s.key, ttl) end
  end
end

if mode == 'settle' then
  settle_all(5)
  write_all()
  return {}
end
-- Settlements waiting for this workspace ride along with its next admission: no extra round trip.
settle_all(13)

local tokens = tonumber(ARGV[9])
local lease_r, lease_t, share = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local ws, ks = load(KEYS[1]), load(KEYS[2])
local limits = { tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]) }
local function fits(r, t)
  return ws.r + r <= limits[1] and ws.t + t <= limits[2] and ks.r + r <= limits[3] and ks.t + t <= limits[4]
end
if lease_r > 1 and lease_t >= tokens and share >= 1 and fits(lease_r * share, lease_t * share) then
  for _, s in ipairs({ ws, ks }) do
    charge(s, 'r', lease_r, cur)
    charge(s, 't', lease_t, cur)
  end
  write_all()
  return { 0, 0, now, cur, ws.r, ws.t, ks.r, ks.t, 1 }
end
local checks = {
  { ws, 'r', ws.r, 1, limits[1] },
  { ws, 't', ws.t, tokens, limits[2] },
  { ks, 'r', ks.r, 1, limits[3] },
  { ks, 't', ks.t, tokens, limits[4] },
}
local failed, wait = 0, 0
for idx, c in ipairs(checks) do
  if c[3] + c[4] > c[5] then
    -- Report the check that takes longest to clear: the request fits only once all have.
    local w = wait_for(c[1], c[2], c[3], c[4], c[5])
    if failed == 0 or (wait ~= -1 and (w == -1 or w > wait)) then
      failed, wait = idx, w
    end
  end
end
if failed == 0 then
  for _, s in ipairs({ ws, ks }) do
    charge(s, 'r', 1, cur)
    charge(s, 't', tokens, cur)
  end
end
write_all()
return { failed, wait, now, cur, ws.r, ws.t, ks.r, ks.t, 0 }
