"""The package's public surface and the tool catalogue per mode."""

from __future__ import annotations

import adapters.gns3 as gns3
from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode

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
]
AUTOMATION_ONLY = [
    "stop_gns3_node",
    "suspend_gns3_node",
    "execute_multiple_device_config_commands",
    "execute_vpcs_commands",
]
MUTATING = {
    "create_gns3_node",
    "create_gns3_link",
    "start_gns3_node",
    "update_gns3_node_name",
    "stop_gns3_node",
    "suspend_gns3_node",
}


def test_exported_names_are_exactly_all():
    public = {name for name in dir(gns3) if not name.startswith("_")}
    assert len(set(gns3.__all__)) == len(gns3.__all__)
    assert public - {"skills"} == set(gns3.__all__)


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
