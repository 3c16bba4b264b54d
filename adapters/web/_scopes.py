"""What a project route works on: an open project, and a session in it.

The chat controller declares these as its dependencies, so that every handler starts
from a project that GNS3 says is open for the caller (404 or 409 otherwise), by its
canonical id, with the ids bound to the request's log lines. Its guard
:func:`ids_in_path` refuses ids that are not UUIDs (422) before GNS3 is asked anything.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

import structlog
from litestar.connection import ASGIConnection
from litestar.di import Provide
from litestar.exceptions import ValidationException
from litestar.handlers import BaseRouteHandler

from adapters.web._auth import Caller
from adapters.web._ids import UUID_PATTERN, ProjectId, SessionId, canonical_uuid
from adapters.web._state import Injected
from copilot_core import SessionKey
from copilot_core.errors import ProjectNotOpenedError
from copilot_core.ports import ProjectGate

__all__ = [
    "ProjectScope",
    "SessionScope",
    "ids_in_path",
    "open_project",
    "scopes",
    "session_in_project",
    "session_in_visible_project",
    "visible_project",
]

_UUID = re.compile(UUID_PATTERN)


@dataclass(frozen=True, slots=True)
class ProjectScope:
    """A GNS3 project that is open for the caller, by its canonical id."""

    project_id: str
    caller: Caller

    @property
    def user_id(self) -> str:
        return self.caller.user_id


@dataclass(frozen=True, slots=True)
class SessionScope:
    """A session id (canonical) in an open project; whose it is, the core decides."""

    project_id: str
    session_id: str
    caller: Caller

    @property
    def user_id(self) -> str:
        return self.caller.user_id

    @property
    def key(self) -> SessionKey:
        """How the chat service names the session."""
        return SessionKey(self.project_id, self.session_id, self.user_id)


async def open_project(
    project_id: ProjectId, caller: Injected[Caller], projects: Injected[ProjectGate]
) -> ProjectScope:
    """The ``{project_id}`` of the path, once GNS3 says the caller may use it and it is
    open (ProjectNotFoundError, ProjectNotOpenedError otherwise)."""
    canonical = canonical_uuid(project_id)
    structlog.contextvars.bind_contextvars(project_id=canonical)
    await projects.require_open(canonical, caller.token)
    return ProjectScope(canonical, caller)


async def visible_project(
    project_id: ProjectId, caller: Injected[Caller], projects: Injected[ProjectGate]
) -> ProjectScope:
    """The ``{project_id}`` of the path, once GNS3 says the caller may see it, open or
    closed (a closed project's conversations can still be read and cleaned up)."""
    canonical = canonical_uuid(project_id)
    structlog.contextvars.bind_contextvars(project_id=canonical)
    with contextlib.suppress(ProjectNotOpenedError):
        await projects.require_open(canonical, caller.token)
    return ProjectScope(canonical, caller)


def session_in_project(project: Injected[ProjectScope], session_id: SessionId) -> SessionScope:
    """The ``{session_id}`` of the path, in the open project."""
    return _session(project, session_id)


def session_in_visible_project(
    visible_project: Injected[ProjectScope], session_id: SessionId
) -> SessionScope:
    """The ``{session_id}`` of the path, in a project open or closed."""
    return _session(visible_project, session_id)


def _session(project: ProjectScope, session_id: str) -> SessionScope:
    canonical = canonical_uuid(session_id)
    structlog.contextvars.bind_contextvars(session_id=canonical)
    return SessionScope(project.project_id, canonical, project.caller)


async def ids_in_path(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: ``{project_id}`` and ``{session_id}`` are UUIDs (422 otherwise), checked
    before the dependencies above ask GNS3 about the project."""
    problems = [
        {"key": name, "message": "must be a UUID (32 hex digits, hyphenated or not)"}
        for name in ("project_id", "session_id")
        if name in connection.path_params and not _UUID.match(str(connection.path_params[name]))
    ]
    if problems:
        raise ValidationException(detail="Invalid request", extra=problems)


def scopes() -> dict[str, Provide]:
    """The chat controller's dependencies: ``project`` and ``session`` for what needs the
    project open (turns, changes), ``visible_project`` and ``visible_session`` for what a
    closed project still allows (listing, reading, deleting)."""
    return {
        "project": Provide(open_project),
        "visible_project": Provide(visible_project),
        "session": Provide(session_in_project, sync_to_thread=False),
        "visible_session": Provide(session_in_visible_project, sync_to_thread=False),
    }
