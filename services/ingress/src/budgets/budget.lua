-- Monthly budgets (budgets/types.ts): one hash per scope and month, fields s = spend, h = holds
-- (reserved, not yet settled), a / b = set once the alert level / the budget was crossed. Amounts
-- are integer nano-dollars. The in-memory store (memory-budget-store.ts) implements the same steps;
-- budget-store-contract.ts holds both to the same tests.
--
-- admit:  KEYS = the scopes' hashes; ARGV = 'admit', ttl_ms, worst, then per scope: limit, hard (1/0), seed ('' = none)
--         returns {0, used...} admitted; {1, index, used} denied; {2, index...} counters to seed
-- settle: KEYS = the hashes the settlements name (one workspace's); ARGV = 'settle', then per
--         settlement: reserved, actual, scope count, then per scope: index into KEYS, limit, alert ('' = none)
--         returns, settlement after settlement, per scope a bit set: 1 = the alert level crossed,
--         2 = the budget reached (each the first time in the month)

if ARGV[1] == 'admit' then
  local ttl, worst = tonumber(ARGV[2]), tonumber(ARGV[3])
  local used, missing = {}, {}
  for i, key in ipairs(KEYS) do
    local seed = ARGV[3 + (i - 1) * 3 + 3]
    local v = redis.call('HMGET', key, 's', 'h')
    if not v[1] then
      if seed == '' then
        missing[#missing + 1] = i
      else
        redis.call('HSET', key, 's', seed, 'h', 0)
        redis.call('PEXPIRE', key, ttl)
        v = { seed, 0 }
      end
    end
    used[i] = (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0)
  end
  if #missing > 0 then
    return { 2, unpack(missing) }
  end
  for i = 1, #KEYS do
    local limit, hard = tonumber(ARGV[3 + (i - 1) * 3 + 1]), ARGV[3 + (i - 1) * 3 + 2] == '1'
    if hard and (used[i] >= limit or used[i] + worst > limit) then
      return { 1, i, used[i] }
    end
  end
  if worst > 0 then
    for _, key in ipairs(KEYS) do
      redis.call('HINCRBY', key, 'h', worst)
    end
  end
  return { 0, unpack(used) }
end

-- settle
local crossed = {}
local j = 2
while j <= #ARGV do
  local reserved, actual, count = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  j = j + 3
  for _ = 1, count do
    local key, limit, alert = KEYS[tonumber(ARGV[j])], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    j = j + 3
    local bits = 0
    local v = redis.call('HMGET', key, 's', 'h')
    if v[1] then
      local before = tonumber(v[1])
      local after = before + actual
      redis.call('HSET', key, 's', after, 'h', math.max(0, (tonumber(v[2]) or 0) - reserved))
      if alert and before < alert and after >= alert and redis.call('HSETNX', key, 'a', 1) == 1 then
        bits = bits + 1
      end
      if before < limit and after >= limit and redis.call('HSETNX', key, 'b', 1) == 1 then
        bits = bits + 2
      end
    end
    crossed[#crossed + 1] = bits
  end
end
return crossed
