"""In-memory collaborators of the web adapter, for tests and for trying the service.

* :class:`StaticAuthenticator`: a fixed map of tokens to principals.
* :class:`StaticProjectGate`: fixed sets of opened and closed projects;
  :class:`AllProjectsOpenGate`: every project exists and is open.
* :class:`StaticGns3Directory`: fixed credentials and a fixed project list.
* :class:`InMemoryLLMConfigRepository`: LLM settings in a dict (the key is kept
  only as a flag; nothing is encrypted because nothing is stored).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from copilot_core.errors import AuthenticationError, ProjectNotFoundError, ProjectNotOpenedError
from copilot_core.ports import Principal

__all__ = [
    "AllProjectsOpenGate",
    "InMemoryLLMConfigRepository",
    "StaticAuthenticator",
    "StaticGns3Directory",
    "StaticProjectGate",
]


class StaticAuthenticator:
    """Accepts exactly the tokens it was given; counts the calls it answers."""

    def __init__(self, principals: Mapping[str, Principal] | None = None) -> None:
        self.principals = dict(principals or {})
        self.calls = 0

    async def authenticate(self, token: str) -> Principal:
        self.calls += 1
        principal = self.principals.get(token)
        if principal is None:
            raise AuthenticationError("The GNS3 server rejected the token.")
        return principal


class StaticProjectGate:
    """Projects in ``opened`` are open, those in ``closed`` are closed, others unknown."""

    def __init__(self, opened: Iterable[str] = (), closed: Iterable[str] = ()) -> None:
        self.opened = set(opened)
        self.closed = set(closed)
        self.seen_credentials: list[str] = []

    async def require_open(self, project_id: str, credentials: str) -> None:
        self.seen_credentials.append(credentials)
        if project_id in self.opened:
            return
        if project_id in self.closed:
            raise ProjectNotOpenedError(project_id)
        raise ProjectNotFoundError(project_id)


class AllProjectsOpenGate:
    """Every project exists and is open (for generated ids); records the ids it saw."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def require_open(self, project_id: str, credentials: str) -> None:
        self.seen.append(project_id)


class StaticGns3Directory:
    """Signs in exactly the given ``{username: (password, token)}``; lists ``projects``."""

    def __init__(
        self,
        accounts: Mapping[str, tuple[str, str]] | None = None,
        projects: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.accounts = dict(accounts or {})
        self.listed = [dict(project) for project in projects]

    async def login(self, username: str, password: str) -> str:
        account = self.accounts.get(username)
        if account is None or account[0] != password:
            raise AuthenticationError("GNS3 refused the credentials.")
        return account[1]

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return list(self.listed)


class InMemoryLLMConfigRepository:
    """Settings per user in a dict; ``keys`` holds the last key each user sent."""

    def __init__(self) -> None:
        self.settings: dict[str, dict[str, Any]] = {}
        self.keys: dict[str, str] = {}

    async def get_public(self, user_id: str) -> Mapping[str, Any] | None:
        stored = self.settings.get(user_id)
        if stored is None:
            return None
        return {**stored, "api_key_set": user_id in self.keys}

    async def put(self, user_id: str, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        values = dict(settings)
        key = values.pop("api_key", None)
        if key is not None:
            self.keys[user_id] = str(key)
        self.settings[user_id] = values
        return {**values, "api_key_set": user_id in self.keys}

    async def delete(self, user_id: str) -> bool:
        self.keys.pop(user_id, None)
        return self.settings.pop(user_id, None) is not None
