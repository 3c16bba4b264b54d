"""In-memory collaborators of the web adapter, for tests and for trying the service.

* :class:`StaticAuthenticator`: a fixed map of tokens to principals.
* :class:`StaticProjectGate`: fixed sets of opened and closed projects;
  :class:`AllProjectsOpenGate`: every project exists and is open.
* :class:`StaticGns3Directory`: fixed credentials, a fixed project list, fixed
  topologies and a fixed list of notifications per project.
* :class:`StaticModelCatalog`: fixed model names per user.
* :class:`InMemoryLLMConfigRepository`: LLM settings in a dict (the key is kept
  only as a flag; nothing is encrypted because nothing is stored).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from copilot_core.errors import (
    AuthenticationError,
    ConflictError,
    LLMNotConfiguredError,
    ProjectNotFoundError,
    ProjectNotOpenedError,
)
from copilot_core.ports import Principal

__all__ = [
    "AllProjectsOpenGate",
    "InMemoryLLMConfigRepository",
    "StaticAuthenticator",
    "StaticGns3Directory",
    "StaticModelCatalog",
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
    """Signs in exactly the given ``{username: (password, token)}``; lists ``projects``;
    ``topologies`` (GNS3's ``{nodes, links}`` per project id, default empty) and
    ``events`` (the notifications a project's stream sends, then it ends)."""

    def __init__(
        self,
        accounts: Mapping[str, tuple[str, str]] | None = None,
        projects: Sequence[Mapping[str, Any]] = (),
        *,
        topologies: Mapping[str, Mapping[str, Any]] | None = None,
        events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        web_ui: str | None = "http://127.0.0.1:3080/static/web-ui",
    ) -> None:
        self.accounts = dict(accounts or {})
        self.listed = [dict(project) for project in projects]
        self.topologies = {key: dict(value) for key, value in (topologies or {}).items()}
        self.events = {key: list(value) for key, value in (events or {}).items()}
        self.web_ui = web_ui
        self.followed: list[str] = []

    async def login(self, username: str, password: str) -> str:
        account = self.accounts.get(username)
        if account is None or account[0] != password:
            raise AuthenticationError("GNS3 refused the credentials.")
        return account[1]

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        return list(self.listed)

    async def create_project(self, token: str, name: str) -> Mapping[str, Any]:
        if any(p.get("name") == name for p in self.listed):
            raise ConflictError(f"Project '{name}' already exists")
        project = {"project_id": str(uuid.uuid4()), "name": name, "status": "opened"}
        self.listed.append(project)
        return dict(project)

    async def open_project(self, token: str, project_id: str) -> Mapping[str, Any]:
        for project in self.listed:
            if project.get("project_id") == project_id:
                project["status"] = "opened"
                return dict(project)
        raise ProjectNotFoundError(project_id)

    async def topology(self, token: str, project_id: str) -> Mapping[str, Any]:
        found = self.topologies.get(project_id, {})
        project = next((p for p in self.listed if p.get("project_id") == project_id), {})
        return {
            "project": found.get("project", project),
            "nodes": list(found.get("nodes", ())),
            "links": list(found.get("links", ())),
            "web_ui": self.web_ui,
        }

    async def notifications(self, token: str, project_id: str) -> AsyncIterator[Mapping[str, Any]]:
        self.followed.append(project_id)
        for event in self.events.get(project_id, ()):
            yield event


class StaticModelCatalog:
    """``models`` per user id; a user without an entry has no LLM configured."""

    def __init__(self, models: Mapping[str, Sequence[str]] | None = None) -> None:
        self.models = {user: list(names) for user, names in (models or {}).items()}

    async def list_models(self, user_id: str) -> Sequence[str]:
        if user_id not in self.models:
            raise LLMNotConfiguredError()
        return list(self.models[user_id])

    def defaults(self) -> Mapping[str, float | int | None]:
        return {"temperature": None, "context_limit": 32_000}


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
