"""Restore points of devices: taken before an approved change, rolled back, read back.

The devices are telnet emulators; GNS3's API is answered by ``httpx.MockTransport``
describing *started* nodes whose consoles are the emulators (GNS3 cannot start nodes on
this machine: no uBridge), including the node files API a VPCS's ``startup.vpc`` is read
and written through. Restore points go to the core's in-memory store.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from adapters.gns3.lab._registry import CallScope
from adapters.gns3.tools._restore import take_restore_point
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolResult
from copilot_core.errors import StoreError
from copilot_core.ports import ApprovalDecision, Clearance, RestorePoint
from copilot_core.testing import InMemoryCheckpointStore, SequentialIds, SteppingClock
from tests.fakes.telnet_devices import (
    EmulatedCiscoRouter,
    EmulatedDeviceLab,
    EmulatedFrr,
    EmulatedGenericDevice,
    EmulatedVpcs,
)

AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
PROJECT = "3f2a9c1e-0000-4000-8000-000000000002"
SESSION = "session-1"
TOKEN = "jwt-for-tests"
APPROVED = ApprovalDecision(True, user_id="alice")


class FakeGns3:
    """GNS3's answers for a project of emulated, started devices (and stopped extras)."""

    def __init__(self, lab: EmulatedDeviceLab, extra: list[dict[str, Any]]) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.files: dict[tuple[str, str], bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.consoles = {device.name: device.port for device in lab.devices.values()}
        for index, device in enumerate(lab.devices.values()):
            node_type = {
                EmulatedVpcs: "vpcs",
                EmulatedCiscoRouter: "dynamips",
                EmulatedGenericDevice: "qemu",
                EmulatedFrr: "docker",
            }[type(device)]
            node_id = f"node-{index}"
            self.nodes.append(
                {
                    "name": device.name,
                    "node_id": node_id,
                    "node_type": node_type,
                    "status": "started",
                    "console": device.port,
                    "console_host": "127.0.0.1",
                    "console_type": "telnet",
                    "template_id": f"tpl-{node_type}",
                    "ports": [],
                    **({"tags": ["device_type:frr"]} if node_type == "docker" else {}),
                }
            )
            if node_type == "vpcs":
                self.files[(node_id, "startup.vpc")] = f"set pcname {device.name}\n".encode()
        self.nodes.extend(extra)

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        path = request.url.path.removeprefix(f"/v3/projects/{PROJECT}")
        self.requests.append((request.method, path))
        if path == "":
            return httpx.Response(
                200, json={"project_id": PROJECT, "name": "lab", "status": "opened"}
            )
        if path == "/nodes" and request.method == "POST":  # made again from its JSON
            body = json.loads(request.content)
            device = self.consoles[body["name"]]
            node = {**body, "status": "stopped", "console": device, "console_host": "127.0.0.1"}
            self.nodes.append(node)
            return httpx.Response(201, json=node)
        if path == "/nodes":
            return httpx.Response(200, json=self.nodes)
        if path.startswith("/nodes/") and request.method == "DELETE":
            self.nodes = [n for n in self.nodes if n["node_id"] != path.split("/")[2]]
            return httpx.Response(204)
        if path.startswith("/nodes/") and path.endswith("/start"):
            node = next(n for n in self.nodes if n["node_id"] == path.split("/")[2])
            node["status"] = "started"
            return httpx.Response(204)
        if path.startswith("/nodes/") and "/files/" in path:
            node_id, file_path = path.removeprefix("/nodes/").split("/files/", 1)
            if request.method == "POST":
                self.files[(node_id, file_path)] = request.content
                return httpx.Response(201)
            content = self.files.get((node_id, file_path))
            if content is None:
                return httpx.Response(404, json={"message": "no such file"})
            return httpx.Response(200, content=content)
        if path.startswith("/nodes/"):
            node = next(n for n in self.nodes if n["node_id"] == path.split("/")[2])
            return httpx.Response(200, json=node)
        if path in ("/links", "/drawings"):
            return httpx.Response(200, json=[])
        if request.url.path == "/v3/templates":
            return httpx.Response(
                200,
                json=[
                    {"template_id": "tpl-vpcs", "name": "VPCS"},
                    {"template_id": "tpl-dynamips", "name": "c7200"},
                    {"template_id": "tpl-qemu", "name": "MikroTik CHR"},
                ],
            )
        return httpx.Response(404, json={"message": f"unexpected {request.method} {path}"})


@pytest.fixture
async def lab() -> AsyncIterator[EmulatedDeviceLab]:
    async with EmulatedDeviceLab(
        EmulatedVpcs("PC1", ip_delay=0.01),
        EmulatedVpcs("PC2", ip_delay=0.01),
        EmulatedCiscoRouter("R1"),
    ) as devices:
        yield devices


@pytest.fixture
async def store() -> InMemoryCheckpointStore:
    store = InMemoryCheckpointStore()
    now = datetime.now(UTC)
    await store.create_session(
        Session(
            thread_id=SESSION, user_id="alice", project_id=PROJECT, created_at=now, updated_at=now
        )
    )
    return store


def make(
    lab: EmulatedDeviceLab,
    store: InMemoryCheckpointStore | None,
    extra: list[dict[str, Any]] | None = None,
    **executor_options: Any,
) -> tuple[Gns3ToolExecutor, FakeGns3]:
    fake = FakeGns3(lab, extra or [])
    http = httpx.AsyncClient(transport=httpx.MockTransport(fake.handle))
    executor = Gns3ToolExecutor(
        Gns3Client("http://127.0.0.1:3080", http=http),
        runner=ConsoleRunner(command_timeout=3.0, recovery_timeout=1.0),
        restore_points=store,
        **executor_options,
    )
    return executor, fake


async def run(
    executor: Gns3ToolExecutor,
    name: str,
    arguments: dict[str, Any],
    *,
    approved: ApprovalDecision | None = APPROVED,
    call_id: str = "call-1",
) -> ToolResult:
    call = ParsedToolCall.parse(call_id, name, json.dumps(arguments))
    context = ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN)
    result = await executor.execute(call, context, Clearance(decision=approved))
    json.dumps(result.output)
    return result


