"""The Lua scripts of the Redis turn log and turn control relay: each changes several
keys of one turn or one session atomically. Which keys and arguments each takes is
written above it; the key layout is in each port's module."""

__all__ = [
    "CONTROL_ABORT",
    "CONTROL_ATTACH",
    "CONTROL_DECIDE",
    "CONTROL_DETACH",
    "CONTROL_MARK",
    "CONTROL_RENEW",
    "LOG_APPEND",
    "LOG_CLOSE",
    "LOG_DISCARD",
    "LOG_OPEN",
    "LOG_REAP",
    "LOG_RENEW",
]

# ================================================================ the turn log
# Lua: append an entry of events to a turn's stream and keep its waiting approvals. From
# ARGV[first]: the entry id, the entry, then per approval event of the entry (approval id,
# the '{seq}|{event}' record of an approval_required or '' for an approval_resolved).
_WRITE_ENTRY = """
local function write_entry(events, waiting, first)
  redis.call('XADD', events, ARGV[first], 'e', ARGV[first + 1])
  for i = first + 2, #ARGV, 2 do
    if ARGV[i + 1] ~= '' then
      redis.call('HSET', waiting, ARGV[i], ARGV[i + 1])
    else
      redis.call('HDEL', waiting, ARGV[i])
    end
  end
end
"""

# KEYS: session pointer, turn hash, writer; ARGV: turn id, project, session, user, owner,
# lease ms. Returns the session's previous turn id ('' for none).
LOG_OPEN = """
local previous = redis.call('GET', KEYS[1]) or ''
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'project', ARGV[2], 'session', ARGV[3], 'user', ARGV[4],
  'owner', ARGV[5], 'closed', '0', 'previous', previous)
redis.call('SET', KEYS[3], ARGV[5], 'PX', ARGV[6])
return previous
"""

# KEYS: turn hash, events, waiting. ARGV: an entry as ``_WRITE_ENTRY`` takes it.
# Nothing is written once the turn is closed (another replica ended it for dead).
LOG_APPEND = (
    _WRITE_ENTRY
    + """
if redis.call('HGET', KEYS[1], 'closed') ~= '0' then return 0 end
write_entry(KEYS[2], KEYS[3], 1)
return 1
"""
)

# KEYS: turn hash, events, waiting, writer, session pointer
# ARGV: turn id, retention ms, then optionally the turn's last entry as ``LOG_APPEND`` takes
# it: written first, unless the turn was already closed (another replica ended it).
LOG_CLOSE = (
    _WRITE_ENTRY
    + """
if #ARGV > 2 and redis.call('HGET', KEYS[1], 'closed') == '0' then
  write_entry(KEYS[2], KEYS[3], 3)
end
redis.call('HSET', KEYS[1], 'closed', '1')
redis.call('DEL', KEYS[4])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
if redis.call('GET', KEYS[5]) == ARGV[1] then redis.call('PEXPIRE', KEYS[5], ARGV[2]) end
return 1
"""
)

# KEYS: turn hash, events, waiting, writer, session pointer, previous turn hash
# ARGV: turn id, previous turn id
LOG_DISCARD = """
if redis.call('GET', KEYS[5]) == ARGV[1] then
  local ttl = ARGV[2] ~= '' and redis.call('PTTL', KEYS[6]) or -2
  if ttl > 0 then
    redis.call('SET', KEYS[5], ARGV[2], 'PX', ttl)
  elseif ttl == -1 then
    redis.call('SET', KEYS[5], ARGV[2])
  else
    redis.call('DEL', KEYS[5])
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return 1
"""

# KEYS: turn hash, events, waiting, writer, session pointer
# ARGV: turn id, error record, done record, retention ms
LOG_REAP = """
if redis.call('HGET', KEYS[1], 'closed') ~= '0' then return 0 end
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
local last = 0
local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #newest > 0 then last = tonumber(string.match(newest[1][1], '^(%d+)')) end
redis.call('XADD', KEYS[2], (last + 2) .. '-0', 'e', '[' .. ARGV[2] .. ',' .. ARGV[3] .. ']')
redis.call('HSET', KEYS[1], 'closed', '1')
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[4]) end
if redis.call('GET', KEYS[5]) == ARGV[1] then redis.call('PEXPIRE', KEYS[5], ARGV[4]) end
return 1
"""

# KEYS: turn hash, writer; ARGV: owner, lease ms. 0 once the turn is closed.
LOG_RENEW = """
if redis.call('HGET', KEYS[1], 'closed') ~= '0' then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
"""


# ===================================================== the turn control relay
# KEYS: control; ARGV: turn id, owner, lease ms
CONTROL_ATTACH = """
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'turn', ARGV[1], 'owner', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: control; ARGV: turn id
CONTROL_DETACH = """
if redis.call('HGET', KEYS[1], 'turn') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""

# KEYS: control; ARGV: turn id, approval id, state ('W' or 'R'), the call's digest ('' if
# none; kept with 'W' as 'g:' so a decision for other arguments is refused when sent)
CONTROL_MARK = """
if redis.call('HGET', KEYS[1], 'turn') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'a:' .. ARGV[2], ARGV[3])
if ARGV[3] == 'R' then redis.call('HDEL', KEYS[1], 'd:' .. ARGV[2], 'g:' .. ARGV[2]) end
if ARGV[3] == 'W' and ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'g:' .. ARGV[2], ARGV[4]) end
return 1
"""

# KEYS: control; ARGV: turn id, lease ms. The hash (to catch up on), or nil when the
# session's attached turn is another one.
CONTROL_RENEW = """
if redis.call('HGET', KEYS[1], 'turn') ~= ARGV[1] then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: control; ARGV: reason, channel. The turn's id, or '' when none is attached.
CONTROL_ABORT = """
local turn = redis.call('HGET', KEYS[1], 'turn')
if not turn then return '' end
redis.call('HSET', KEYS[1], 'abort', ARGV[1])
redis.call('PUBLISH', ARGV[2], turn .. '\\n' .. ARGV[1])
return turn
"""

# KEYS: control; ARGV: approval id, decision, channel, the decision's digest ('' when
# unbound). A decision bound to other arguments than the waiting call's ('g:') is refused
# ('other_arguments') and decides nothing: the rule of ApprovalDecision.answers.
# {'unknown'}, {'already_decided'}, {'other_arguments'} or {'sent', turn id} (recorded
# and published).
CONTROL_DECIDE = """
local turn = redis.call('HGET', KEYS[1], 'turn')
if not turn then return {'unknown'} end
local state = redis.call('HGET', KEYS[1], 'a:' .. ARGV[1])
if not state then return {'unknown'} end
if state ~= 'W' then return {'already_decided'} end
local expected = redis.call('HGET', KEYS[1], 'g:' .. ARGV[1])
if expected and ARGV[4] ~= '' and ARGV[4] ~= expected then return {'other_arguments'} end
redis.call('HSET', KEYS[1], 'a:' .. ARGV[1], 'D', 'd:' .. ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], turn .. '\\n' .. ARGV[1] .. '\\n' .. ARGV[2])
return {'sent', turn}
"""
