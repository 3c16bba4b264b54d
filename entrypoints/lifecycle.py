"""What the service does when GNS3 closes or deletes a project: noticed by
:class:`adapters.gns3.Gns3ProjectWatcher` (with a GNS3 service account), and, with or
without one, by :class:`ReconcilingProjectGate` when GNS3 answers a request that the
project does not exist or is closed, and by :class:`ReconcilingDirectory` when a caller's
project list shows it closed. Whatever no request tells, the store's idle timeout does:
a database no one uses is closed after ``store.idle_timeout`` seconds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from adapters.sqlite import SqliteCheckpointStore
from adapters.web import Gns3Directory
from copilot_core import ChatService
from copilot_core.errors import CopilotError, ProjectGoneError, ProjectNotOpenedError
from copilot_core.ports import ProjectGate

__all__ = [
    "ProjectLifecycle",
    "ReconcilingDirectory",
    "ReconcilingProjectGate",
    "project_lifecycle",
    "reconciling_directory",
    "reconciling_gate",
]

log = structlog.get_logger("entrypoints")


class ProjectLifecycle:
    """Closed: the project's database is closed (it reopens if a user reads the project's
    sessions). Deleted: running turns of the project end, then its directory under
    ``data_dir/projects`` is removed, or moved to ``archive`` when one is given; one
    deletion of a project at a time (who asks meanwhile waits for it)."""

    def __init__(
        self, chat: ChatService, store: SqliteCheckpointStore, archive: Path | None = None
    ) -> None:
        self._chat = chat
        self._store = store
        self._archive = archive
        self._deleting: dict[str, asyncio.Future[None]] = {}

    async def project_closed(self, project_id: str) -> None:
        if await self._store.close_project(project_id):
            log.info("gns3_project_closed", project_id=project_id, released="database handles")

    async def project_deleted(self, project_id: str) -> None:
        deleting = self._deleting.get(project_id)
        if deleting is None:
            deleting = asyncio.ensure_future(self._delete(project_id))
            self._deleting[project_id] = deleting
            deleting.add_done_callback(lambda _: self._deleting.pop(project_id, None))
        # (A caller that goes away does not stop the deletion half-way.)
        await asyncio.shield(deleting)

    async def project_gone(self, project_id: str) -> None:
        """GNS3 told a caller with rights on the project that it does not exist: deleted,
        when the copilot keeps anything of it (a failure is logged, not raised)."""
        try:
            if project_id in await self._store.stored_projects():
                await self.project_deleted(project_id)
        except (CopilotError, OSError) as exc:
            reason = exc.message if isinstance(exc, CopilotError) else str(exc)
            log.warning("gns3_project_gone_not_handled", project_id=project_id, error=reason)

    async def _delete(self, project_id: str) -> None:
        await self._chat.forget_project(project_id, "the project was deleted in GNS3")
        archived = await self._store.remove_project(project_id, archive_to=self._archive)
        log.info(
            "gns3_project_deleted",
            project_id=project_id,
            sessions="archived" if archived else "deleted",
            archive=str(archived) if archived else None,
        )


class ReconcilingProjectGate:
    """The routes' :class:`~copilot_core.ports.ProjectGate`: GNS3's, and when GNS3 says
    the project does not exist (:class:`~copilot_core.errors.ProjectGoneError`, which it
    tells only a caller with rights on it), the project is handled as deleted before the
    request is answered 404. A caller without rights gets GNS3's "permission denied",
    reported as a plain not-found, and changes nothing. When GNS3 says the project is
    closed, its database is closed before the request is answered 409."""

    def __init__(self, gate: ProjectGate, lifecycle: ProjectLifecycle) -> None:
        self._gate = gate
        self._lifecycle = lifecycle

    async def require_open(self, project_id: str, credentials: str) -> None:
        try:
            await self._gate.require_open(project_id, credentials)
        except ProjectGoneError:
            await self._lifecycle.project_gone(project_id)
            raise
        except ProjectNotOpenedError:
            await self._lifecycle.project_closed(project_id)
            raise


class ReconcilingDirectory:
    """The web page's :class:`~adapters.web.Gns3Directory`, closing the database of each
    project that the caller's list from GNS3 shows closed (the caller's own token: no
    service account needed). A project the caller cannot see is left as it is."""

    def __init__(self, directory: Gns3Directory, lifecycle: ProjectLifecycle) -> None:
        self._directory = directory
        self._lifecycle = lifecycle

    async def login(self, username: str, password: str) -> str:
        return await self._directory.login(username, password)

    async def projects(self, token: str) -> Sequence[Mapping[str, Any]]:
        projects = await self._directory.projects(token)
        for project in projects:
            project_id = project.get("project_id")
            if isinstance(project_id, str) and project.get("status") == "closed":
                await self._lifecycle.project_closed(project_id)
        return projects

    async def create_project(self, token: str, name: str) -> Mapping[str, Any]:
        return await self._directory.create_project(token, name)

    async def open_project(self, token: str, project_id: str) -> Mapping[str, Any]:
        return await self._directory.open_project(token, project_id)

    async def topology(self, token: str, project_id: str) -> Mapping[str, Any]:
        return await self._directory.topology(token, project_id)

    def notifications(self, token: str, project_id: str) -> AsyncIterator[Mapping[str, Any]]:
        return self._directory.notifications(token, project_id)


def project_lifecycle(
    chat: ChatService, store: object, data_dir: Path | str, deleted_projects: str
) -> ProjectLifecycle | None:
    """The lifecycle of the per-project SQLite store (``None`` for another store: with
    PostgreSQL, sessions of deleted projects stay)."""
    if not isinstance(store, SqliteCheckpointStore):
        return None
    archive = Path(data_dir) / "archive" if deleted_projects == "archive" else None
    return ProjectLifecycle(chat, store, archive)


def reconciling_gate(gate: ProjectGate, lifecycle: ProjectLifecycle | None) -> ProjectGate:
    """``gate``, reconciling projects GNS3 says are gone when there is a lifecycle."""
    return gate if lifecycle is None else ReconcilingProjectGate(gate, lifecycle)


def reconciling_directory(
    directory: Gns3Directory, lifecycle: ProjectLifecycle | None
) -> Gns3Directory:
    """``directory``, closing the databases of projects a caller's list shows closed when
    there is a lifecycle."""
    return directory if lifecycle is None else ReconcilingDirectory(directory, lifecycle)
