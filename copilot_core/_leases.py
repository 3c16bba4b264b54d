"""Session leases: one running piece of work per session (a turn, a rollback).

A :class:`~copilot_core.ports.SessionLeases` hands out
:class:`~copilot_core._turns.SessionClaim`\\ s: while a claim is held, nobody else can
claim the session. :class:`InMemorySessionLeases` serves one process; a shared
implementation (Redis) serves every replica, and fires a claim's
:attr:`~copilot_core._turns.SessionClaim.lost` token when it can no longer vouch for it.
:func:`hold_session` holds a claim for the length of a block.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from copilot_core._turn_ports import SessionLeases
from copilot_core._turns import SessionClaim
from copilot_core.errors import SessionBusyError

__all__ = ["InMemorySessionLeases", "hold_session"]


class InMemorySessionLeases:
    """Session claims in this process's memory (the default; see ``adapters.redis``
    for claims shared by several replicas). A claim here is never lost."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], str] = {}

    async def claim(self, project_id: str, session_id: str, holder: str) -> SessionClaim:
        key = (project_id, session_id)
        if key in self._held:
            raise SessionBusyError(session_id)
        self._held[key] = holder
        return SessionClaim(project_id, session_id, holder)

    async def release(self, claim: SessionClaim) -> None:
        key = (claim.project_id, claim.session_id)
        if self._held.get(key) == claim.holder:
            del self._held[key]

    async def holder(self, project_id: str, session_id: str) -> str | None:
        return self._held.get((project_id, session_id))


@asynccontextmanager
async def hold_session(
    leases: SessionLeases, project_id: str, session_id: str, holder: str
) -> AsyncIterator[SessionClaim]:
    """Claim the session for the block (``SessionBusyError`` when it is held) and
    release it after, whatever happens; the claim's ``lost`` token tells the block to
    stop."""
    claim = await leases.claim(project_id, session_id, holder)
    try:
        yield claim
    finally:
        await leases.release(claim)
