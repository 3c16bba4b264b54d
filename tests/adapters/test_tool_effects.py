"""Every tool the copilot offers declares its effect, and the gate asks from it.

The tools are enumerated as the agent and MCP clients see them: the GNS3 catalogue and
the tools of a real MCP server (the SDK-written fake, as a child process), in both
modes, through the composite executor the service builds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from adapters.gns3.tools._executor import CATALOGUE
from adapters.mcp import CompositeToolExecutor
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolGate,
    ToolResult,
    ToolStatus,
)
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ToolEffect,
    ToolExecutor,
)
from tests.adapters.mcp.conftest import connected, stdio_config
from tests.adapters.mcp.test_tool_source import answered as drive

pytestmark = pytest.mark.timeout(60)

MODES = tuple(CopilotMode)
LAB = CopilotMode.LAB_AUTOMATION_ASSISTANT

#: The declared effect of every GNS3 tool (the table in docs/gns3.md).
GNS3_EFFECTS = {
    "gns3_topology_reader": ToolEffect.READ_ONLY,
    "get_gns3_templates": ToolEffect.READ_ONLY,
    "create_gns3_node": ToolEffect.TOPOLOGY_CHANGE,
    "create_gns3_link": ToolEffect.TOPOLOGY_CHANGE,
    "start_gns3_node": ToolEffect.NODE_STATE,
    "update_gns3_node_name": ToolEffect.TOPOLOGY_CHANGE,
    "execute_multiple_device_commands": ToolEffect.DEVICE_CHANGE,
    "packet_capture": ToolEffect.CAPTURE,
    "device_skills": ToolEffect.READ_ONLY,
    "verify_intent": ToolEffect.READ_ONLY,
    "standing_intent": ToolEffect.EXTERNAL_CHANGE,
    "capture_lab_state": ToolEffect.READ_ONLY,
    "diff_lab_state": ToolEffect.READ_ONLY,
    "gns3_snapshots": ToolEffect.TOPOLOGY_CHANGE,
    "gns3_link_filters": ToolEffect.TOPOLOGY_CHANGE,
    "stop_gns3_node": ToolEffect.NODE_STATE,
    "suspend_gns3_node": ToolEffect.NODE_STATE,
    "start_all_gns3_nodes": ToolEffect.NODE_STATE,
    "stop_all_gns3_nodes": ToolEffect.NODE_STATE,
    "wait_for_console": ToolEffect.READ_ONLY,
    "delete_gns3_node": ToolEffect.TOPOLOGY_CHANGE,
    "delete_gns3_link": ToolEffect.TOPOLOGY_CHANGE,
    "execute_multiple_device_config_commands": ToolEffect.DEVICE_CHANGE,
    "execute_vpcs_commands": ToolEffect.DEVICE_CHANGE,
    "gns3_annotate": ToolEffect.TOPOLOGY_CHANGE,
    "restore_point": ToolEffect.TOPOLOGY_CHANGE,
}


def context(approval: ApprovalPolicy = ApprovalPolicy.CHANGES) -> ToolContext:
    return ToolContext("p", "u", "s", LAB, AbortToken(), "t", approval=approval)


async def answered(
    gate: ToolGate, approver: Any, call: ParsedToolCall, ctx: ToolContext
) -> ToolResult:
    return await drive(gate, call, ctx, approver)


def undeclared(tools: ToolExecutor) -> list[str]:
    """Every offered tool (in every mode) that declares no effect."""
    return sorted(
        {spec.name for mode in MODES for spec in tools.specs(mode) if spec.effect is None}
    )


async def test_every_offered_tool_declares_its_effect(tmp_path: Path) -> None:
    async with (
        Gns3Client("http://127.0.0.1:9", timeout=1) as client,
        connected(stdio_config("lab", tools=["*"])) as mcp,
    ):
        gns3 = Gns3ToolExecutor(client)
        tools = CompositeToolExecutor(gns3, mcp)
        offered = {spec.name: spec.effect for mode in MODES for spec in tools.specs(mode)}

        assert undeclared(tools) == []
        assert {name: offered[name] for name in CATALOGUE} == GNS3_EFFECTS
        assert {name for name in offered if name.startswith("lab__")} == {
            "lab__add",
            "lab__big",
            "lab__echo",
            "lab__fail",
            "lab__hang",
            "lab__secret",
            "lab__write_note",
        }


async def test_the_enumeration_fails_on_a_tool_without_an_effect() -> None:
    from copilot_core.testing import FakeToolExecutor

    tools = FakeToolExecutor().add("show_ip", lambda args, ctx: "ok")
    spec = tools.tools["show_ip"].spec
    tools.tools["show_ip"].spec = type(spec)(spec.name, spec.description, spec.parameters)

    assert undeclared(tools) == ["show_ip"]


async def test_mcp_annotations_map_to_effects_and_an_unannotated_tool_is_a_change(
    tmp_path: Path,
) -> None:
    plain = stdio_config("plain", tools=["*"])
    operator = stdio_config(
        "op", tools=["*"], read_only=["write_note"], changing=["echo"], modes=[LAB.value]
    )
    async with connected(plain, operator) as source:
        effects = {spec.name: spec.effect for spec in source.specs(LAB)}

    assert effects["plain__echo"] is ToolEffect.READ_ONLY  # readOnlyHint
    assert effects["plain__write_note"] is ToolEffect.EXTERNAL_CHANGE  # says nothing
    assert effects["op__write_note"] is ToolEffect.READ_ONLY  # the operator vouches for it
    assert effects["op__echo"] is ToolEffect.EXTERNAL_CHANGE  # the operator's `changing` wins


async def test_an_unannotated_mcp_tool_waits_for_approval_under_changes(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    asked: list[ApprovalRequest] = []

    async def reject(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(False, user_id="u")

    config = stdio_config("lab", tools=["*"], env={"FAKE_MCP_NOTES": str(notes)})
    async with connected(config) as source:
        gate = ToolGate(source)
        read = await answered(gate, reject, call("lab__echo", text="x"), context())
        written = await answered(gate, reject, call("lab__write_note", note="n"), context())

    assert read.status is ToolStatus.SUCCESS
    assert written.status is ToolStatus.REJECTED
    assert [request.tool_name for request in asked] == ["lab__write_note"]
    assert not notes.exists()


def call(tool: str, **arguments: Any) -> ParsedToolCall:
    return ParsedToolCall.parse(f"call-{tool}", tool, json.dumps(arguments))


CAPTURE = {"node1": "R1", "port1": "Gi0/0", "node2": "PC1", "port2": "e0"}

#: Under ``changes`` these calls ask (rejected here, so GNS3 is never reached) ...
ASKING: list[tuple[str, dict[str, Any]]] = [
    ("start_gns3_node", {"node_names": ["R1"]}),
    ("stop_gns3_node", {"node_names": ["R1"]}),
    ("suspend_gns3_node", {"node_names": ["R1"]}),
    ("start_all_gns3_nodes", {}),
    ("stop_all_gns3_nodes", {}),
    ("gns3_snapshots", {"action": "create", "name": "base"}),
    ("gns3_snapshots", {"action": "restore", "name": "base"}),
    ("packet_capture", CAPTURE | {"action": "start"}),
    ("packet_capture", CAPTURE | {"action": "stop"}),
    ("gns3_link_filters", {"node1": "R1", "node2": "PC1", "action": "clear"}),
    ("create_gns3_node", {"nodes": [{"template_name": "VPCS"}]}),
    ("execute_multiple_device_config_commands", {
        "device_configs": [{"device_name": "R1", "config_commands": ["hostname X"]}]
    }),
]  # fmt: skip
#: ... and these do not (they reach the unreachable GNS3 and fail there).
NOT_ASKING: list[tuple[str, dict[str, Any]]] = [
    ("gns3_topology_reader", {}),
    ("gns3_snapshots", {"action": "list"}),
    ("packet_capture", CAPTURE | {"action": "analyze", "seconds": 1}),
    ("gns3_link_filters", {"node1": "R1", "node2": "PC1", "action": "get"}),
    ("wait_for_console", {"node_names": ["R1"]}),
]


async def test_under_changes_node_state_snapshots_captures_and_filters_ask() -> None:
    asked: list[str] = []

    async def reject(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool_name)
        assert request.preview.topology or request.preview.devices, request.tool_name
        return ApprovalDecision(False, user_id="u")

    async with Gns3Client("http://127.0.0.1:9", timeout=1, retries=0) as client:
        gate = ToolGate(Gns3ToolExecutor(client))
        for name, args in ASKING:
            result = await answered(
                gate,
                reject,
                ParsedToolCall.parse(f"call-{name}", name, json.dumps(args)),
                context(),
            )
            assert result.status is ToolStatus.REJECTED, name
        assert asked == [name for name, _ in ASKING]
        for name, args in NOT_ASKING:
            result = await answered(
                gate,
                reject,
                ParsedToolCall.parse(f"call-{name}", name, json.dumps(args)),
                context(),
            )
            assert result.status is ToolStatus.ERROR, (name, result.output)
        assert asked == [name for name, _ in ASKING]
