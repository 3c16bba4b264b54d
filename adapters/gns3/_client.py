"""``Gns3Client``: the GNS3 v3 REST API over httpx, on behalf of the caller.

The caller's JWT is passed to every call and never stored. GNS3's errors become
core errors carrying GNS3's own message:

* 401 → :class:`~copilot_core.errors.AuthenticationError`
* 403 → :class:`~copilot_core.errors.PermissionDeniedError`
* 404 on a project → :class:`~copilot_core.errors.ProjectNotFoundError`
* anything else ≥ 400 → :class:`~copilot_core.errors.Gns3Error` with the status code
* an unreachable server (no answer at all) →
  :class:`~copilot_core.errors.Gns3UnavailableError` with ``retry_after`` (the web
  adapter answers 503 with ``Retry-After``)

Requests are retried on connection failures, with exponential backoff and full jitter
(tenacity), within a bounded total time, only where a retry cannot repeat an effect:
any method when the connection could not even be made (nothing was sent); a GET (or
HEAD) also when the connection broke or timed out after the request was sent. A POST,
PUT or DELETE that may have reached GNS3 is never sent twice.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from copilot_core.errors import (
    AuthenticationError,
    Gns3Error,
    Gns3UnavailableError,
    PermissionDeniedError,
    ProjectNotFoundError,
    ProjectNotOpenedError,
)

__all__ = ["Gns3Client"]

JSON = dict[str, Any]

_log = logging.getLogger(__name__)

RETRY_AFTER = 5.0
"""Seconds a caller is told to wait when GNS3 cannot be reached."""

# Nothing reached GNS3: safe to send again whatever the method.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
# Methods GNS3 treats as reads: safe to send again even if the first one arrived.
_IDEMPOTENT_READS = frozenset({"GET", "HEAD"})


def _retryable(method: str, error: BaseException) -> bool:
    if isinstance(error, _NOT_SENT):
        return True
    return method in _IDEMPOTENT_READS and isinstance(error, httpx.TransportError)


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    _log.info(
        "GNS3 request failed (%s); retry %d in %.2f s",
        type(error).__name__,
        state.attempt_number,
        state.upcoming_sleep,
    )


def _gns3_message(response: httpx.Response) -> str:
    """GNS3's own words from an error response (``message`` or pydantic's ``detail``)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict):
        if isinstance(body.get("message"), str):
            return str(body["message"])
        detail = body.get("detail")
        if isinstance(detail, str):
            return detail
        if isinstance(detail, list):
            parts = []
            for item in detail[:5]:
                if isinstance(item, dict):
                    where = ".".join(str(x) for x in item.get("loc", []) if x != "body")
                    parts.append(f"{where}: {item.get('msg', '')}".strip(": "))
            if parts:
                return "; ".join(parts)
    return str(body)[:500]


#: What GNS3 does to a node, or to all of a project's nodes, on request.
_NODE_ACTIONS = frozenset({"start", "stop", "suspend", "reload"})


