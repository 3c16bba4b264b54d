"""The Redis :class:`~copilot_core.ports.SessionLeases`: one running turn (or rollback)
per session across every replica.

Key (``P`` is the prefix): ``P:lease:{project_id}:{session_id}`` holds the holder's id
(a turn's, a rollback's). Claiming is ``SET NX`` with an expiry of ``lease`` seconds,
which the replica renews every third of that while it holds the claim; a replica that
dies (or hangs) stops renewing, and the session is free again ``lease`` seconds later.
A renewal that finds the key held by someone else (or gone) fires the claim's ``lost``
token: the replica stopped responding for that long, and another one may hold the
session now. Releasing deletes the key only while it still holds the claim's holder.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import redis.asyncio as aioredis

from adapters.redis._commands import Commands
from adapters.redis._keys import Keys, RenewalLoop, call, ms, text
from copilot_core.errors import SessionBusyError
from copilot_core.ports import SessionClaim

__all__ = ["RedisSessionLeases"]

log = logging.getLogger(__name__)

#: A replica's claims lost this way are stopped with this reason.
LOST = "this copilot replica lost its claim on the session"

# KEYS: lease; ARGV: holder, lease ms
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS: lease; ARGV: holder
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisSessionLeases:
    """Session claims shared by every replica through Redis (module doc).

    ``client`` is a ``redis.asyncio.Redis``. Lifecycle (the composition root's):
    :meth:`start` (renew this replica's claims) before use, :meth:`stop` at the end.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        lease: float = 15.0,
        prefix: str = "gns3-copilot",
        replica: str | None = None,
    ) -> None:
        if lease <= 0:
            raise ValueError("lease must be positive")
        self.client = client
        self.lease = lease
        self.prefix = prefix
        self.replica = replica or uuid.uuid4().hex
        self._keys = Keys(prefix)
        self._held: dict[str, SessionClaim] = {}  # lease key -> claim
        self._commands = commands = Commands.of(client)
        self._renew_script = commands.script(_RENEW)
        self._release_script = commands.script(_RELEASE)
        self._renewals = RenewalLoop("redis-session-leases", lease / 3, self._renew)

    async def start(self) -> None:
        """Renew this replica's claims every third of a lease."""
        self._renewals.start()

    async def stop(self) -> None:
        await self._renewals.stop()

    async def claim(self, project_id: str, session_id: str, holder: str) -> SessionClaim:
        key = self._keys.lease(project_id, session_id)
        claimed = await call(self._commands.command("SET", key, holder, "NX", "PX", ms(self.lease)))
        if not claimed:
            raise SessionBusyError(session_id)
        claim = SessionClaim(project_id, session_id, holder)
        self._held[key] = claim
        return claim

    async def release(self, claim: SessionClaim) -> None:
        key = self._keys.lease(claim.project_id, claim.session_id)
        if self._held.get(key) is claim:
            del self._held[key]
        await call(self._release_script(keys=[key], args=[claim.holder]))

    async def holder(self, project_id: str, session_id: str) -> str | None:
        held = await call(self._commands.command("GET", self._keys.lease(project_id, session_id)))
        return text(held) or None

    async def _renew(self) -> None:
        held = list(self._held.items())
        if not held:
            return
        renewed = await asyncio.gather(
            *(
                self._renew_script(keys=[key], args=[claim.holder, ms(self.lease)])
                for key, claim in held
            )
        )
        for (key, claim), kept in zip(held, renewed, strict=True):
            if not kept and self._held.get(key) is claim:
                del self._held[key]
                log.warning(
                    "the claim of %s on session %s was lost", claim.holder, claim.session_id
                )
                claim.lost.abort(LOST)
