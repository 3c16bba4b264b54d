"""What a lab tool call would change: the assessment behind approvals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.gns3._changes import assess_call
from adapters.gns3._command_policy import DeviceKind


def kinds(**by_name: DeviceKind) -> Callable[[str], DeviceKind | None]:
    return by_name.get


def test_configuration_commands_always_change_their_devices() -> None:
    args = {
        "device_configs": [
            {"device_name": "R1", "config_commands": ["interface Gi0/0", "no shutdown"]},
            {"device_name": "R2", "config_commands": ["router ospf 1"]},
        ]
    }
    assessed = assess_call("execute_multiple_device_config_commands", args)
    assert assessed.changes
    assert assessed.preview is not None
    assert dict(assessed.preview.devices) == {
        "R1": ["interface Gi0/0", "no shutdown"],
        "R2": ["router ospf 1"],
    }


def test_vpcs_commands_change_the_pc_only_when_they_set_something() -> None:
    show = {"device_configs": [{"device_name": "PC1", "commands": ["show ip", "ping 10.0.0.2"]}]}
    assert not assess_call("execute_vpcs_commands", show).changes
    setting = {"device_configs": [{"device_name": "PC1", "commands": ["ip 10.0.0.1/24", "save"]}]}
    assessed = assess_call("execute_vpcs_commands", setting)
    assert assessed.changes
    assert assessed.preview is not None
    assert dict(assessed.preview.devices) == {"PC1": ["ip 10.0.0.1/24", "save"]}


def test_show_commands_follow_each_devices_kind() -> None:
    args = {"device_configs": [{"device_name": "R1", "commands": ["show ip route"]}]}
    assert not assess_call(
        "execute_multiple_device_commands", args, kinds(R1=DeviceKind.CISCO_IOS)
    ).changes
    writing = {"device_configs": [{"device_name": "R1", "commands": ["write memory"]}]}
    assert assess_call(
        "execute_multiple_device_commands", writing, kinds(R1=DeviceKind.CISCO_IOS)
    ).changes


def test_topology_changes_are_listed_one_line_each() -> None:
    created = assess_call("create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "PC3"}]})
    assert created.changes and created.preview is not None
    assert list(created.preview.topology) == ["create a node from template VPCS named PC3"]
    linked = assess_call(
        "create_gns3_link",
        {"links": [{"node1": "PC1", "port1": "e0", "node2": "SW1", "port2": "e1"}]},
    )
    assert linked.preview is not None
    assert list(linked.preview.topology) == ["link PC1 e0 to SW1 e1"]
    stopped = assess_call("stop_gns3_node", {"node_names": ["R1", "R2"]})
    assert stopped.preview is not None
    assert list(stopped.preview.topology) == ["stop R1", "stop R2"]


def test_reading_starting_and_capturing_change_nothing() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("gns3_topology_reader", {}),
        ("get_gns3_templates", {}),
        ("start_gns3_node", {"node_names": ["R1"]}),
        ("packet_capture", {"node1": "R1"}),
        ("device_skills", {}),
    ]
    for name, args in calls:
        assert not assess_call(name, args).changes, name
