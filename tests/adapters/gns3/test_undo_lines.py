"""Rolling back a router's configuration change undoes the change's own lines only.

An IOS-like router and an FRR container (telnet emulators behind a mocked GNS3 API, see
``test_restore_points``): the copilot adds a static route and an interface line (approved,
restore point taken, the running configuration read again after it); a colleague then
configures the same router over its console. The rollback takes back the copilot's lines
and leaves the colleague's; when the colleague removed the block a copilot line is in,
that line is undone already (a note) and the rest of the change is undone.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest

from adapters.gns3 import ConsoleRunner, ConsoleTarget
from adapters.gns3.model._platforms import DeviceKind
from copilot_core import AbortToken, ParsedToolCall, ToolContext
from copilot_core.testing import InMemoryCheckpointStore
from tests.adapters.gns3.test_restore_points import (
    AUTOMATION,
    PROJECT,
    SESSION,
    TOKEN,
    by_device,
    make,
    run,
    store,
)
from tests.fakes.telnet_devices import EmulatedCiscoRouter, EmulatedDeviceLab, EmulatedFrr

__all__ = ["store"]  # the fixture, used here


@dataclass(frozen=True)
class Case:
    """One platform's words for the same change."""

    name: str
    kind: DeviceKind
    route: str  # the copilot's static route
    other_route: str  # the colleague's
    interface: str
    interface_line: str  # the copilot's line in that interface
    kept_interface_line: str  # a line the interface had before (the context exists)

    @property
    def negated_route(self) -> str:
        return f"no {self.route}"


CISCO = Case(
    "R1",
    DeviceKind.CISCO_IOS,
    "ip route 10.9.0.0 255.255.0.0 10.0.0.1",
    "ip route 10.77.0.0 255.255.0.0 10.0.0.1",
    "interface GigabitEthernet0/1",
    "description copilot uplink",
    "shutdown",
)
FRR = Case(
    "R2",
    DeviceKind.FRR,
    "ip route 10.9.0.0/16 10.0.0.1",
    "ip route 10.77.0.0/16 10.0.0.1",
    "interface eth1",
    "ip address 10.1.0.1/24",
    "ip ospf cost 10",
)


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    frr = EmulatedFrr("R2", docker=True)
    frr.tree.block("interface eth1").append("ip ospf cost 10")
    async with EmulatedDeviceLab(EmulatedCiscoRouter("R1"), frr) as devices:
        yield devices


def copilot_change(case: Case) -> dict[str, object]:
    return {
        "device_configs": [
            {
                "device_name": case.name,
                "config_commands": [
                    case.route,
                    case.interface,
                    case.interface_line,
                    "exit",
                ],
            }
        ]
    }


async def colleague(lab: EmulatedDeviceLab, case: Case, commands: list[str]) -> None:
    """Someone configuring the router over its console, outside the copilot."""
    device = lab[case.name]
    enter = "\r" if isinstance(device, EmulatedFrr) else "\r\n"
    target = ConsoleTarget(case.name, "127.0.0.1", device.port, case.kind, enter=enter)
    transcript = await ConsoleRunner(command_timeout=3.0).run(target, commands, config_mode=True)
    assert transcript.error is None and all(o.ok for o in transcript.outcomes), transcript


def config_of(lab: EmulatedDeviceLab, case: Case) -> list[str]:
    device = lab[case.name]
    assert isinstance(device, EmulatedCiscoRouter | EmulatedFrr)
    return [line.strip() for line in device.config]


