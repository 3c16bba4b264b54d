"""Which session: the one value every operation on a session is named by.

A session is one user's conversation in one GNS3 project, so it is named by three ids,
never by its own id alone: another user's session with the same ids behaves exactly like
one that does not exist. :class:`SessionKey` carries the three together (reading the
session a key names, by that rule, is the store's:
:func:`~copilot_core._store_ports.owned_session`).
"""

from __future__ import annotations

from dataclasses import dataclass

from copilot_core.errors import InvalidRequestError

__all__ = ["SessionKey"]

_FIELDS = ("project_id", "session_id", "user_id")


@dataclass(frozen=True, slots=True)
class SessionKey:
    """One user's session in one project: ``SessionKey(project_id, session_id, user_id)``."""

    project_id: str
    session_id: str
    user_id: str

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"SessionKey.{name} must be a string, not {value!r}")
            if not value:  # an id from a request: the request is at fault
                raise InvalidRequestError(f"{name} must not be empty.")

    def __str__(self) -> str:
        return f"{self.project_id}/{self.session_id} ({self.user_id})"
