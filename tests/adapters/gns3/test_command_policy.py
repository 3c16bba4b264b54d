"""The forbidden filter, teaching's read-only rule, device kinds and port names."""

from __future__ import annotations

import pytest

from adapters.gns3 import (
    DEFAULT_FORBIDDEN_COMMANDS,
    DeviceKind,
    ForbiddenCommandFilter,
    configuration_reason,
    device_kind_of,
)
from adapters.gns3.lab._snapshot import port_matches


@pytest.mark.parametrize(
    "command",
    [
        "traceroute 8.8.8.8",
        "TRACEPATH x",
        "tracert x",
        "ping -f 10.0.0.1",
        "Debug all",
        "test crash",
        "reload",
        "erase startup-config",
        "format flash:",
        "delete flash:x",
        "write  erase",
        "  debug ip ospf",
        "trace 1.1.1.1",
    ],
)
def test_default_forbidden_commands_are_blocked(command: str):
    reason = ForbiddenCommandFilter().reason(command)
    assert reason is not None
    assert "forbidden" in reason


@pytest.mark.parametrize(
    "command",
    ["ping 10.0.0.1 -c 3", "show ip", "write memory", "testing", "show debugging"],
)
def test_ordinary_commands_pass(command: str):
    assert ForbiddenCommandFilter().reason(command) is None


def test_filter_from_lines_ignores_comments_and_blanks():
    rules = ForbiddenCommandFilter.from_lines(["# comment", "", "  Show  Tech  # why", "shutdown"])
    assert rules.prefixes == ("show tech", "shutdown")
    assert rules.reason("show tech-support") is None  # whole words only
    assert rules.reason("SHOW TECH detail") is not None


def test_default_list_matches_the_shipped_file():
    from adapters.gns3 import BUILTIN_SKILLS_DIR

    shipped = ForbiddenCommandFilter.from_lines(
        (BUILTIN_SKILLS_DIR / "forbidden_commands.txt").read_text().splitlines()
    )
    assert shipped.prefixes == DEFAULT_FORBIDDEN_COMMANDS


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("configure terminal", DeviceKind.CISCO_IOS),
        ("conf t", DeviceKind.CISCO_IOS),
        ("wr", DeviceKind.CISCO_IOS),
        ("copy run start", DeviceKind.CISCO_IOS),
        ("no ip route 0.0.0.0 0.0.0.0 1.1.1.1", DeviceKind.CISCO_IOS),
        ("enable secret x", DeviceKind.CISCO_IOS),
        ("clear ip ospf process", DeviceKind.CISCO_IOS),
        ("ip 10.0.0.1/24", DeviceKind.VPCS),
        ("set pcname X", DeviceKind.VPCS),
        ("save", DeviceKind.VPCS),
        ("ip dhcp", DeviceKind.VPCS),
        ("ip addr add 10.0.0.1/24 dev eth0", DeviceKind.LINUX),
        ("ifconfig eth0 up", DeviceKind.LINUX),
        ("conf t", DeviceKind.GENERIC),
        ("ip route add default via 10.0.0.1", DeviceKind.GENERIC),
    ],
)
def test_configuration_commands_are_refused_in_teaching(command: str, kind: DeviceKind):
    reason = configuration_reason(command, kind)
    assert reason is not None
    assert "teaching mode" in reason


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("show running-config", DeviceKind.CISCO_IOS),
        ("sh ip int br", DeviceKind.CISCO_IOS),
        ("enable", DeviceKind.CISCO_IOS),
        ("ping 10.0.0.1", DeviceKind.CISCO_IOS),
        ("show ip", DeviceKind.VPCS),
        ("ping 10.0.0.2 -c 2", DeviceKind.VPCS),
        ("ip addr", DeviceKind.LINUX),
        ("ip route", DeviceKind.LINUX),
        ("", DeviceKind.VPCS),
    ],
)
def test_read_only_commands_are_allowed_in_teaching(command: str, kind: DeviceKind):
    assert configuration_reason(command, kind) is None


