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
--                then any settlements of the same workspace (see settle_all)
--         returns {failed check (0 = admitted; 1..4 = ws requests, ws tokens, key requests,
--                  key tokens), retry_ms (-1 = never fits), now_ms, bucket,
--                  ws requests, ws tokens, key requests, key tokens}
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

-- Drops the buckets that left the window. Returns the live totals and the current bucket's counts
-- (read in the same HMGET, so admitting costs one read and one write per scope).
local function evict(key)
  local s = redis.call('HMGET', key, 'o', 'r', 't', 'r' .. cur, 't' .. cur)
  local o = tonumber(s[1])
  if not o then return 0, 0, 0, 0 end
  local r, t = tonumber(s[2]) or 0, tonumber(s[3]) or 0
  local rc, tc = tonumber(s[4]) or 0, tonumber(s[5]) or 0
  if o >= oldest then return r, t, rc, tc end
  if o + n - 1 < oldest then
    redis.call('DEL', key)
    return 0, 0, 0, 0
  end
  for i = o, oldest - 1 do
    local v = redis.call('HMGET', key, 'r' .. i, 't' .. i)
    r = r - (tonumber(v[1]) or 0)
    t = t - (tonumber(v[2]) or 0)
    redis.call('HDEL', key, 'r' .. i, 't' .. i)
  end
  redis.call('HSET', key, 'o', oldest, 'r', r, 't', t)
  return r, t, rc, tc
end

-- Milliseconds until enough of the window's oldest usage has left it for `cost` to fit.
local function wait_for(key, field, used, cost, limit)
  if cost > limit then return -1 end
  local need = used + cost - limit
  local freed = 0
  for i = oldest, cur do
    freed = freed + (tonumber(redis.call('HGET', key, field .. i)) or 0)
    if freed >= need then return (i + n) * width - now end
  end
  return n * width
end

local function charge(key, field, amount, bucket)
  redis.call('HSETNX', key, 'o', bucket)
  redis.call('HINCRBY', key, field, amount)
  redis.call('HINCRBY', key, field .. bucket, amount)
  redis.call('PEXPIRE', key, ttl)
end

-- Replaces a reservation by the real usage: `delta` more (or fewer) tokens in the reservation's
-- bucket, never below zero; once that bucket has left the window, only an excess counts, from now.
local function settle(key, bucket, delta)
  evict(key)
  if bucket >= oldest and redis.call('EXISTS', key) == 1 then
    local have = tonumber(redis.call('HGET', key, 't' .. bucket)) or 0
    local d = delta
    if have + d < 0 then d = -have end
    if d ~= 0 then charge(key, 't', d, bucket) end
  elseif delta > 0 then
    charge(key, 't', delta, cur)
  end
end

-- Settlements travel as (index into KEYS of the key's hash, bucket, delta) triples from ARGV[first]
-- on; each applies to the workspace (KEYS[1]) and to that key.
local function settle_all(first)
  for j = first, #ARGV, 3 do
    local bucket, delta = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    settle(KEYS[1], bucket, delta)
    settle(KEYS[tonumber(ARGV[j])], bucket, delta)
  end
end

if mode == 'settle' then
  settle_all(5)
  return {}
end
-- Settlements waiting for this workspace ride along with its next admission: no extra round trip.
settle_all(10)

local tokens = tonumber(ARGV[9])
local wr, wt, wrc, wtc = evict(KEYS[1])
local kr, kt, krc, ktc = evict(KEYS[2])
local checks = {
  { KEYS[1], 'r', wr, 1, tonumber(ARGV[5]) },
  { KEYS[1], 't', wt, tokens, tonumber(ARGV[6]) },
  { KEYS[2], 'r', kr, 1, tonumber(ARGV[7]) },
  { KEYS[2], 't', kt, tokens, tonumber(ARGV[8]) },
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
  wr, wt, kr, kt = wr + 1, wt + tokens, kr + 1, kt + tokens
  local counts = { { KEYS[1], wr, wt, wrc, wtc }, { KEYS[2], kr, kt, krc, ktc } }
  for _, c in ipairs(counts) do
    redis.call('HSETNX', c[1], 'o', cur)
    redis.call('HSET', c[1], 'r', c[2], 't', c[3], 'r' .. cur, c[4] + 1, 't' .. cur, c[5] + tokens)
    redis.call('PEXPIRE', c[1], ttl)
  end
end
return { failed, wait, now, cur, wr, wt, kr, kt }
