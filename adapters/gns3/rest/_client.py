"""``Gns3Client``: the GNS3 v3 REST API over httpx, on behalf of the caller: users,
projects, templates, nodes and their files, links and their filters, drawings,
snapshots, packet captures and the notification streams. Every call takes the caller's
token; the HTTP plumbing (retries, errors) is :class:`~adapters.gns3.rest._gns3_http.Gns3Http`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx

from adapters.gns3.rest._gns3_http import JSON, Gns3Http
from copilot_core.errors import Gns3Error, ProjectNotOpenedError

__all__ = ["Gns3Client"]

#: What GNS3 does to a node, or to all of a project's nodes, on request.
_NODE_ACTIONS = frozenset({"start", "stop", "suspend", "reload"})


class Gns3Client(Gns3Http):
    """A thin async client of the GNS3 v3 API; every call takes the caller's token.

    ``base_url`` is the server's root (``http://127.0.0.1:3080``); ``/v3`` is added.
    Pass ``http`` to share a connection pool (its lifetime is then yours);
    otherwise :meth:`aclose` closes the client's own.
    """

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
