"""Every GNS3 tool names its calls in plain words, from the call's arguments, as the
page's tool card shows them (``ToolSpec.title``; the service computes it, never the
model). Arguments that do not validate give no title (the call fails anyway)."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from adapters.gns3.tools._executor import CATALOGUE
from adapters.gns3.tools._titles import TITLES, listed
from copilot_core import CopilotMode, ToolSpec


@pytest.fixture(scope="module")
def specs() -> dict[str, ToolSpec]:
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    return {spec.name: spec for spec in executor.specs(CopilotMode.LAB_AUTOMATION_ASSISTANT)}


def title(specs: dict[str, ToolSpec], tool: str, arguments: dict[str, Any]) -> str | None:
    titler = specs[tool].title
    assert titler is not None, tool
    return titler(arguments)


def test_every_tool_of_the_catalogue_names_its_example_call_in_words(
    specs: dict[str, ToolSpec],
) -> None:
    assert set(TITLES) == set(CATALOGUE) == set(specs)
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    for tool in executor.registry:
        named = title(specs, tool.name, tool.example)
        assert named, tool.name
        assert "_" not in named, (tool.name, named)  # words, not the tool's name
        assert named[0].isupper() and len(named) <= 80, named


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("gns3_topology_reader", {}, "Read the lab's topology"),
        (
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "R1", "commands": ["show ip route", "sh run"]}]},
            "Run 2 show commands on R1",
        ),
        (
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "R1", "commands": ["show ip ospf neighbor"]}]},
            "Run “show ip ospf neighbor” on R1",
        ),
        (
            "execute_multiple_device_commands",
            {
                "device_configs": [
                    {"device_name": "R1", "commands": ["show version"]},
                    {"device_name": "R2", "commands": ["ping 10.0.0.1"]},
                ]
            },
            "Run 2 commands on R1 and R2",
        ),
        (
            "verify_intent",
            {
                "checks": [
                    {"kind": "reachability", "from": "PC1", "to": "PC2"},
                    {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"},
                    {"kind": "reachability", "from": "PC2", "to": "PC1"},
                ]
            },
            "Verify 3 checks",
        ),
        (
            "packet_capture",
            {"action": "start", "node1": "R1", "port1": "e0", "node2": "PC1", "port2": "e0"},
            "Capture packets on R1 e0 – PC1 e0",
        ),
        ("get_gns3_templates", {}, "List the node templates"),
        ("device_skills", {"action": "list"}, "List the guides"),
        ("wait_for_console", {"node_names": ["R1", "R2"]}, "Wait for the consoles of R1 and R2"),
        (
            "start_gns3_node",
            {"node_names": [f"PC{n}" for n in range(1, 31)]},
            "Start PC1, PC2, PC3 and 27 more",
        ),
        (
            "create_gns3_node",
            {"nodes": [{"template_name": "VPCS", "name": "PC1"}, {"template_name": "VPCS"}]},
            "Create 2 nodes",
        ),
        (
            "execute_multiple_device_config_commands",
            {
                "device_configs": [{"device_name": "R1", "config_commands": ["router ospf 1"]}],
                "verify": [{"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"}],
            },
            "Configure R1 (1 line), then verify 1 check",
        ),
        ("restore_point", {"action": "list"}, "List the restore points"),
    ],
)
def test_a_call_is_named_from_its_arguments(
    specs: dict[str, ToolSpec], tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert title(specs, tool, arguments) == expected


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("execute_multiple_device_commands", {"device_configs": []}),
        ("packet_capture", {"action": "sniff", "node1": "R1", "node2": "R2"}),
        ("update_gns3_node_name", {"nodes": [{"node_name": "PC1"}]}),  # no new_name
        ("create_gns3_node", {"nodes": [{"name": "PC1"}], "on_fail": "keep"}),  # no verify
    ],
)
def test_arguments_that_do_not_validate_give_no_title(
    specs: dict[str, ToolSpec], tool: str, arguments: dict[str, Any]
) -> None:
    assert title(specs, tool, arguments) is None


def test_names_are_listed_as_a_sentence_says_them() -> None:
    assert listed(["R1"]) == "R1"
    assert listed(["R1", "R2"]) == "R1 and R2"
    assert listed(["R1", "R2", "R3", "R4"]) == "R1, R2, R3 and R4"
    assert listed(["R1", "R2", "R3", "R4", "R5"]) == "R1, R2, R3 and 2 more"
