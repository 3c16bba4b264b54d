"""The lab as the page draws it: ``/v3/copilot/projects/{project_id}/topology`` and its
live updates, ``…/topology/events``.

GNS3's nodes and links are shaped here for drawing (positions, a symbol's kind, port
short names, a console address, links to GNS3's web UI). The events route relays GNS3's
notification stream of the project as Server-Sent Events, one per change of a node, a
link or the project (``{"type": "topology", "action": "node.updated", "id": …}``); the
page reads the topology again after them. GNS3's ``ping`` (every 5 s) becomes a
``heartbeat`` that keeps proxies from closing the connection. The stream ends when the
page leaves (GNS3's stream is closed then) or when GNS3's does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any
from urllib.parse import quote, urlsplit

import structlog
from litestar import Controller, get
from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.web._contracts import Gns3Directory
from adapters.web._openapi import errors, sse_response_spec
from adapters.web._responses import LinkBody, LinkEnd, NodeBody, PortBody, TopologyBody
from adapters.web._scopes import ProjectScope, ids_in_path, scopes
from adapters.web._sse import SSE_HEADERS
from adapters.web._state import Injected

__all__ = ["TOPOLOGY_EVENT_SCHEMA", "LabController", "node_kind", "topology_body"]

log = structlog.get_logger("adapters.web")

#: Words of a symbol's file name, then node types, and the kind drawn for them.
_SYMBOL_WORDS = (
    ("firewall", "firewall"),
    ("asa", "firewall"),
    ("router", "router"),
    ("switch", "switch"),
    ("hub", "hub"),
    ("cloud", "cloud"),
    ("nat", "nat"),
    ("server", "server"),
    ("client", "computer"),
    ("computer", "computer"),
    ("vpcs", "computer"),
    ("pc", "computer"),
    ("host", "computer"),
)
_NODE_TYPES = {
    "vpcs": "computer",
    "dynamips": "router",
    "iou": "router",
    "ethernet_switch": "switch",
    "atm_switch": "switch",
    "frame_relay_switch": "switch",
    "ethernet_hub": "hub",
    "cloud": "cloud",
    "nat": "nat",
    "docker": "computer",
}
_RELAYED = ("node.", "link.", "project.")

#: The data of one event of ``…/topology/events`` (its OpenAPI schema).
TOPOLOGY_EVENT_SCHEMA: dict[str, Any] = {
    "title": "TopologyEvent",
    "description": "ready (the stream follows GNS3), topology (GNS3 reported a change: "
    "read the topology again) or heartbeat.",
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"type": "string", "enum": ["ready", "topology", "heartbeat"]},
        "action": {"type": "string", "description": "GNS3's action: node.updated, link.created…"},
        "id": {"type": ["string", "null"], "description": "The node, link or project changed."},
    },
}


def node_kind(node: Mapping[str, Any]) -> str:
    """What to draw for a node: from its symbol's file name, else its node type."""
    symbol = str(node.get("symbol") or "").rsplit("/", 1)[-1].lower()
    for word, kind in _SYMBOL_WORDS:
        if word in symbol:
            return kind
    return _NODE_TYPES.get(str(node.get("node_type")), "other")


def _int(value: Any, default: int = 0) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def _ports(node: Mapping[str, Any], used: set[tuple[str, int, int]]) -> list[PortBody]:
    node_id = str(node.get("node_id"))
    return [
        PortBody(
            name=str(port.get("name", "")),
            short_name=str(port.get("short_name") or port.get("name", "")),
            adapter_number=_int(port.get("adapter_number")),
            port_number=_int(port.get("port_number")),
            in_use=(node_id, _int(port.get("adapter_number")), _int(port.get("port_number")))
            in used,
        )
        for port in node.get("ports") or ()
        if isinstance(port, Mapping)
    ]


def _console(node: Mapping[str, Any]) -> str | None:
    kind, port = node.get("console_type"), node.get("console")
    if kind in (None, "none") or not isinstance(port, int):
        return None
    host = str(node.get("console_host") or "127.0.0.1")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{kind}://{host}:{port}"


def _web_links(root: str | None, project_id: str) -> tuple[str | None, str | None]:
    """The project in GNS3's web UI (its direct link, which finds or adds the controller
    by address), and the prefix of a node's page (the web UI's first controller)."""
    if not root:
        return None, None
    parts = urlsplit(root)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or "127.0.0.1"
    project = f"{root}/controller/{quote(host)}/{port}/project/{project_id}"
    return project, f"{root}/controller/1/project/{project_id}/nodes/"


