-- Monthly budgets (budgets/types.ts): one hash per scope and month, fields s = spend, h = holds
-- (reserved, not yet settled), a / b = set once the alert level / the budget was crossed. Each hold
-- is also filed under the step its life ends in, e<step> (part of h), and x is the earliest such
-- step; once a step has passed, its holds leave h (their settlement was lost with a process).
-- Amounts are integer nano-dollars. The in-memory store (memory-budget-store.ts) implements the same
-- steps; budget-store-contract.ts holds both to the same tests.
--
-- admit:  KEYS = the scopes' hashes; ARGV = 'admit', ttl_ms, worst, passed step, hold's step, then
--         per scope: limit, hard (1/0), seed ('' = none)
--         returns {0, used...} admitted; {1, index, used} denied; {2, index...} counters to seed
-- settle: KEYS = the hashes the settlements name (one workspace's); ARGV = 'settle', passed step,
--         then per settlement: reserved, actual, hold's step ('' = none), scope count, then per
--         scope: index into KEYS, limit, alert ('' = none)
--         returns, settlement after settlement, per scope a bit set: 1 = the alert level crossed,
--         2 = the budget reached (each the first time in the month)

-- Drops the holds of every passed step from h; answers h and the earliest step left.
local function sweep(key, held, passed)
  local fields = redis.call('HGETALL', key)
  local earliest
  for i = 1, #fields, 2 do
    local name = fields[i]
    if string.byte(name, 1) == 101 then -- 'e'
      local step = tonumber(string.sub(name, 2))
      if step <= passed then
        held = held - tonumber(fields[i + 1])
        redis.call('HDEL', key, name)
      elseif not earliest or step < earliest then
        earliest = step
      end
    end
  end
  held = math.max(0, held)
  redis.call('HSET', key, 'h', held)
  if earliest then
    redis.call('HSET', key, 'x', earliest)
  else
    redis.call('HDEL', key, 'x')
  end
  return held, earliest
end

if ARGV[1] == 'admit' then
  local ttl, worst, passed, step = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  local used, earliest, missing = {}, {}, {}
  for i, key in ipairs(KEYS) do
    local seed = ARGV[5 + (i - 1) * 3 + 3]
    local v = redis.call('HMGET', key, 's', 'h', 'x')
    if not v[1] then
      if seed == '' then
        missing[#missing + 1] = i
      else
        redis.call('HSET', key, 's', seed, 'h', 0)
        redis.call('PEXPIRE', key, ttl)
        v = { seed, 0 }
      end
    end
    local held = tonumber(v[2]) or 0
    earliest[i] = tonumber(v[3])
    if earliest[i] and earliest[i] <= passed then
      held, earliest[i] = sweep(key, held, passed)
    end
    used[i] = (tonumber(v[1]) or 0) + held
  end
  if #missing > 0 then
    return { 2, unpack(missing) }
  end
  for i = 1, #KEYS do
    local limit, hard = tonumber(ARGV[5 + (i - 1) * 3 + 1]), ARGV[5 + (i - 1) * 3 + 2] == '1'
    if hard and (used[i] >= limit or used[i] + worst > limit) then
      return { 1, i, used[i] }
    end
  end
  if worst > 0 then
    for i, key in ipairs(KEYS) do
      redis.call('HINCRBY', key, 'h', worst)
      redis.call('HINCRBY', key, 'e' .. step, worst)
      if not earliest[i] or step < earliest[i] then
        redis.call('HSET', key, 'x', step)
      end
    end
  end
  return { 0, unpack(used) }
end

-- settle
local passed = tonumber(ARGV[2])
local crossed = {}
local j = 3
while j <= #ARGV do
  local reserved, actual, step, count = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), ARGV[j + 2], tonumber(ARGV[j + 3])
  j = j + 4
  for _ = 1, count do
    local key, limit, alert = KEYS[tonumber(ARGV[j])], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    j = j + 3
    local bits = 0
    local v = redis.call('HMGET', key, 's', 'h')
    if v[1] then
      local release = reserved
      if step ~= '' then
        local field = 'e' .. step
        local filed = redis.call('HGET', key, field)
        if filed then
          -- What is left of the hold under its step.
          filed = tonumber(filed)
          release = math.min(reserved, filed)
          if release > 0 and filed > release then
            redis.call('HINCRBY', key, field, -release)
          elseif release > 0 then
            redis.call('HDEL', key, field)
          end
        elseif tonumber(step) <= passed then
          -- The step has passed: its holds were dropped from h already.
          release = 0
        end
        -- (No field for a step still to come: a hold made before holds had steps, in h alone.)
      end
      local before = tonumber(v[1])
      local after = before + actual
      redis.call('HSET', key, 's', after, 'h', math.max(0, (tonumber(v[2]) or 0) - release))
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