def by_device(result: ToolResult) -> dict[str, dict[str, Any]]:
    return {entry["device_name"]: entry for entry in result.output["results"]}


THREE_DEVICES = {
    "device_configs": [
        {"device_name": "PC1", "commands": ["ip 10.0.0.1/24 10.0.0.254"]},
        {"device_name": "PC2", "commands": ["ip 10.0.0.2/24 10.0.0.254", "ip dns 8.8.8.8"]},
    ]
}
ROUTER_CHANGE = {
    "device_configs": [
        {
            "device_name": "R1",
            "config_commands": [
                "interface GigabitEthernet0/0",
                "ip address 10.0.0.254 255.255.255.0",
                "no shutdown",
                "exit",
                "ip route 0.0.0.0 0.0.0.0 10.0.0.1",
            ],
        }
    ]
}


async def test_an_approved_change_is_preceded_by_a_restore_point_that_rolls_it_back(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store)
    pcs = await run(executor, "execute_vpcs_commands", THREE_DEVICES)
    assert pcs.output["status"] == "success", pcs.output
    router = await run(
        executor, "execute_multiple_device_config_commands", ROUTER_CHANGE, call_id="call-2"
    )
    assert router.output["status"] == "success", router.output
    pc1, pc2, r1 = lab["PC1"], lab["PC2"], lab["R1"]
    assert isinstance(pc1, EmulatedVpcs) and isinstance(pc2, EmulatedVpcs)
    assert isinstance(r1, EmulatedCiscoRouter)
    assert (pc1.ip, pc2.dns) == ("10.0.0.1/24", "8.8.8.8")
    assert "ip route 0.0.0.0 0.0.0.0 10.0.0.1" in r1.config

    # Each result names its restore point, kept with the session (also in the metadata).
    points = await store.restore_points(PROJECT, SESSION)
    assert [p.id for p in points] == [
        pcs.output["restore_point_id"],
        router.output["restore_point_id"],
    ]
    assert pcs.metadata == {"restore_point_id": points[0].id}
    first = points[0]
    assert (first.tool_call_id, first.tool_name) == ("call-1", "execute_vpcs_commands")
    # The typed list of devices kept is the tools' own entries that were captured.
    captured = [name for name, entry in first.kept["devices"].items() if entry["captured"]]
    assert "PC1" in first.devices and list(first.devices) == captured
    assert first.kept["devices"]["PC1"]["config"] == {
        "ip": "0.0.0.0/0",
        "gateway": "0.0.0.0",
        "dns": [],
        "dhcp": False,
    }
    assert first.kept["devices"]["PC1"]["files"] == {"startup.vpc": "set pcname PC1\n"}
    # a device change keeps the devices only
    assert not first.topology and "topology" not in first.kept
    kept = points[1].kept["devices"]["R1"]["config"]["lines"]
    assert " shutdown" in kept and "ip route 0.0.0.0 0.0.0.0 10.0.0.1" not in kept

    # Rolling back the router's change puts R1 back, read back.
    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": points[1].id},
        call_id="call-3",
    )
    assert rolled.output["status"] == "success", rolled.output
    r1_item = by_device(rolled)["R1"]
    assert r1_item["output"]["state"] == "as before the change"  # only its lines undone
    assert "no ip route 0.0.0.0 0.0.0.0 10.0.0.1" in r1_item["output"]["commands_sent"]
    assert "ip route 0.0.0.0 0.0.0.0 10.0.0.1" not in r1.config
    assert r1.config[r1.config.index("interface GigabitEthernet0/0") + 1 :][:2] == [
        " no ip address",
        " shutdown",
    ]
    assert rolled.output["rolled_back_to"]["restore_point"] == points[1].id
    # The rollback was a change too: it has its own restore point (it can be undone).
    assert rolled.output["restore_point_id"] not in (points[0].id, points[1].id)

    # Rolling back the PCs' change.
    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": points[0].id},
        call_id="call-4",
    )
    assert rolled.output["status"] == "success", rolled.output
    assert {name: e["output"]["state"] for name, e in by_device(rolled).items()} == {
        "PC1": "as at the restore point",
        "PC2": "as at the restore point",
    }
    assert (pc1.ip, pc1.gateway, pc2.ip, pc2.dns) == ("0.0.0.0/0", "0.0.0.0", "0.0.0.0/0", "")


