"""Stand-ins the container uses until the real adapters are wired in.

Each is used by exactly one provider line in :mod:`entrypoints.container`
(marked ``# PLACEHOLDER``). They fail safe: no token is accepted, no project is
open, and sessions live in memory only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from copilot_core.errors import AuthenticationError, Gns3Error
from copilot_core.ports import Principal
from copilot_core.testing import InMemoryCheckpointStore

__all__ = ["UnwiredAuthenticator", "UnwiredProjectGate", "in_memory_store"]


class UnwiredAuthenticator:
    """Rejects every token: GNS3 authentication is not wired in yet."""

    async def authenticate(self, token: str) -> Principal:
        raise AuthenticationError(
            "This build cannot validate GNS3 tokens yet (no GNS3 authenticator is wired in)."
        )


class UnwiredProjectGate:
    """Refuses every project: the GNS3 project lookup is not wired in yet."""

    async def require_open(self, project_id: str, credentials: str) -> None:
        raise Gns3Error("This build cannot look up GNS3 projects yet.")


async def in_memory_store() -> AsyncIterator[InMemoryCheckpointStore]:
    """A resource yielding an in-memory store (sessions are lost on restart)."""
    yield InMemoryCheckpointStore()