def topology_body(project_id: str, raw: Mapping[str, Any]) -> TopologyBody:
    """The page's view of GNS3's ``project``, ``nodes`` and ``links``."""
    project = raw.get("project") or {}
    nodes = [n for n in raw.get("nodes") or () if isinstance(n, Mapping)]
    links = [link for link in raw.get("links") or () if isinstance(link, Mapping)]
    used = {
        (str(end.get("node_id")), _int(end.get("adapter_number")), _int(end.get("port_number")))
        for link in links
        for end in link.get("nodes") or ()
        if isinstance(end, Mapping)
    }
    by_id = {str(node.get("node_id")): node for node in nodes}
    project_link, node_prefix = _web_links(raw.get("web_ui"), project_id)
    node_bodies = []
    for node in sorted(nodes, key=lambda n: str(n.get("name"))):
        body_ports = _ports(node, used)
        console = _console(node)
        node_bodies.append(
            NodeBody(
                node_id=str(node.get("node_id")),
                name=str(node.get("name", "")),
                node_type=str(node.get("node_type", "")),
                kind=node_kind(node),
                status=str(node.get("status", "unknown")),
                x=_int(node.get("x")),
                y=_int(node.get("y")),
                width=_int(node.get("width"), 60),
                height=_int(node.get("height"), 60),
                console=console,
                ports=body_ports,
                web_ui=f"{node_prefix}{node.get('node_id')}" if node_prefix and console else None,
            )
        )
    link_bodies = []
    for link in links:
        ends = []
        for end in link.get("nodes") or ():
            if not isinstance(end, Mapping):
                continue
            node = by_id.get(str(end.get("node_id")), {})
            adapter, number = _int(end.get("adapter_number")), _int(end.get("port_number"))
            port = next(
                (
                    p
                    for p in _ports(node, used)
                    if (p.adapter_number, p.port_number) == (adapter, number)
                ),
                None,
            )
            ends.append(
                LinkEnd(
                    node_id=str(end.get("node_id")),
                    node=str(node.get("name", "?")),
                    port=port.short_name if port else f"{adapter}/{number}",
                )
            )
        link_bodies.append(
            LinkBody(
                link_id=str(link.get("link_id")),
                ends=ends,
                capturing=bool(link.get("capturing")),
                suspended=bool(link.get("suspend")),
            )
        )
    return TopologyBody(
        project_id=project_id,
        name=str(project.get("name", "")),
        status=str(project.get("status", "unknown")),
        web_ui=project_link,
        nodes=node_bodies,
        links=link_bodies,
    )


async def _relay(
    directory: Gns3Directory, token: str, project_id: str
) -> AsyncIterator[ServerSentEventMessage]:
    """GNS3's notifications of the project as the page's events (see the module docstring)."""
    yield ServerSentEventMessage(data=json.dumps({"type": "ready"}))
    async with aclosing(directory.notifications(token, project_id)) as events:  # type: ignore[type-var]
        async for event in events:
            action = str(event.get("action", ""))
            if action == "ping":
                yield ServerSentEventMessage(data=json.dumps({"type": "heartbeat"}))
            elif action.startswith(_RELAYED):
                body = event.get("event")
                about = body if isinstance(body, Mapping) else {}
                ident = about.get("node_id") or about.get("link_id") or about.get("project_id")
                data = {"type": "topology", "action": action, "id": ident}
                yield ServerSentEventMessage(data=json.dumps(data))
    log.info("topology_events_ended", project_id=project_id)


class LabController(Controller):
    path = "/projects/{project_id:str}"
    tags = ["lab"]  # noqa: RUF012 - Litestar's declared attribute
    dependencies = scopes()
    guards = [ids_in_path]  # noqa: RUF012 - Litestar's declared attribute

    @get("/topology", operation_id="getTopology", responses=errors(404, 409, 501))
    async def topology(
        self, project: Injected[ProjectScope], directory: Injected[Gns3Directory]
    ) -> TopologyBody:
        """The open project's nodes (position, symbol kind, status, console, ports) and
        links (port at each end), for drawing; links to GNS3's web UI."""
        raw = await directory.topology(project.caller.token, project.project_id)
        return topology_body(project.project_id, raw)

    @get(
        "/topology/events",
        operation_id="followTopology",
        responses={
            200: sse_response_spec(
                "A 'ready' event, then one 'topology' event ({action, id}) per change GNS3 "
                "reports for the project's nodes, links or the project itself, and a "
                "'heartbeat' on GNS3's pings; until the client leaves or GNS3 ends it."
            ),
            **errors(404, 409, 501),
        },
    )
    async def events(
        self, project: Injected[ProjectScope], directory: Injected[Gns3Directory]
    ) -> ServerSentEvent:
        """Follow GNS3's changes to the open project (Server-Sent Events)."""
        return ServerSentEvent(
            _relay(directory, project.caller.token, project.project_id),
            headers=dict(SSE_HEADERS),
        )