async def test_a_saved_startup_file_is_written_back(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, fake = make(lab, store)
    changed = await run(
        executor,
        "execute_vpcs_commands",
        {"device_configs": [{"device_name": "PC1", "commands": ["ip 10.0.0.1/24", "save"]}]},
    )
    assert changed.output["status"] == "success", changed.output
    # What VPCS's `save` writes into the node's directory (GNS3 serves that file).
    fake.files[("node-0", "startup.vpc")] = b"set pcname PC1\nip 10.0.0.1 255.255.255.0\n"
    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": changed.output["restore_point_id"]},
        call_id="call-2",
    )
    pc1 = by_device(rolled)["PC1"]
    assert pc1["status"] == "success", pc1
    assert pc1["output"]["files_written"] == ["startup.vpc"]
    assert fake.files[("node-0", "startup.vpc")] == b"set pcname PC1\n"


async def test_a_restore_point_is_named_and_stamped_by_the_ids_and_clock_it_is_given(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    start = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    clock, ids = SteppingClock(start=start), SequentialIds("point")
    executor, _ = make(lab, store, clock=clock, ids=ids)
    result = await run(executor, "execute_vpcs_commands", THREE_DEVICES)
    assert result.output["status"] == "success", result.output
    (point,) = await store.restore_points(PROJECT, SESSION)
    assert point.id == result.output["restore_point_id"] == "point-1"
    assert point.created_at == start + timedelta(milliseconds=1)


async def test_a_change_that_was_not_approved_takes_no_restore_point(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store)
    result = await run(executor, "execute_vpcs_commands", THREE_DEVICES, approved=None)
    assert result.output["status"] == "success"
    assert "restore_point_id" not in result.output
    assert result.metadata is None
    assert await store.restore_points(PROJECT, SESSION) == []


async def test_a_change_whose_restore_point_cannot_be_taken_is_not_made(
    store: InMemoryCheckpointStore,
) -> None:
    async with EmulatedDeviceLab(EmulatedGenericDevice("MT1"), EmulatedVpcs("PC1")) as lab:
        executor, _ = make(lab, store)
        result = await run(
            executor,
            "execute_multiple_device_config_commands",
            {
                "device_configs": [
                    {"device_name": "PC1", "config_commands": ["ip 10.0.0.1/24"]},
                    {"device_name": "MT1", "config_commands": ["/ip address add 10.0.0.2/24"]},
                ]
            },
        )
        assert result.status.value == "error"
        assert "no restore point could be taken" in result.output["error"]
        assert "MT1 is a device of no known platform" in result.output["error"]
        # Nothing was sent to either device beyond reading: the change was not made.
        assert lab["MT1"].received == []
        assert lab["PC1"].received == ["show ip"]
        assert await store.restore_points(PROJECT, SESSION) == []


async def test_a_change_whose_restore_point_cannot_be_saved_is_not_made(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    class FullDisk(InMemoryCheckpointStore):
        async def save_restore_point(self, point: RestorePoint) -> None:
            raise StoreError("The disk is full.")

    full = FullDisk()
    for session in await store.list_sessions(PROJECT, "alice"):
        await full.create_session(session)
    executor, _ = make(lab, full)
    result = await run(executor, "execute_vpcs_commands", THREE_DEVICES)
    assert result.status.value == "error"
    assert "it could not be saved: The disk is full." in result.output["error"]
    pc1 = lab["PC1"]
    assert isinstance(pc1, EmulatedVpcs) and pc1.ip == "0.0.0.0/0"


async def test_a_call_from_outside_a_conversation_says_it_has_no_restore_point(
    lab: EmulatedDeviceLab,
) -> None:
    # An MCP client's call: its context names no session the store keeps.
    executor, _ = make(lab, InMemoryCheckpointStore())
    result = await run(executor, "execute_vpcs_commands", THREE_DEVICES)
    assert result.output["status"] == "success"
    assert result.output["restore_point_id"] is None
    (note,) = result.output["restore_point_notes"]
    assert note.startswith(
        "no restore point was taken: this call comes from outside a copilot conversation"
    )
    pc1 = lab["PC1"]
    assert isinstance(pc1, EmulatedVpcs) and pc1.ip == "10.0.0.1/24"
    assert pc1.received == ["ip 10.0.0.1/24 10.0.0.254"]  # nothing was read for nothing


async def test_without_a_store_an_approved_change_says_it_has_no_restore_point(
    lab: EmulatedDeviceLab,
) -> None:
    executor, _ = make(lab, None)
    result = await run(executor, "execute_vpcs_commands", THREE_DEVICES)
    assert result.output["status"] == "success"
    assert result.output["restore_point_id"] is None
    assert result.output["restore_point_notes"] == [
        "no restore point was taken: this service keeps none"
    ]


async def test_a_stopped_node_in_a_stop_call_is_kept_without_a_running_configuration(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    stopped = {
        "name": "PC9",
        "node_id": "node-9",
        "node_type": "vpcs",
        "status": "stopped",
        "console": 1,
        "console_type": "telnet",
        "template_id": "tpl-vpcs",
        "ports": [],
    }
    executor, fake = make(lab, store, [stopped])
    fake.files[("node-9", "startup.vpc")] = b"set pcname PC9\n"
    preview = await executor.assess(
        ParsedToolCall.parse("c", "stop_gns3_node", '{"node_names": ["PC9", "PC1"]}'),
        ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN),
    )
    assert preview.changes
    assert preview.preview is not None
    tool = executor.registry.get("stop_gns3_node")
    assert tool is not None
    args = tool.parse({"node_names": ["PC9", "PC1"]}, executor.settings)
    context = ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN)
    point = await take_restore_point(
        executor.lab,
        CallScope(context, TOKEN),
        tool.restores(args, preview.preview),
        tool_call_id="c",
        tool_name="stop_gns3_node",
        preview=preview.preview,
    )
    pc9 = point.kept["devices"]["PC9"]
    assert pc9["config"] is None and pc9["captured"]
    assert pc9["files"] == {"startup.vpc": "set pcname PC9\n"}
    assert "no running configuration" in pc9["note"]
    assert point.kept["devices"]["PC1"]["config"]["ip"] == "0.0.0.0/0"
    assert point.topology and "topology" in point.kept
    assert point.snapshot is None  # nodes run: no GNS3 snapshot
    assert "PC1" in point.kept["gns3_snapshot_skipped"]


async def test_restore_points_are_listed_and_an_unknown_one_is_refused(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store)
    changed = await run(executor, "execute_vpcs_commands", THREE_DEVICES)
    listed = await run(executor, "restore_point", {"action": "list"}, approved=None)
    (point,) = listed.output["restore_points"]
    assert point["restore_point_id"] == changed.output["restore_point_id"]
    assert point["devices"] == ["PC1", "PC2"]
    assert point["topology"] is False and point["gns3_snapshot"] is None
    assert point["before"].startswith("execute_vpcs_commands: run commands on PC1, PC2")
    unknown = await run(
        executor, "restore_point", {"action": "rollback", "restore_point_id": "nope"}
    )
    assert unknown.status.value == "error"
    assert "no restore point 'nope'" in unknown.output["error"]
    missing = await run(executor, "restore_point", {"action": "rollback"})
    assert "rollback needs restore_point_id" in missing.output["error"]


async def test_a_rollback_is_previewed_for_approval_from_its_restore_point(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store)
    changed = await run(executor, "execute_multiple_device_config_commands", ROUTER_CHANGE)
    assessed = await executor.assess(
        ParsedToolCall.parse(
            "c",
            "restore_point",
            json.dumps(
                {"action": "rollback", "restore_point_id": changed.output["restore_point_id"]}
            ),
        ),
        ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN),
    )
    assert assessed.changes and assessed.preview is not None
    assert assessed.preview.summary.startswith(
        "roll back to before execute_multiple_device_config_commands (configure R1)"
    )
    # Per device, exactly the commands the rollback will send (planned from R1 as it is).
    planned = list(assessed.preview.devices["R1"])
    assert "no ip route 0.0.0.0 0.0.0.0 10.0.0.1" in planned
    assert assessed.preview.topology == []  # a device change kept no topology
    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": changed.output["restore_point_id"]},
        call_id="call-2",
    )
    assert by_device(rolled)["R1"]["output"]["commands_sent"] == planned
    again = await executor.assess(
        ParsedToolCall.parse(
            "c",
            "restore_point",
            json.dumps(
                {"action": "rollback", "restore_point_id": changed.output["restore_point_id"]}
            ),
        ),
        ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN),
    )
    assert again.preview is not None
    assert list(again.preview.devices["R1"]) == [  # the change's own lines are undone
        f"nothing to send: R1 is as before the change ({planned_when(again.preview.summary)})"
    ]
    listing = await executor.assess(
        ParsedToolCall.parse("c", "restore_point", '{"action": "list"}'),
        ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN),
    )
    assert not listing.changes


