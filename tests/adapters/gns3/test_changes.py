"""What a lab tool call would change: the assessment behind approvals (each tool's
``change`` preview, through the executor's ``assess``; nothing is sent to GNS3)."""

from __future__ import annotations

import json
from typing import Any

from adapters.gns3 import Gns3Client, Gns3ToolExecutor
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, ToolContext
from copilot_core.ports import Assessment

LAB = CopilotMode.LAB_AUTOMATION_ASSISTANT
TEACHING = CopilotMode.TEACHING_ASSISTANT


async def assess(name: str, args: dict[str, Any], mode: CopilotMode = LAB) -> Assessment:
    # An unreachable GNS3: assess must not need it.
    async with Gns3Client("http://127.0.0.1:9", timeout=1) as client:
        executor = Gns3ToolExecutor(client)
        call = ParsedToolCall.parse("call-1", name, json.dumps(args))
        return await executor.assess(call, ToolContext("p", "u", "s", mode, AbortToken(), "t"))


async def test_configuration_commands_always_change_their_devices() -> None:
    args = {
        "device_configs": [
            {"device_name": "R1", "config_commands": ["interface Gi0/0", "no shutdown"]},
            {"device_name": "R2", "config_commands": ["router ospf 1"]},
        ]
    }
    assessed = await assess("execute_multiple_device_config_commands", args)
    assert assessed.changes
    assert assessed.preview is not None
    assert dict(assessed.preview.devices) == {
        "R1": ["interface Gi0/0", "no shutdown"],
        "R2": ["router ospf 1"],
    }


async def test_vpcs_commands_change_the_pc_only_when_they_set_something() -> None:
    show = {"device_configs": [{"device_name": "PC1", "commands": ["show ip", "ping 10.0.0.2"]}]}
    assert not (await assess("execute_vpcs_commands", show)).changes
    setting = {"device_configs": [{"device_name": "PC1", "commands": ["ip 10.0.0.1/24", "save"]}]}
    assessed = await assess("execute_vpcs_commands", setting)
    assert assessed.changes
    assert assessed.preview is not None
    assert dict(assessed.preview.devices) == {"PC1": ["ip 10.0.0.1/24", "save"]}


async def test_show_commands_that_write_change_the_device_in_lab_automation() -> None:
    reading = {"device_configs": [{"device_name": "R1", "commands": ["show ip route"]}]}
    assert not (await assess("execute_multiple_device_commands", reading)).changes
    writing = {"device_configs": [{"device_name": "R1", "commands": ["write memory"]}]}
    assert (await assess("execute_multiple_device_commands", writing)).changes
    # Teaching mode refuses such commands itself: nothing to approve.
    assert not (await assess("execute_multiple_device_commands", writing, TEACHING)).changes


async def test_topology_changes_are_listed_one_line_each() -> None:
    created = await assess(
        "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC3"}]}
    )
    assert created.changes and created.preview is not None
    assert list(created.preview.topology) == ["create PC3 from template VPCS"]
    stopped = await assess("stop_gns3_node", {"node_names": ["R1", "R2"]})
    assert stopped.preview is not None
    assert list(stopped.preview.topology) == ["stop R1", "stop R2"]
    renamed = await assess(
        "update_gns3_node_name", {"nodes": [{"node_name": "PC1", "new_name": "H1"}]}
    )
    assert renamed.preview is not None
    assert list(renamed.preview.topology) == ["rename PC1 to H1"]


async def test_reading_skills_and_bad_calls_change_nothing() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("gns3_topology_reader", {}),
        ("get_gns3_templates", {}),
        ("device_skills", {}),
        ("capture_lab_state", {}),
        ("diff_lab_state", {"from": "s1", "to": "now"}),
        ("create_gns3_node", {"nodes": "not a list"}),  # execute reports the bad argument
        ("no_such_tool", {}),
    ]
    for name, args in calls:
        assert not (await assess(name, args)).changes, name


async def test_the_new_topology_tools_preview_what_they_change() -> None:
    deleted = await assess("delete_gns3_node", {"node_names": ["PC3"]})
    assert deleted.preview is not None
    assert list(deleted.preview.topology) == ["delete node PC3 and its links"]
    unlinked = await assess("delete_gns3_link", {"links": [{"node1": "R1", "node2": "R2"}]})
    assert unlinked.preview is not None
    assert list(unlinked.preview.topology) == ["delete link R1 <-> R2"]
    stopped = await assess("stop_all_gns3_nodes", {})
    assert (
        stopped.preview is not None and stopped.preview.summary == "stop every node of the project"
    )
    noted = await assess("gns3_annotate", {"text": "core", "near": "R1"})
    assert noted.preview is not None
    assert list(noted.preview.topology) == ["draw a text note 'core' above R1"]
    restored = await assess("gns3_snapshots", {"action": "restore", "name": "base"})
    assert restored.preview is not None and restored.preview.summary == "restore snapshot base"
    assert "running nodes stop" in restored.preview.topology[0]