@pytest.mark.parametrize("case", [CISCO, FRR], ids=["ios", "frr"])
async def test_a_rollback_undoes_the_changes_lines_and_keeps_a_colleagues_route(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore, case: Case
) -> None:
    executor, _ = make(lab, store)
    changed = await run(executor, "execute_multiple_device_config_commands", copilot_change(case))
    assert changed.output["status"] == "success", changed.output
    (point,) = await store.restore_points(PROJECT, SESSION)
    kept = point.kept["devices"][case.name]["lines_changed"]
    assert {"context": [], "line": case.route} in kept["added"], kept
    assert {"context": [case.interface], "line": case.interface_line} in kept["added"], kept

    await colleague(lab, case, [case.other_route])
    assert case.other_route in config_of(lab, case)

    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": point.id},
        call_id="call-2",
    )
    assert rolled.output["status"] == "success", rolled.output
    item = by_device(rolled)[case.name]["output"]
    assert item["state"] == "as before the change", item
    now = config_of(lab, case)
    assert case.route not in now and case.interface_line not in now, now
    assert case.other_route in now, now  # the colleague's route stays
    assert case.kept_interface_line in now, now
    # Only the copilot's lines were sent (nothing about the colleague's route).
    assert not any("10.77." in command for command in item["commands_sent"]), item


@pytest.mark.parametrize("case", [CISCO, FRR], ids=["ios", "frr"])
async def test_a_copilot_line_whose_block_a_colleague_removed_is_undone_already(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore, case: Case
) -> None:
    """Issue 35 case 7: a line of the change whose block a colleague deleted since has
    nothing left to undo. It is a note, not a conflict: the rest of the change is undone
    (it once refused the whole rollback, and the change stayed)."""
    executor, _ = make(lab, store)
    change = copilot_change(case)
    if case.kind is DeviceKind.CISCO_IOS:  # a physical interface cannot go: a routing block
        await colleague(lab, case, ["router ospf 1", "network 10.0.0.0 0.0.0.255 area 0"])
        change = {
            "device_configs": [
                {
                    "device_name": case.name,
                    "config_commands": [
                        case.route,
                        "router ospf 1",
                        "network 10.9.0.0 0.0.255.255 area 0",
                        "exit",
                    ],
                }
            ]
        }
        gone = ["no router ospf 1"]
    else:
        gone = [f"no {case.interface}"]
    changed = await run(executor, "execute_multiple_device_config_commands", change)
    assert changed.output["status"] == "success", changed.output
    (point,) = await store.restore_points(PROJECT, SESSION)
    await colleague(lab, case, [*gone, case.other_route])
    assert case.route in config_of(lab, case)

    # The preview sends the route's undo alone, and names no conflict.
    assessed = await executor.assess(
        ParsedToolCall.parse(
            "c", "restore_point", json.dumps({"action": "rollback", "restore_point_id": point.id})
        ),
        ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN),
    )
    assert assessed.preview is not None
    planned = list(assessed.preview.devices[case.name])
    assert planned == [case.negated_route], planned

    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": point.id},
        call_id="call-2",
    )
    assert rolled.output["status"] == "success", rolled.output
    item = by_device(rolled)[case.name]["output"]
    assert item["state"] == "as before the change", item
    assert any("undone already" in note for note in item["notes"]), item
    now = config_of(lab, case)
    assert case.route not in now and case.other_route in now, now


async def test_a_point_kept_without_the_lines_after_the_change_puts_the_whole_config_back(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    """A restore point saved before the after-read existed: as at the restore point."""
    case = FRR
    executor, _ = make(lab, store)
    changed = await run(executor, "execute_multiple_device_config_commands", copilot_change(case))
    assert changed.output["status"] == "success", changed.output
    (point,) = await store.restore_points(PROJECT, SESSION)
    devices = dict(point.kept["devices"])
    devices[case.name] = {k: v for k, v in devices[case.name].items() if k != "lines_changed"}
    await store.update_restore_point(replace(point, kept={**point.kept, "devices": devices}))
    await colleague(lab, case, [case.other_route])

    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": point.id},
        call_id="call-2",
    )
    assert rolled.output["status"] == "success", rolled.output
    assert by_device(rolled)[case.name]["output"]["state"] == "as at the restore point"
    now = config_of(lab, case)
    assert case.route not in now and case.other_route not in now, now