async def test_stopping_every_node_keeps_what_each_can_give(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    switch = {
        "name": "SW1",
        "node_id": "node-sw",
        "node_type": "ethernet_switch",
        "status": "started",
        "console": None,
        "console_type": "none",
        "ports": [],
    }
    executor, _ = make(lab, store, [switch])
    tool = executor.registry.get("stop_all_gns3_nodes")
    assert tool is not None
    args = tool.parse({}, executor.settings)
    preview = tool.change(args, AUTOMATION)
    assert preview is not None
    context = ToolContext(PROJECT, "alice", SESSION, AUTOMATION, AbortToken(), TOKEN)
    point = await take_restore_point(
        executor.lab,
        CallScope(context, TOKEN),
        tool.restores(args, preview),
        tool_call_id="c",
        tool_name="stop_all_gns3_nodes",
        preview=preview,
    )
    devices = point.kept["devices"]
    assert sorted(devices) == ["PC1", "PC2", "R1", "SW1"]
    assert devices["SW1"]["config"] is None and devices["SW1"]["captured"]
    assert "built-in ethernet_switch" in devices["SW1"]["note"]
    assert " shutdown" in devices["R1"]["config"]["lines"]
    assert devices["PC2"]["config"]["ip"] == "0.0.0.0/0"


async def test_outside_a_conversation_there_are_no_restore_points_to_list(
    lab: EmulatedDeviceLab,
) -> None:
    executor, _ = make(lab, InMemoryCheckpointStore())
    listed = await run(executor, "restore_point", {"action": "list"}, approved=None)
    assert listed.status.value == "error"
    assert "kept with copilot conversations" in listed.output["error"]
    rolled = await run(executor, "restore_point", {"action": "rollback", "restore_point_id": "x"})
    assert "no restore point 'x'" in rolled.output["error"]


def planned_when(summary: str) -> str:
    """The moment a rollback preview's summary names (``…, as at <when>``)."""
    return summary.rsplit(", as at ", 1)[1]


async def test_a_deleted_router_comes_back_with_its_running_configuration(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, fake = make(lab, store)
    configured = await run(executor, "execute_multiple_device_config_commands", ROUTER_CHANGE)
    assert configured.output["status"] == "success", configured.output
    deleted = await run(executor, "delete_gns3_node", {"node_names": ["R1"]})
    assert deleted.output["status"] == "success", deleted.output
    assert "R1" not in {n["name"] for n in fake.nodes}
    router = lab["R1"]
    assert isinstance(router, EmulatedCiscoRouter)
    router.globals.clear()  # a router made again starts with nothing configured
    router.tree = type(router.tree)(
        (f"interface GigabitEthernet0/{n}", ["no ip address", "shutdown"]) for n in range(4)
    )

    rolled = await run(
        executor,
        "restore_point",
        {"action": "rollback", "restore_point_id": deleted.output["restore_point_id"]},
        call_id="call-2",
    )
    items = by_device(rolled)
    assert items["topology"]["output"]["actions"] == [
        "create node R1 again (dynamips) as it was: its properties, ports, label, symbol and "
        "position",
        "start R1 (it ran)",
    ]
    assert items["R1"]["status"] == "success", items["R1"]
    assert "ip route 0.0.0.0 0.0.0.0 10.0.0.1" in items["R1"]["output"]["commands_sent"]
    assert rolled.output["status"] == "success", rolled.output
    assert "ip route 0.0.0.0 0.0.0.0 10.0.0.1" in router.globals
    assert ("POST", "/nodes/node-2/start") in fake.requests  # its own id, started again
