"""What the service does when GNS3 closes or deletes a project (see
:class:`adapters.gns3.Gns3ProjectWatcher`, which notices it)."""

from __future__ import annotations

from pathlib import Path

import structlog

from adapters.sqlite import SqliteCheckpointStore
from copilot_core import ChatService

__all__ = ["ProjectLifecycle"]

log = structlog.get_logger("entrypoints")


class ProjectLifecycle:
    """Closed: the project's database is closed (it reopens if a user reads the project's
    sessions). Deleted: running turns of the project end, then its directory under
    ``data_dir/projects`` is removed, or moved to ``archive`` when one is given."""

    def __init__(
        self, chat: ChatService, store: SqliteCheckpointStore, archive: Path | None = None
    ) -> None:
        self._chat = chat
        self._store = store
        self._archive = archive

    async def project_closed(self, project_id: str) -> None:
        await self._store.close_project(project_id)
        log.info("gns3_project_closed", project_id=project_id, released="database handles")

    async def project_deleted(self, project_id: str) -> None:
        await self._chat.forget_project(project_id, "the project was deleted in GNS3")
        archived = await self._store.remove_project(project_id, archive_to=self._archive)
        log.info(
            "gns3_project_deleted",
            project_id=project_id,
            sessions="archived" if archived else "deleted",
            archive=str(archived) if archived else None,
        )
