"""The package's public surface and the tool catalogue per mode."""

from __future__ import annotations

from types import ModuleType

from pydantic import BaseModel

import adapters.gns3 as gns3
from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode
from copilot_core.ports import ChangePreview

TEACHING_TOOLS = [
    "gns3_topology_reader",
    "get_gns3_templates",
    "create_gns3_node",
    "create_gns3_link",
    "start_gns3_node",
    "update_gns3_node_name",
    "execute_multiple_device_commands",
    "packet_capture",
    "device_skills",
    "verify_intent",
    "standing_intent",
    "capture_lab_state",
    "diff_lab_state",
    "gns3_snapshots",
    "gns3_link_filters",
]
AUTOMATION_ONLY = [
    "stop_gns3_node",
    "suspend_gns3_node",
    "start_all_gns3_nodes",
    "stop_all_gns3_nodes",
    "wait_for_console",
    "delete_gns3_node",
    "delete_gns3_link",
    "execute_multiple_device_config_commands",
    "execute_vpcs_commands",
    "gns3_annotate",
    "restore_point",
]
MUTATING = {
    "create_gns3_node",
    "create_gns3_link",
    "start_gns3_node",
    "update_gns3_node_name",
    "stop_gns3_node",
    "suspend_gns3_node",
    "start_all_gns3_nodes",
    "stop_all_gns3_nodes",
    "delete_gns3_node",
    "delete_gns3_link",
    "gns3_snapshots",
    "gns3_link_filters",
    "restore_point",
}


def test_exported_names_are_exactly_all():
    public = {name for name in dir(gns3) if not name.startswith("_")}
    # its sub-packages (and ``testing``, once some test imported it) are attributes of the
    # package as Python's import system makes them, not names it exports
    packages = {name for name in public if isinstance(getattr(gns3, name), ModuleType)}
    assert len(set(gns3.__all__)) == len(gns3.__all__)
    assert {"console", "drills", "lab", "model", "rest", "restore", "tools"} <= packages
    assert public - packages == set(gns3.__all__)


def test_tools_per_mode_and_their_schemas():
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    teaching = executor.specs(CopilotMode.TEACHING_ASSISTANT)
    automation = executor.specs(CopilotMode.LAB_AUTOMATION_ASSISTANT)
    assert [s.name for s in teaching] == TEACHING_TOOLS
    assert [s.name for s in automation] == TEACHING_TOOLS + AUTOMATION_ONLY
    assert {s.name for s in automation if s.mutates_topology} == MUTATING
    for spec in automation:
        function = spec.to_openai()["function"]
        assert function["parameters"]["type"] == "object"
        assert len(spec.description) > 20
    shapes = {s.name: s.parameters for s in automation}
    item = shapes["execute_multiple_device_config_commands"]["properties"]["device_configs"][
        "items"
    ]
    assert item["required"] == ["device_name", "config_commands"]
    link = shapes["create_gns3_link"]["properties"]["links"]["items"]
    assert link["required"] == ["node1", "port1", "node2", "port2"]
    assert shapes["packet_capture"]["properties"]["action"]["enum"] == ["start", "stop", "analyze"]


def _keywords(node: object, found: set[str]) -> set[str]:
    """Every schema keyword used anywhere (property names are not keywords)."""
    if isinstance(node, list):
        for value in node:
            _keywords(value, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key == "properties":
                for prop in value.values():
                    _keywords(prop, found)
            else:
                _keywords(value, found)
    return found


def test_schemas_are_derived_from_the_argument_models_and_cleaned():
    executor = Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:9"),
        settings=gns3.Gns3ToolSettings(max_batch=7, max_commands=9, capture_max_seconds=12),
    )
    specs = {s.name: s.parameters for s in executor.specs(CopilotMode.LAB_AUTOMATION_ASSISTANT)}
    for name, schema in specs.items():
        used = _keywords(schema, set())
        assert not used & {"$ref", "$defs", "title", "default", "anyOf", "x-limit"}, name
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, name
    show = specs["execute_multiple_device_commands"]["properties"]["device_configs"]
    assert show["maxItems"] == 7
    assert show["minItems"] == 1
    assert show["items"]["properties"]["commands"]["maxItems"] == 9
    assert show["items"]["properties"]["device_name"] == {
        "type": "string",
        "description": "node name",
    }
    capture = specs["packet_capture"]
    assert capture["properties"]["seconds"] == {
        "type": "number",
        "minimum": 1,
        "maximum": 12,
        "description": "analyze only: how long to read the capture",
    }
    assert "seconds" not in capture["required"]
    assert "at most 12" in next(
        s.description
        for s in executor.specs(CopilotMode.TEACHING_ASSISTANT)
        if s.name == "packet_capture"
    )


