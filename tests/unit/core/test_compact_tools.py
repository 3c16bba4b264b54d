"""The compact tool set (issue 30): everyday tools always, others when the message cues
them, short descriptions and lean schemas; the tool's behaviour is not touched."""

from __future__ import annotations

from copilot_core import ToolSpec
from copilot_core._compact import compact_tools
from copilot_core.ports import ToolEffect

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "device_type": {
            "type": "string",
            "description": "the platform, when GNS3 cannot tell it (vpcs, cisco_ios); always",
            "title": "Device Type",
        },
        "action": {"type": "string", "enum": ["get", "set"], "default": "get"},
        "title": {"type": "string", "description": "a property named title stays"},
    },
    "required": ["action"],
}


def specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            "reader",
            "Read the lab. Every node, every link, in detail; more prose here.",
            SCHEMA,
            mutates_topology=False,
            effect=ToolEffect.READ_ONLY,
        ),
        ToolSpec("capture", "Capture packets.", brief="Capture.", everyday=False,
                 cues=("captur", "pcap")),
        ToolSpec("mcp__weather", "An MCP server's tool, with no profile."),
    ]  # fmt: skip


def test_everyday_tools_always_and_a_rarer_one_only_when_cued() -> None:
    assert [s.name for s in compact_tools(specs(), "Add two PCs")] == ["reader", "mcp__weather"]
    cued = compact_tools(specs(), "Please CAPTURE on R1-R2")
    assert [s.name for s in cued] == ["reader", "capture", "mcp__weather"]


def test_descriptions_shrink_to_a_sentence_and_schemas_lose_their_prose() -> None:
    reader, capture = compact_tools(specs(), "a pcap please")[:2]
    assert reader.description == "Read the lab."
    assert capture.description == "Capture."  # its brief
    params = reader.parameters
    assert "additionalProperties" not in params
    device = params["properties"]["device_type"]
    assert device == {"type": "string", "description": "the platform, when GNS3 cannot tell it"}
    assert params["properties"]["action"] == {"type": "string", "enum": ["get", "set"]}
    assert params["properties"]["title"]["description"] == "a property named title stays"
    assert params["required"] == ["action"]
    # What the tool is and does is kept.
    assert reader.effect is ToolEffect.READ_ONLY and reader.mutates_topology is False
    assert SCHEMA["additionalProperties"] is False  # the full spec is not changed