class Gns3Client:
    """A thin async client of the GNS3 v3 API; every call takes the caller's token.

    ``base_url`` is the server's root (``http://127.0.0.1:3080``); ``/v3`` is added.
    Pass ``http`` to share a connection pool (its lifetime is then yours);
    otherwise :meth:`aclose` closes the client's own.
    """

    def __init__(
        self,
        base_url: str,
        *,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        retry_within: float = 5.0,
        retry_backoff: float = 0.2,
    ) -> None:
        """``retries``: extra attempts after a retryable failure; ``retry_within``: no
        attempt starts once that many seconds passed since the first; ``retry_backoff``:
        the first wait's upper bound (then doubling, each wait random below its bound)."""
        self.base_url = base_url.rstrip("/")
        self._api = f"{self.base_url}/v3"
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._timeout = timeout
        self._retries = max(0, retries)
        self._retry_within = retry_within
        self._retry_backoff = retry_backoff

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> Gns3Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ plumbing
    @staticmethod
    def _headers(token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    async def _request(
        self,
        method: str,
        path: str,
        token: str | None,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        what: str,
        project_id: str | None = None,
        raw: bool = False,
    ) -> Any:
        """GNS3's JSON answer (``None`` for an empty one); its bytes with ``raw``."""
        try:
            response = await self._send(method, path, token, json_body, content)
        except httpx.TimeoutException as exc:
            raise Gns3UnavailableError(
                f"GNS3 at {self.base_url} did not answer in time while trying to {what}.",
                RETRY_AFTER,
            ) from exc
        except httpx.TransportError as exc:
            raise Gns3UnavailableError(
                f"GNS3 at {self.base_url} cannot be reached ({type(exc).__name__}) "
                f"while trying to {what}.",
                RETRY_AFTER,
            ) from exc
        self._raise_for_status(response, what, project_id)
        if raw:
            return response.content
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    async def _in_project(
        self,
        method: str,
        project_id: str,
        path: str,
        token: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        what: str,
        raw: bool = False,
    ) -> Any:
        """:meth:`_request` on ``path`` under the project, a 404 naming the project."""
        return await self._request(
            method,
            f"/projects/{project_id}{path}",
            token,
            json_body=json_body,
            content=content,
            what=what,
            project_id=project_id,
            raw=raw,
        )

    async def _send(
        self, method: str, path: str, token: str | None, body: Any, content: bytes | None = None
    ) -> httpx.Response:
        """One request, retried where safe (see the module doc); the last failure is raised."""
        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda error: _retryable(method, error)),
            stop=stop_after_attempt(self._retries + 1) | stop_after_delay(self._retry_within),
            wait=wait_random_exponential(multiplier=self._retry_backoff, max=2.0),
            before_sleep=_log_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._http.request(
                    method,
                    f"{self._api}{path}",
                    headers=self._headers(token),
                    json=body,
                    content=content,
                    timeout=self._timeout,
                )
        raise AssertionError("unreachable: tenacity re-raises the last failure")  # pragma: no cover

    @staticmethod
    def _raise_for_status(response: httpx.Response, what: str, project_id: str | None) -> None:
        status = response.status_code
        if status < 400:
            return
        message = _gns3_message(response)
        if status == 401:
            raise AuthenticationError(f"GNS3 rejected the credentials: {message}")
        if status == 403:
            raise PermissionDeniedError(f"GNS3 refused to {what}: {message}")
        if status == 404 and project_id is not None and "Project ID" in message:
            raise ProjectNotFoundError(project_id)
        raise Gns3Error(f"GNS3 could not {what}: {message}", status)

    # ---------------------------------------------------------------------- auth
    async def authenticate(self, username: str, password: str) -> str:
        """Log in and return an access token (for tools and tests; never stored)."""
        body = await self._request(
            "POST",
            "/access/users/authenticate",
            None,
            json_body={"username": username, "password": password},
            what="authenticate",
        )
        return str(body["access_token"])

    async def current_user(self, token: str) -> JSON:
        """``/access/users/me``: username, user_id, is_superadmin, ..."""
        return dict(await self._request("GET", "/access/users/me", token, what="read the user"))

    async def user_groups(self, token: str, user_id: str) -> list[JSON]:
        """``/access/users/{user_id}/groups``: the user's GNS3 groups (GNS3 asks for the
        privilege ``Group.Audit``: a superadmin has it, a plain user does not)."""
        uuid.UUID(user_id)  # only an id reaches the URL
        return list(
            await self._request(
                "GET", f"/access/users/{user_id}/groups", token, what="read the user's groups"
            )
        )

    async def version(self) -> JSON:
        return dict(await self._request("GET", "/version", None, what="read its version"))

    # ------------------------------------------------------------------ projects
    async def project(self, token: str, project_id: str) -> JSON:
        return dict(await self._in_project("GET", project_id, "", token, what="read the project"))

    async def opened_project(self, token: str, project_id: str) -> JSON:
        """The project, or :class:`ProjectNotOpenedError` when it is closed."""
        project = await self.project(token, project_id)
        if project.get("status") != "opened":
            raise ProjectNotOpenedError(project_id)
        return project

    async def projects(self, token: str) -> list[JSON]:
        return list(await self._request("GET", "/projects", token, what="list projects"))

    async def create_project(self, token: str, name: str) -> JSON:
        return dict(
            await self._request(
                "POST", "/projects", token, json_body={"name": name}, what="create the project"
            )
        )

    async def close_project(self, token: str, project_id: str) -> None:
        await self._in_project("POST", project_id, "/close", token, what="close the project")

    async def open_project(self, token: str, project_id: str) -> JSON:
        return dict(
            await self._in_project("POST", project_id, "/open", token, what="open the project")
        )

    async def delete_project(self, token: str, project_id: str) -> None:
        await self._in_project("DELETE", project_id, "", token, what="delete the project")

    # ----------------------------------------------------------------- templates
    async def templates(self, token: str) -> list[JSON]:
        return list(await self._request("GET", "/templates", token, what="list templates"))

    # --------------------------------------------------------------------- nodes
    async def nodes(self, token: str, project_id: str) -> list[JSON]:
        return list(
            await self._in_project("GET", project_id, "/nodes", token, what="list the nodes")
        )

    async def node(self, token: str, project_id: str, node_id: str) -> JSON:
        return dict(
            await self._in_project(
                "GET", project_id, f"/nodes/{node_id}", token, what="read the node"
            )
        )

    async def create_node_from_template(
        self, token: str, project_id: str, template_id: str, *, x: int = 0, y: int = 0
    ) -> JSON:
        """Create a node; GNS3 names it from the template (rename it afterwards)."""
        return dict(
            await self._in_project(
                "POST",
                project_id,
                f"/templates/{template_id}",
                token,
                json_body={"x": x, "y": y, "compute_id": "local"},
                what="create the node",
            )
        )

    async def update_node(self, token: str, project_id: str, node_id: str, **fields: Any) -> JSON:
        return dict(
            await self._in_project(
                "PUT",
                project_id,
                f"/nodes/{node_id}",
                token,
                json_body=fields,
                what="update the node",
            )
        )

    async def delete_node(self, token: str, project_id: str, node_id: str) -> None:
        await self._in_project(
            "DELETE", project_id, f"/nodes/{node_id}", token, what="delete the node"
        )

    async def create_node(self, token: str, project_id: str, body: JSON) -> JSON:
        """Create a node from its own description (``name``, ``node_type``, ``compute_id``,
        ``properties``…), without a template."""
        return dict(
            await self._in_project(
                "POST", project_id, "/nodes", token, json_body=body, what="create the node"
            )
        )

    async def node_file(self, token: str, project_id: str, node_id: str, path: str) -> bytes:
        """A file of the node's directory (a VPCS's ``startup.vpc``), as GNS3 keeps it."""
        return bytes(
            await self._in_project(
                "GET",
                project_id,
                f"/nodes/{node_id}/files/{path}",
                token,
                what=f"read the node's file {path}",
                raw=True,
            )
        )

    async def write_node_file(
        self, token: str, project_id: str, node_id: str, path: str, content: bytes
    ) -> None:
        await self._in_project(
            "POST",
            project_id,
            f"/nodes/{node_id}/files/{path}",
            token,
            content=content,
            what=f"write the node's file {path}",
        )

    async def project_nodes_action(self, token: str, project_id: str, action: str) -> None:
        """``start``, ``stop``, ``suspend`` or ``reload`` every node of the project."""
        if action not in _NODE_ACTIONS:
            raise ValueError(f"unknown node action {action!r}")
        await self._in_project(
            "POST", project_id, f"/nodes/{action}", token, what=f"{action} the project's nodes"
        )

    async def node_action(self, token: str, project_id: str, node_id: str, action: str) -> None:
        """``start``, ``stop``, ``suspend`` or ``reload`` one node (GNS3 needs a ``{}`` body)."""
        if action not in _NODE_ACTIONS:
            raise ValueError(f"unknown node action {action!r}")
        await self._in_project(
            "POST",
            project_id,
            f"/nodes/{node_id}/{action}",
            token,
            json_body={},
            what=f"{action} the node",
        )

    # --------------------------------------------------------------------- links
    async def links(self, token: str, project_id: str) -> list[JSON]:
        return list(
            await self._in_project("GET", project_id, "/links", token, what="list the links")
        )

    async def create_link(
        self, token: str, project_id: str, ends: list[tuple[str, int, int]]
    ) -> JSON:
        """Link ``(node_id, adapter_number, port_number)`` ends."""
        body = {
            "nodes": [
                {"node_id": node_id, "adapter_number": adapter, "port_number": port}
                for node_id, adapter, port in ends
            ]
        }
        return dict(
            await self._in_project(
                "POST", project_id, "/links", token, json_body=body, what="create the link"
            )
        )

    async def create_link_from(self, token: str, project_id: str, body: JSON) -> JSON:
        """Make a link from its own description: ``nodes`` (ends with their labels), and
        ``link_id``, ``filters``, ``suspend``, ``link_style`` when given (an undo's)."""
        return dict(
            await self._in_project(
                "POST", project_id, "/links", token, json_body=body, what="create the link"
            )
        )

    async def delete_link(self, token: str, project_id: str, link_id: str) -> None:
        await self._in_project(
            "DELETE", project_id, f"/links/{link_id}", token, what="delete the link"
        )

    async def link(self, token: str, project_id: str, link_id: str) -> JSON:
        return dict(
            await self._in_project(
                "GET", project_id, f"/links/{link_id}", token, what="read the link"
            )
        )

    async def update_link(self, token: str, project_id: str, link_id: str, **fields: Any) -> JSON:
        """Change a link's ``filters`` (the whole set: GNS3 replaces it) or ``suspend``."""
        return dict(
            await self._in_project(
                "PUT",
                project_id,
                f"/links/{link_id}",
                token,
                json_body=fields,
                what="update the link",
            )
        )

    async def available_filters(self, token: str, project_id: str, link_id: str) -> list[JSON]:
        """The filters this link's type offers: ``type``, ``name``, ``description`` and
        ``parameters`` (``name``, ``type`` int|text, ``minimum``, ``maximum``, ``unit``)."""
        return list(
            await self._in_project(
                "GET",
                project_id,
                f"/links/{link_id}/available_filters",
                token,
                what="list the link's filters",
            )
        )

    # ------------------------------------------------------------------ drawings
    async def drawings(self, token: str, project_id: str) -> list[JSON]:
        return list(
            await self._in_project("GET", project_id, "/drawings", token, what="list the drawings")
        )

    async def create_drawing(self, token: str, project_id: str, body: JSON) -> JSON:
        """A drawing: ``svg`` (an SVG document as text), ``x``, ``y``, ``z``, ``rotation``."""
        return dict(
            await self._in_project(
                "POST", project_id, "/drawings", token, json_body=body, what="create the drawing"
            )
        )

    async def update_drawing(
        self, token: str, project_id: str, drawing_id: str, **fields: Any
    ) -> JSON:
        return dict(
            await self._in_project(
                "PUT",
                project_id,
                f"/drawings/{drawing_id}",
                token,
                json_body=fields,
                what="update the drawing",
            )
        )

    async def delete_drawing(self, token: str, project_id: str, drawing_id: str) -> None:
        await self._in_project(
            "DELETE", project_id, f"/drawings/{drawing_id}", token, what="delete the drawing"
        )

    # ----------------------------------------------------------------- snapshots
    async def snapshots(self, token: str, project_id: str) -> list[JSON]:
        """``name``, ``snapshot_id``, ``created_at`` (epoch seconds). GNS3 makes new
        snapshot ids whenever it loads the project (a restore included): names last."""
        return list(
            await self._in_project(
                "GET", project_id, "/snapshots", token, what="list the snapshots"
            )
        )

    async def create_snapshot(self, token: str, project_id: str, name: str) -> JSON:
        """Refused (409) while a node runs, or when the name is taken."""
        return dict(
            await self._in_project(
                "POST",
                project_id,
                "/snapshots",
                token,
                json_body={"name": name},
                what="take a snapshot",
            )
        )

    async def restore_snapshot(self, token: str, project_id: str, snapshot_id: str) -> JSON:
        """The project comes back as it was (its nodes stopped, every id new)."""
        return dict(
            await self._in_project(
                "POST",
                project_id,
                f"/snapshots/{snapshot_id}/restore",
                token,
                what="restore the snapshot",
            )
        )

    async def delete_snapshot(self, token: str, project_id: str, snapshot_id: str) -> None:
        await self._in_project(
            "DELETE", project_id, f"/snapshots/{snapshot_id}", token, what="delete the snapshot"
        )

    # ------------------------------------------------------------------- capture
    async def start_capture(
        self, token: str, project_id: str, link_id: str, file_name: str
    ) -> JSON:
        return dict(
            await self._in_project(
                "POST",
                project_id,
                f"/links/{link_id}/capture/start",
                token,
                json_body={"capture_file_name": file_name, "data_link_type": "DLT_EN10MB"},
                what="start the packet capture",
            )
            or {}
        )

    async def stop_capture(self, token: str, project_id: str, link_id: str) -> None:
        await self._in_project(
            "POST",
            project_id,
            f"/links/{link_id}/capture/stop",
            token,
            json_body={},
            what="stop the packet capture",
        )

    async def capture_stream(
        self, token: str, project_id: str, link_id: str, *, max_bytes: int = 8 << 20
    ) -> AsyncGenerator[bytes, None]:
        """The live pcap of a capturing link, chunk by chunk, at most ``max_bytes``.

        The caller bounds the time (cancel or close the iterator).
        """
        url = f"{self._api}/projects/{project_id}/links/{link_id}/capture/stream"
        try:
            async with self._http.stream(
                "GET",
                url,
                headers=self._headers(token),
                timeout=httpx.Timeout(self._timeout, read=None),
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    self._raise_for_status(response, "stream the packet capture", project_id)
                seen = 0
                async for chunk in response.aiter_bytes():
                    seen += len(chunk)
                    yield chunk
                    if seen >= max_bytes:
                        return
        except httpx.TransportError as exc:
            raise Gns3Error(
                f"The packet capture stream from GNS3 failed ({type(exc).__name__})."
            ) from exc

    # ------------------------------------------------------------- notifications
    def notifications(self, token: str, project_id: str) -> AsyncGenerator[JSON, None]:
        """The project's notification stream (``node.created``, ``link.updated``, ``ping``…).

        Endless: the caller bounds it (cancel or close the iterator).
        """
        return self._json_lines(
            f"/projects/{project_id}/notifications",
            token,
            what="follow the notifications",
            project_id=project_id,
        )

    def controller_notifications(
        self, token: str, *, on_open: Callable[[], Awaitable[None]] | None = None
    ) -> AsyncGenerator[JSON, None]:
        """The controller's notification stream (``GET /v3/notifications``): JSON lines
        ``{"action": "project.created" | "project.opened" | "project.closed" |
        "project.deleted" | "project.updated" | "compute.updated" | "ping", "event": {...}}``.

        ``on_open`` is awaited once the stream is accepted, before any event is read.
        Endless: the caller bounds it (cancel or close the iterator).
        """
        return self._json_lines(
            "/notifications",
            token,
            what="follow the controller's notifications",
            on_open=on_open,
        )

    async def _json_lines(
        self,
        path: str,
        token: str,
        *,
        what: str,
        project_id: str | None = None,
        on_open: Callable[[], Awaitable[None]] | None = None,
    ) -> AsyncGenerator[JSON, None]:
        """A stream of JSON lines, each object yielded (anything else skipped), with no read
        timeout; a broken connection is :class:`Gns3UnavailableError`."""
        try:
            async with self._http.stream(
                "GET",
                f"{self._api}{path}",
                headers=self._headers(token),
                timeout=httpx.Timeout(self._timeout, read=None),
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    self._raise_for_status(response, what, project_id)
                if on_open is not None:
                    await on_open()
                async for line in response.aiter_lines():
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(event, dict):
                        yield event
        except httpx.TransportError as exc:
            raise Gns3UnavailableError(
                f"The notification stream from GNS3 at {self.base_url} failed "
                f"({type(exc).__name__}).",
                RETRY_AFTER,
            ) from exc