async def test_link_filters_change_the_link_only_when_set_or_cleared_in_lab_automation() -> None:
    lossy = {
        "node1": "R1",
        "node2": "R2",
        "action": "set",
        "filters": {"packet_loss_percent": 20, "delay_ms": 100, "jitter_ms": 10},
    }
    assessed = await assess("gns3_link_filters", lossy)
    assert assessed.preview is not None
    assert list(assessed.preview.topology) == [
        "link R1 <-> R2: delay 100 ms ± 10 ms, lose 20 % of packets"
    ]
    cleared = await assess(
        "gns3_link_filters", {"node1": "R1", "node2": "R2", "action": "clear", "names": ["bpf"]}
    )
    assert cleared.preview is not None
    assert list(cleared.preview.topology) == ["link R1 <-> R2: remove bpf"]
    reading = {"node1": "R1", "node2": "R2", "action": "get"}
    assert not (await assess("gns3_link_filters", reading)).changes
    assert not (await assess("gns3_link_filters", lossy, TEACHING)).changes  # refused there


async def test_reads_of_the_new_tools_change_nothing() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("gns3_snapshots", {"action": "list"}),
        ("packet_capture", CAPTURE | {"action": "analyze"}),  # reads the running capture
        ("wait_for_console", {"node_names": ["R1"]}),
        ("restore_point", {"action": "list"}),
        # Without a store to read it from, a rollback has nothing to preview: execute says so.
        ("restore_point", {"action": "rollback", "restore_point_id": "p1"}),
    ]
    for name, args in calls:
        assert not (await assess(name, args)).changes, name


CAPTURE = {"node1": "R1", "port1": "Gi0/0", "node2": "PC1", "port2": "e0"}


async def test_node_state_snapshots_and_captures_are_changes_previewed_one_line_each() -> None:
    expected: list[tuple[str, dict[str, Any], list[str]]] = [
        ("start_gns3_node", {"node_names": ["R1", "PC1"]}, ["start R1", "start PC1"]),
        ("start_all_gns3_nodes", {}, ["start every stopped or suspended node"]),
        ("suspend_gns3_node", {"node_names": ["R1"]}, ["suspend R1"]),
        (
            "gns3_snapshots",
            {"action": "create", "name": "base"},
            ["take GNS3 snapshot base of the whole project"],
        ),
        (
            "packet_capture",
            CAPTURE | {"action": "start"},
            ["start capturing packets on the link R1 Gi0/0 <-> PC1 e0"],
        ),
        (
            "packet_capture",
            CAPTURE | {"action": "stop"},
            ["stop capturing packets on the link R1 Gi0/0 <-> PC1 e0"],
        ),
    ]
    for name, args, lines in expected:
        assessed = await assess(name, args)
        assert assessed.changes, name
        assert assessed.preview is not None and list(assessed.preview.topology) == lines, name


def test_a_topology_rollback_is_previewed_one_action_per_item() -> None:
    from adapters.gns3.restore._preview import topology_actions

    def link(a: str, b: str, **extra: Any) -> dict[str, Any]:
        return {"ends": [{"node": a, "port": "e0"}, {"node": b, "port": "e0"}], **extra}

    saved = {
        "nodes": [
            {"name": "R1", "node_type": "dynamips", "status": "started", "x": 0, "y": 0},
            {"name": "PC1", "node_type": "vpcs", "status": "stopped", "x": 10, "y": 10},
        ],
        "links": [link("R1", "PC1", filters={"delay": [100, 0]}), link("R1", "SW1")],
        "drawings": [{"svg": "<svg/>", "x": 1, "y": 1}],
    }
    current = {
        "nodes": [
            {"name": "R1", "status": "stopped", "x": 5, "y": 0},
            {"name": "PC3", "status": "started", "x": 0, "y": 0},
        ],
        "links": [link("R1", "PC1", filters={}), link("R1", "PC3")],
        "drawings": [],
    }

    assert topology_actions(saved, current) == [
        "delete node PC3 (made since)",
        "create node PC1 again (vpcs)",
        "start R1 (it is stopped)",
        "move R1 back to (0, 0)",
        "delete link PC3 e0 <-> R1 e0 (made since)",
        "create link R1 e0 <-> SW1 e0 again",
        "set the filters of link PC1 e0 <-> R1 e0 back to {'delay': [100, 0]}",
        "draw 1 drawing(s) again",
    ]
    assert topology_actions(saved, saved) == []


async def test_a_creation_preview_counts_its_nodes_in_words() -> None:
    one = {"nodes": [{"template_name": "VPCS", "name": "PC3"}]}
    two = {"nodes": [{"template_name": "VPCS", "name": "PC3"}, {"template_name": "VPCS"}]}
    created = [(await assess("create_gns3_node", args)).preview for args in (one, two)]
    assert [p.summary if p else None for p in created] == ["create 1 node", "create 2 nodes"]
