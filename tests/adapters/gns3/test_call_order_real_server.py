"""One reply that creates two VPCS and links them, run through the gate on a real
gns3-server (issue 40, item 2): the link waits for both creates, so the lab ends with
both nodes and the link (run at once, the link failed with "No node named 'PC1'")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import ParsedToolCall, ToolGate
from copilot_core.events import ToolEndEvent
from tests.adapters.gns3.conftest import make_context

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]


def call(n: int, name: str, arguments: dict[str, Any]) -> ParsedToolCall:
    return ParsedToolCall.parse(f"call-{n}", name, json.dumps(arguments))


async def test_create_two_vpcs_and_link_them_in_one_reply(
    gns3_client: Gns3Client, admin_token: str, project_id: str
) -> None:
    executor = Gns3ToolExecutor(gns3_client, runner=ConsoleRunner(command_timeout=1.0))
    reply = [
        call(1, "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}),
        call(2, "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC2"}]}),
        call(
            3,
            "create_gns3_link",
            {"links": [{"node1": "PC1", "port1": "e0", "node2": "PC2", "port2": "e0"}]},
        ),
    ]
    ctx = make_context(project_id, admin_token)
    ends = {
        e.tool_call_id: e
        async for e in ToolGate(executor).run(reply, ctx)
        if isinstance(e, ToolEndEvent)
    }
    assert [ends[c.id].status for c in reply] == ["success"] * 3, {
        k: e.output for k, e in ends.items()
    }
    nodes = await gns3_client.nodes(admin_token, project_id)
    links = await gns3_client.links(admin_token, project_id)
    assert sorted(str(n["name"]) for n in nodes) == ["PC1", "PC2"]
    ids = {str(n["node_id"]): str(n["name"]) for n in nodes}
    assert [sorted(ids[str(end["node_id"])] for end in link["nodes"]) for link in links] == [
        ["PC1", "PC2"]
    ]
