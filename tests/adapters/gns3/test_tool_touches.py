"""The GNS3 tools declare which nodes a call reads, creates or changes
(``ToolSpec.touches``, from the call's arguments), by which the core orders the calls of
one reply (issue 40, item 2): a link waits for the creates of its ends, a show after a
configuration of the same device waits for it, independent calls run at once."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode, ParsedToolCall, ToolSpec
from copilot_core._callorder import plan
from copilot_core.ports import Touch, TouchKind

CREATE, CHANGE, READ = TouchKind.CREATE, TouchKind.CHANGE, TouchKind.READ


@pytest.fixture(scope="module")
def specs() -> dict[str, ToolSpec]:
    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:9"))
    return {spec.name: spec for spec in executor.specs(CopilotMode.LAB_AUTOMATION_ASSISTANT)}


def touches(specs: dict[str, ToolSpec], tool: str, arguments: dict[str, Any]) -> Any:
    declare = specs[tool].touches
    assert declare is not None, tool
    found = declare(arguments)
    return None if found is None else [(t.resource, t.kind, t.name) for t in found]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "create_gns3_node",
            {
                "nodes": [
                    {"template_name": "VPCS", "name": "PC1"},
                    {"template_name": "VPCS", "name": "pc2"},
                ]
            },
            [("pc1", CREATE, "PC1"), ("pc2", CREATE, "pc2")],
        ),
        # GNS3 names an unnamed node itself: any later call may mean it
        ("create_gns3_node", {"nodes": [{"template_name": "VPCS"}]}, None),
        (
            "create_gns3_link",
            {"links": [{"node1": "PC1", "port1": "e0", "node2": "R1", "port2": "Gi0/0"}]},
            [("pc1", CHANGE, "PC1"), ("r1", CHANGE, "R1")],
        ),
        (
            "delete_gns3_link",
            {"links": [{"node1": "PC1", "node2": "R1"}]},
            [("pc1", CHANGE, "PC1"), ("r1", CHANGE, "R1")],
        ),
        (
            "start_gns3_node",
            {"node_names": ["PC1", "R1"]},
            [("pc1", CHANGE, "PC1"), ("r1", CHANGE, "R1")],
        ),
        ("delete_gns3_node", {"node_names": ["R1"]}, [("r1", CHANGE, "R1")]),
        (
            "update_gns3_node_name",
            {"nodes": [{"node_name": "PC1", "new_name": "Web"}]},
            [("pc1", CHANGE, "PC1"), ("web", CREATE, "Web")],
        ),
        ("wait_for_console", {"node_names": ["R1"]}, [("r1", READ, "R1")]),
        (
            "execute_multiple_device_commands",
            {"device_configs": [{"device_name": "R1", "commands": ["show ip route"]}]},
            [("r1", READ, "R1")],
        ),
        (
            "execute_multiple_device_commands",
            {
                "device_configs": [
                    {"device_name": "R1", "commands": ["show ip route"]},
                    {"device_name": "R2", "commands": ["configure terminal", "hostname X"]},
                ]
            },
            [("r1", READ, "R1"), ("r2", CHANGE, "R2")],
        ),
        (
            "execute_multiple_device_config_commands",
            {"device_configs": [{"device_name": "R1", "config_commands": ["interface lo0"]}]},
            [("r1", CHANGE, "R1")],
        ),
        (
            "execute_vpcs_commands",
            {"device_configs": [{"device_name": "PC1", "commands": ["ip 10.0.0.1/24"]}]},
            [("pc1", CHANGE, "PC1")],
        ),
        (
            "execute_vpcs_commands",
            {"device_configs": [{"device_name": "PC1", "commands": ["ping 10.0.0.2"]}]},
            [("pc1", READ, "PC1")],
        ),
        # arguments that do not validate declare nothing (the call fails anyway)
        ("create_gns3_link", {"links": "PC1-PC2"}, None),
    ],
)
def test_each_node_tool_declares_what_its_call_touches(
    specs: dict[str, ToolSpec], tool: str, arguments: dict[str, Any], expected: Any
) -> None:
    assert touches(specs, tool, arguments) == expected


def test_a_verified_change_declares_its_own_arguments(specs: dict[str, ToolSpec]) -> None:
    arguments = {
        "node_names": ["PC1"],
        "verify": [{"kind": "reachability", "from": "PC1", "to": "PC2"}],
    }
    assert touches(specs, "start_gns3_node", arguments) == [("pc1", CHANGE, "PC1")]


def test_readers_of_the_whole_lab_declare_nothing(specs: dict[str, ToolSpec]) -> None:
    assert specs["gns3_topology_reader"].touches is None
    assert specs["start_all_gns3_nodes"].touches is None  # ordered as a change of anything


def _call(n: int, name: str, arguments: dict[str, Any]) -> ParsedToolCall:
    return ParsedToolCall(f"c{n}", name, "", arguments)


def test_create_two_pcs_and_link_them_orders_the_link_after_both_creates(
    specs: dict[str, ToolSpec],
) -> None:
    calls = [
        _call(0, "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC1"}]}),
        _call(1, "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC2"}]}),
        _call(
            2,
            "create_gns3_link",
            {"links": [{"node1": "pc1", "port1": "e0", "node2": "PC2", "port2": "e0"}]},
        ),
        _call(
            3,
            "execute_vpcs_commands",
            {"device_configs": [{"device_name": "PC3", "commands": ["show ip"]}]},
        ),
        _call(
            4,
            "execute_vpcs_commands",
            {"device_configs": [{"device_name": "PC1", "commands": ["ping 10.0.0.2"]}]},
        ),
    ]
    needs = plan(calls, specs, {c.id for c in calls})
    waits = {cid: [(n.call.id, n.touch) for n in found] for cid, found in needs.items()}
    assert waits == {
        "c0": [],
        "c1": [],
        "c2": [("c0", Touch("pc1", CREATE, "PC1")), ("c1", Touch("pc2", CREATE, "PC2"))],
        "c3": [],  # another PC: at once
        "c4": [("c0", Touch("pc1", CREATE, "PC1")), ("c2", Touch("pc1", CHANGE, "pc1"))],
    }