@pytest.mark.parametrize(
    ("command", "kind", "refused"),
    [
        ("configure", DeviceKind.JUNIPER_JUNOS, True),
        (
            "set interfaces ge-0/0/0 unit 0 family inet address 10.0.0.1/24",
            DeviceKind.JUNIPER_JUNOS,
            True,
        ),
        ("request system reboot", DeviceKind.JUNIPER_JUNOS, True),
        ("show interfaces terse", DeviceKind.JUNIPER_JUNOS, False),
        ("ping 10.0.0.1 count 3", DeviceKind.JUNIPER_JUNOS, False),
        ("system-view", DeviceKind.HUAWEI_VRP, True),
        ("sys", DeviceKind.HUAWEI_VRP, True),
        ("undo shutdown", DeviceKind.HUAWEI_VRP, True),
        ("save", DeviceKind.HUAWEI_VRP, True),
        ("display ip interface brief", DeviceKind.HUAWEI_VRP, False),
        ("configure terminal", DeviceKind.ARISTA_EOS, True),
        ("show ip interface brief", DeviceKind.ARISTA_EOS, False),
        ("conf t", DeviceKind.FRR, True),
        ("write memory", DeviceKind.FRR, True),
        ("show ip route", DeviceKind.FRR, False),
        ("ip route add default via 10.0.0.1", DeviceKind.FRR, True),  # the shell around vtysh
        ("system-view", DeviceKind.GENERIC, True),
        ("commit", DeviceKind.GENERIC, True),
        ("display version", DeviceKind.GENERIC, False),
    ],
)
def test_teaching_refuses_each_platforms_configuration_words(
    command: str, kind: DeviceKind, refused: bool
) -> None:
    assert (configuration_reason(command, kind) is not None) is refused


@pytest.mark.parametrize(
    ("node", "template", "kind"),
    [
        ({"node_type": "vpcs"}, None, DeviceKind.VPCS),
        ({"node_type": "dynamips"}, "c7200", DeviceKind.CISCO_IOS),
        ({"node_type": "qemu"}, "Cisco IOSv 15.9", DeviceKind.CISCO_IOS),
        ({"node_type": "docker"}, "alpine", DeviceKind.LINUX),
        ({"node_type": "qemu", "tags": ["device_type:linux"]}, "Cisco IOSv", DeviceKind.LINUX),
        ({"node_type": "qemu"}, "Juniper vSRX", DeviceKind.JUNIPER_JUNOS),
        ({"node_type": "qemu"}, "Juniper vMX vCP", DeviceKind.JUNIPER_JUNOS),
        ({"node_type": "qemu"}, "Arista vEOS 4.28", DeviceKind.ARISTA_EOS),
        ({"node_type": "docker"}, "frrouting/frr:v8.4.1", DeviceKind.FRR),
        ({"node_type": "qemu"}, "Huawei NE40E", DeviceKind.HUAWEI_VRP),
        ({"node_type": "qemu"}, "Cisco CSR1000v 17.3", DeviceKind.CISCO_IOS),
        ({"node_type": "qemu"}, "Cat8000v", DeviceKind.CISCO_IOS),
        ({"node_type": "docker"}, "ubuntu:22.04", DeviceKind.LINUX),
        ({"node_type": "docker", "name": "toolbox-1"}, None, DeviceKind.LINUX),
        (
            {"node_type": "qemu", "tags": ["device_type:ios-xe"]},
            "Some router",
            DeviceKind.CISCO_IOS,
        ),
        ({"node_type": "qemu", "tags": ["device_type:nxos"]}, "vEOS", DeviceKind.ARISTA_EOS),
        ({"node_type": "qemu"}, "MikroTik CHR 7", DeviceKind.GENERIC),
        ({"node_type": "qemu"}, "Microsoft Windows", DeviceKind.GENERIC),  # no "ios" in "windows"
    ],
)
def test_device_kind_from_tag_node_type_or_template(node, template, kind):  # type: ignore[no-untyped-def]
    assert device_kind_of(node, template) is kind


@pytest.mark.parametrize(
    ("wanted", "matches"),
    [
        ("GigabitEthernet0/0", True),
        ("gi0/0", True),
        ("Gi 0/0", True),
        ("g0/0", True),
        ("gi0/1", False),
        ("fa0/0", False),
        ("", False),
    ],
)
def test_port_names_and_abbreviations(wanted: str, matches: bool):
    port = {"name": "GigabitEthernet0/0", "short_name": "g0/0"}
    assert port_matches(port, wanted) is matches
    assert port_matches({"name": "Ethernet0", "short_name": "e0"}, "eth0")
