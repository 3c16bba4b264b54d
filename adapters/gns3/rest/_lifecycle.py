"""Following GNS3's project lifecycle: what the copilot keeps per project must follow
what happens to the project in GNS3.

* :meth:`Gns3ProjectWatcher.reconcile` compares the projects that have copilot data with
  GNS3's list: a project GNS3 no longer has is *deleted*, one it has closed is *closed*.
* :meth:`Gns3ProjectWatcher.run` follows the controller's notification stream
  (``GET /v3/notifications``: JSON lines ``{"action": "project.closed" | "project.deleted"
  | ..., "event": {project}}``, seen on gns3-server 3.0.6) for as long as the service runs,
  reconnecting with backoff and jitter, and reconciling after each (re)connection so that
  nothing missed while disconnected is lost.

What to do about a closed or deleted project is the handler's business
(:class:`ProjectLifecycleHandler`). The watcher needs GNS3 credentials of its own (the
service otherwise only ever uses its callers' tokens); a project that account cannot see
looks deleted, so deletions are only acted upon with a superadmin account, which sees
every project.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, wait_random_exponential

from adapters.gns3.rest._client import Gns3Client
from copilot_core.errors import AuthenticationError, CopilotError

__all__ = ["Gns3ProjectWatcher", "ProjectLifecycleHandler", "ReconcileReport"]

_log = logging.getLogger(__name__)
T = TypeVar("T")


class ProjectLifecycleHandler(Protocol):
    async def project_closed(self, project_id: str) -> None:
        """GNS3 closed the project: release what is held open for it."""
        ...

    async def project_deleted(self, project_id: str) -> None:
        """GNS3 deleted the project: its copilot data goes (deleted or archived)."""
        ...


@dataclass
class ReconcileReport:
    """What one reconciliation found (and handed to the handler)."""

    closed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: Deletions not acted upon because the account is not a superadmin.
    unverified: list[str] = field(default_factory=list)


class _Stopped(Exception):
    """The notification stream ended; reconnect."""


class Gns3ProjectWatcher:
    """Keeps the copilot's per-project data in step with GNS3 (see the module doc).

    ``stored`` lists the projects that have copilot data; ``username``/``password`` sign
    the watcher in (the token is renewed when GNS3 rejects it).
    """

    def __init__(
        self,
        client: Gns3Client,
        handler: ProjectLifecycleHandler,
        stored: Callable[[], Awaitable[Sequence[str]]],
        *,
        username: str,
        password: str,
        reconnect_max: float = 30.0,
    ) -> None:
        self._client = client
        self._handler = handler
        self._stored = stored
        self._username = username
        self._password = password
        self._reconnect_max = reconnect_max
        self._token: str | None = None
        self._superadmin = False
        self.connected = asyncio.Event()
        """Set while the notification stream is open (tests wait for it)."""

    async def _sign_in(self, renew: bool = False) -> str:
        if self._token is None or renew:
            self._token = await self._client.authenticate(self._username, self._password)
            me = await self._client.current_user(self._token)
            self._superadmin = bool(me.get("is_superadmin"))
            if not self._superadmin:
                _log.warning(
                    "the GNS3 account %r is not a superadmin: it may not see every project, "
                    "so deleted projects are not cleaned up",
                    self._username,
                )
        return self._token

    async def _call(self, call: Callable[[str], Awaitable[T]]) -> T:
        """``call(token)``, signing in again once if GNS3 rejects the token."""
        try:
            return await call(await self._sign_in())
        except AuthenticationError:
            return await call(await self._sign_in(renew=True))

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self) -> ReconcileReport:
        """Compare the stored projects with GNS3's and hand over what changed."""
        report = ReconcileReport()
        stored = list(await self._stored())
        if not stored:
            return report
        projects = await self._call(self._client.projects)
        status = {str(p.get("project_id")): str(p.get("status")) for p in projects}
        for project_id in stored:
            if project_id not in status:
                if self._superadmin:
                    report.deleted.append(project_id)
                else:
                    report.unverified.append(project_id)
            elif status[project_id] != "opened":
                report.closed.append(project_id)
        for project_id in report.closed:
            await self._handle("closed", project_id)
        for project_id in report.deleted:
            await self._handle("deleted", project_id)
        _log.info(
            "projects reconciled with GNS3: %d stored, %d closed, %d deleted, %d unverified",
            len(stored),
            len(report.closed),
            len(report.deleted),
            len(report.unverified),
        )
        return report

    async def _handle(self, what: str, project_id: str) -> None:
        try:
            if what == "closed":
                await self._handler.project_closed(project_id)
            elif self._superadmin:
                await self._handler.project_deleted(project_id)
        except CopilotError as exc:  # one project's failure must not stop the watcher
            _log.warning("handling project %s %s failed: %s", project_id, what, exc.message)

    # ------------------------------------------------------------------ follow
    async def run(self) -> None:
        """Follow GNS3 until cancelled: reconcile, then apply each project event;
        reconnect (backoff with jitter, at most ``reconnect_max`` seconds apart) when
        the stream ends or GNS3 cannot be reached."""
        retrying = AsyncRetrying(
            retry=retry_if_exception_type((CopilotError, _Stopped)),
            wait=wait_random_exponential(multiplier=0.5, max=self._reconnect_max),
            before_sleep=lambda state: _log.info(
                "GNS3 notification stream lost (%s); reconnecting",
                type(state.outcome.exception()).__name__ if state.outcome else "?",
            ),
        )
        async for attempt in retrying:
            with attempt:
                await self._follow_once()

    async def _follow_once(self) -> None:
        token = await self._sign_in()

        async def opened() -> None:
            # Anything that happened while we were away is found now; events that arrive
            # meanwhile wait in the stream and are applied next.
            self.connected.set()
            await self.reconcile()

        try:
            async for event in self._client.controller_notifications(token, on_open=opened):
                action = event.get("action")
                body = event.get("event")
                project_id = body.get("project_id") if isinstance(body, dict) else None
                if not isinstance(project_id, str):
                    continue
                if action == "project.closed":
                    await self._handle("closed", project_id)
                elif action == "project.deleted":
                    await self._handle("deleted", project_id)
        except AuthenticationError:
            self._token = None  # signed in again on the next attempt
            raise
        finally:
            self.connected.clear()
        raise _Stopped()