def test_a_limit_from_the_settings_is_enforced_and_named():
    tool = gns3.gns3_tools().get("start_gns3_node")
    assert tool is not None
    settings = gns3.Gns3ToolSettings(max_batch=2)
    refused = tool.parse({"node_names": ["A", "B", "C"]}, settings)
    assert not isinstance(refused, BaseModel)
    assert refused.output["fields"] == [
        {"field": "node_names", "problem": "Value error, at most 2 items (this server's limit)"}
    ]
    accepted = tool.parse({"node_names": [" A ", "", "A", "B"]}, settings)
    assert isinstance(accepted, BaseModel)
    assert accepted.node_names == ["A", "B"]  # type: ignore[attr-defined]


def test_the_registry_describes_every_tool_for_other_consumers():
    registry = gns3.gns3_tools()
    assert [tool.name for tool in registry] == TEACHING_TOOLS + AUTOMATION_ONLY
    for tool in registry:
        assert issubclass(tool.arguments, BaseModel)
        assert callable(tool.handler)
        assert tool.modes
        assert tool.arguments.model_validate(tool.example) is not None, tool.name
    assert {tool.name for tool in registry if tool.mutates_topology} == MUTATING
    assert [t.name for t in registry if not t.needs_gns3] == ["device_skills", "standing_intent"]


def test_each_tool_says_what_a_call_would_change_in_the_lab():
    registry = gns3.gns3_tools()
    automation = CopilotMode.LAB_AUTOMATION_ASSISTANT

    def change(name: str, args: dict[str, object]) -> ChangePreview | None:
        tool = registry.get(name)
        assert tool is not None
        if tool.change is None:  # a read-only tool: no preview to make
            return None
        return tool.change(tool.arguments.model_validate(args), automation)

    assert change("gns3_topology_reader", {}) is None
    assert change("start_gns3_node", {"node_names": ["R1"]}) == ChangePreview(
        "start R1", topology=["start R1"]
    )
    assert change("stop_gns3_node", {"node_names": ["R1", "PC1"]}) == ChangePreview(
        "stop R1, PC1", topology=["stop R1", "stop PC1"]
    )
    link = change(
        "create_gns3_link",
        {"links": [{"node1": "R1", "port1": "g0/0", "node2": "PC1", "port2": "e0"}]},
    )
    assert link == ChangePreview("create 1 link(s)", topology=["link R1 g0/0 <-> PC1 e0"])
    config = change(
        "execute_multiple_device_config_commands",
        {
            "device_configs": [
                {"device_name": "R1", "config_commands": ["interface g0/0", "no shut"]}
            ]
        },
    )
    assert config is not None
    assert (config.summary, config.devices) == (
        "configure R1",
        {"R1": ["interface g0/0", "no shut"]},
    )
    assert [(c.command, c.changes) for c in config.commands["R1"]] == [
        ("interface g0/0", True),
        ("no shut", True),
    ]
    reading = {"device_configs": [{"device_name": "PC1", "commands": ["show ip"]}]}
    assert change("execute_vpcs_commands", reading) is None
    setting = {
        "device_configs": [{"device_name": "PC1", "commands": ["show ip", "ip 10.0.0.2/24"]}]
    }
    preview = change("execute_vpcs_commands", setting)
    assert preview is not None
    assert (preview.summary, preview.devices) == (
        "run commands on PC1",
        {"PC1": ["ip 10.0.0.2/24"]},
    )
    assert [(c.command, c.changes) for c in preview.commands["PC1"]] == [
        ("show ip", False),
        ("ip 10.0.0.2/24", True),
    ]
