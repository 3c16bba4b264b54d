"""The undo's :class:`~adapters.gns3.restore._undo.apply.TopologyPort` over GNS3's API."""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.gns3.rest import Gns3Client
from adapters.gns3.restore._undo.record import kept_drawing, kept_link, kept_node, port_names

__all__ = ["Gns3TopologyPort", "read_kept"]

JSON = dict[str, Any]


async def read_kept(client: Gns3Client, token: str, project_id: str) -> JSON:
    """The project's nodes, links and drawings as a restore point keeps them, by id."""
    nodes, links, drawings = await asyncio.gather(
        client.nodes(token, project_id),
        client.links(token, project_id),
        client.drawings(token, project_id),
    )
    return {
        "nodes": {str(n.get("node_id")): kept_node(n) for n in nodes},
        "links": {str(k.get("link_id")): kept_link(k, port_names(nodes)) for k in links},
        "drawings": {str(d.get("drawing_id")): kept_drawing(d) for d in drawings},
    }


class Gns3TopologyPort:
    def __init__(self, client: Gns3Client, token: str, project_id: str) -> None:
        self.client = client
        self.token = token
        self.project_id = project_id

    async def read(self) -> JSON:
        return await read_kept(self.client, self.token, self.project_id)

    async def delete_link(self, link_id: str) -> None:
        await self.client.delete_link(self.token, self.project_id, link_id)

    async def delete_node(self, node_id: str) -> None:
        await self.client.delete_node(self.token, self.project_id, node_id)

    async def create_node(self, body: JSON) -> JSON:
        return await self.client.create_node(self.token, self.project_id, body)

    async def create_link(self, body: JSON) -> JSON:
        return await self.client.create_link_from(self.token, self.project_id, body)

    async def update_node(self, node_id: str, fields: JSON) -> JSON:
        return await self.client.update_node(self.token, self.project_id, node_id, **fields)

    async def update_link(self, link_id: str, fields: JSON) -> JSON:
        return await self.client.update_link(self.token, self.project_id, link_id, **fields)

    async def node_action(self, node_id: str, action: str) -> None:
        await self.client.node_action(self.token, self.project_id, node_id, action)

    async def delete_drawing(self, drawing_id: str) -> None:
        await self.client.delete_drawing(self.token, self.project_id, drawing_id)

    async def create_drawing(self, body: JSON) -> JSON:
        return await self.client.create_drawing(self.token, self.project_id, body)

    async def update_drawing(self, drawing_id: str, fields: JSON) -> JSON:
        return await self.client.update_drawing(self.token, self.project_id, drawing_id, **fields)
