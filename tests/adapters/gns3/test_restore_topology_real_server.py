"""Restore points of the topology against a real gns3-server 3.0.6: taken before approved
changes (with a GNS3 snapshot, the nodes being stopped), rolled back by difference or by
the snapshot, and read back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolResult
from copilot_core.ports import ApprovalDecision, Clearance
from copilot_core.testing import InMemoryCheckpointStore

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
SESSION = "session-1"
APPROVED = ApprovalDecision(True, user_id="alice")


@pytest.fixture
async def store(project_id: str) -> InMemoryCheckpointStore:
    store = InMemoryCheckpointStore()
    now = datetime.now(UTC)
    await store.create_session(
        Session(
            thread_id=SESSION,
            user_id="alice",
            project_id=project_id,
            created_at=now,
            updated_at=now,
        )
    )
    return store


@pytest.fixture
def executor(gns3_client: Gns3Client, store: InMemoryCheckpointStore) -> Gns3ToolExecutor:
    return Gns3ToolExecutor(
        gns3_client, runner=ConsoleRunner(command_timeout=1.0), restore_points=store
    )


class Lab:
    def __init__(self, executor: Gns3ToolExecutor, project_id: str, token: str) -> None:
        self.executor = executor
        self.project_id = project_id
        self.token = token
        self.calls = 0

    async def run(
        self, name: str, arguments: dict[str, Any], *, approved: bool = True
    ) -> ToolResult:
        self.calls += 1
        call = ParsedToolCall.parse(f"call-{self.calls}", name, json.dumps(arguments))
        context = ToolContext(
            self.project_id,
            "alice",
            SESSION,
            AUTOMATION,
            AbortToken(),
            self.token,
        )
        clearance = Clearance(decision=APPROVED if approved else None)
        result = await self.executor.execute(call, context, clearance)
        json.dumps(result.output)
        return result

    async def topology(self) -> dict[str, Any]:
        return dict((await self.run("gns3_topology_reader", {}, approved=False)).output)

    async def rollback(self, point_id: str, *, use_snapshot: bool = False) -> ToolResult:
        return await self.run(
            "restore_point",
            {"action": "rollback", "restore_point_id": point_id, "use_snapshot": use_snapshot},
        )


@pytest.fixture
async def lab(executor: Gns3ToolExecutor, project_id: str, admin_token: str) -> Lab:
    lab = Lab(executor, project_id, admin_token)
    made = await lab.run(
        "create_gns3_node",
        {
            "nodes": [
                {"template_name": "VPCS", "name": "Alice"},
                {"template_name": "VPCS", "name": "Bob"},
            ]
        },
        approved=False,
    )
    assert made.output["status"] == "success", made.output
    linked = await lab.run(
        "create_gns3_link",
        {"links": [{"node1": "Alice", "port1": "e0", "node2": "Bob", "port2": "e0"}]},
        approved=False,
    )
    assert linked.output["status"] == "success", linked.output
    return lab


def without_templates(topology: dict[str, Any]) -> dict[str, Any]:
    nodes = [{k: v for k, v in n.items() if k != "template"} for n in topology["nodes"]]
    return {**topology, "nodes": nodes}


def topology_item(result: ToolResult) -> dict[str, Any]:
    return next(i for i in result.output["results"] if i["device_name"] == "topology")


async def test_rolling_back_a_creation_deletes_what_was_created(
    lab: Lab, store: InMemoryCheckpointStore, gns3_client: Gns3Client
) -> None:
    before = await lab.topology()
    made = await lab.run(
        "create_gns3_node", {"nodes": [{"template_name": "VPCS", "name": "Carol"}]}
    )
    linked = await lab.run(
        "create_gns3_link",
        {"links": [{"node1": "Carol", "port1": "e0", "node2": "Alice", "port2": "e0"}]},
    )
    assert linked.output["status"] == "failed"  # Alice's port is taken: nothing to undo there
    point = await store.restore_point(lab.project_id, SESSION, made.output["restore_point_id"])
    assert point is not None
    # Every node was stopped: a GNS3 snapshot was taken too, named for the restore point.
    snapshot_name = point.snapshot
    assert snapshot_name == f"copilot-{point.id}"
    listed = await gns3_client.snapshots(lab.token, lab.project_id)
    assert snapshot_name in {s["name"] for s in listed}
    assert [n["name"] for n in point.kept["topology"]["nodes"]] == ["Alice", "Bob"]

    rolled = await lab.rollback(point.id)
    topology = topology_item(rolled)
    assert topology["status"] == "success", rolled.output
    assert topology["output"]["state"] == "as before the change"
    assert topology["output"]["actions"] == ["delete node Carol (made by the change)"]
    assert rolled.output["notes"] == {"gns3_snapshot": "not used (use_snapshot is false)"}
    assert await lab.topology() == before


async def test_rolling_back_a_deletion_brings_the_node_its_link_filters_and_drawings_back(
    lab: Lab, gns3_client: Gns3Client
) -> None:
    filtered = await lab.run(
        "gns3_link_filters",
        {
            "node1": "Alice",
            "node2": "Bob",
            "action": "set",
            "filters": {"packet_loss_percent": 20, "delay_ms": 50, "jitter_ms": 5},
        },
        approved=False,
    )
    assert filtered.output["status"] == "success", filtered.output
    noted = await lab.run(
        "gns3_annotate", {"text": "Bob <serves> & answers", "near": "Bob"}, approved=False
    )
    assert noted.output["status"] == "success", noted.output
    # Bob's saved configuration, as VPCS's `save` leaves it in his directory.
    saved = b"set pcname Bob\nip 10.0.0.2 255.255.255.0 10.0.0.1\n"
    bob_id = next(
        n["node_id"]
        for n in await gns3_client.nodes(lab.token, lab.project_id)
        if n["name"] == "Bob"
    )
    await gns3_client.write_node_file(lab.token, lab.project_id, bob_id, "startup.vpc", saved)
    before = await lab.topology()
    deleted = await lab.run("delete_gns3_node", {"node_names": ["Bob"]})
    assert deleted.output["status"] == "success", deleted.output
    assert deleted.output["results"][0]["output"]["links_deleted"] == [
        "Alice Ethernet0 <-> Bob Ethernet0"
    ]
    drawn = await lab.run("gns3_annotate", {"kind": "rectangle", "x": 0, "y": 0})
    assert drawn.output["status"] == "success"
    assert [n["name"] for n in (await lab.topology())["nodes"]] == ["Alice"]

    rolled = await lab.rollback(deleted.output["restore_point_id"])
    topology = topology_item(rolled)
    assert topology["status"] == "success", rolled.output
    assert topology["output"]["actions"] == [
        "create node Bob again (vpcs) as it was: its properties, ports, label, symbol and position",
        "link Alice Ethernet0 <-> Bob Ethernet0 again",
    ]
    # The rectangle drawn since is another change: it stays. Bob is made from his own JSON
    # (GNS3 3.0.6 keeps no template id on a node made so: the summary names none).
    assert without_templates(await lab.topology()) == without_templates(before)
    assert len(await gns3_client.drawings(lab.token, lab.project_id)) == 2
    filters = await lab.run(
        "gns3_link_filters", {"node1": "Alice", "node2": "Bob", "action": "get"}, approved=False
    )
    assert filters.output["results"][0]["output"]["filters"] == {
        "packet_loss_percent": 20,
        "delay_ms": 50,
        "jitter_ms": 5,
    }
    # Bob's saved configuration came back with him.
    bob = next(i for i in rolled.output["results"] if i["device_name"] == "Bob")
    assert bob["status"] == "success", bob
    assert bob["output"]["files_written"] == ["startup.vpc"]
    new_bob = next(
        n["node_id"]
        for n in await gns3_client.nodes(lab.token, lab.project_id)
        if n["name"] == "Bob"
    )
    assert new_bob == bob_id  # made again with its own id
    assert await gns3_client.node_file(lab.token, lab.project_id, new_bob, "startup.vpc") == saved


async def test_a_rollback_by_the_gns3_snapshot_brings_the_whole_project_back(
    lab: Lab, gns3_client: Gns3Client, store: InMemoryCheckpointStore
) -> None:
    before = await lab.topology()
    renamed = await lab.run(
        "update_gns3_node_name", {"nodes": [{"node_name": "Alice", "new_name": "Carol"}]}
    )
    assert renamed.output["status"] == "success"
    unlinked = await lab.run("delete_gns3_link", {"links": [{"node1": "Carol", "node2": "Bob"}]})
    assert unlinked.output["status"] == "success", unlinked.output
    ids_before = {n["node_id"] for n in await gns3_client.nodes(lab.token, lab.project_id)}

    rolled = await lab.rollback(renamed.output["restore_point_id"], use_snapshot=True)
    topology = topology_item(rolled)
    assert topology["status"] == "success", rolled.output
    assert topology["output"]["gns3_snapshot_restored"].startswith("copilot-")
    assert topology["output"]["actions"] == []  # the snapshot did it all
    assert await lab.topology() == before
    ids_after = {n["node_id"] for n in await gns3_client.nodes(lab.token, lab.project_id)}
    assert not ids_before & ids_after  # GNS3 gave every node a new id
    # ... which the point keeps, old -> new, for the session's later rollbacks.
    point = await store.restore_point(lab.project_id, SESSION, renamed.output["restore_point_id"])
    assert point is not None
    id_map = point.id_map
    assert {id_map[i] for i in ids_before if i in id_map} == ids_after
    # The unlink's own point follows the map to the nodes' new ids: the link it would
    # make again is there already (the snapshot has it), which it says, touching nothing.
    relinked = await lab.rollback(unlinked.output["restore_point_id"])
    assert relinked.output["status"] == "conflict", relinked.output
    assert relinked.output["conflicts"] == [
        "Alice port 0/0 was linked since: Alice Ethernet0 <-> Bob Ethernet0"
    ]
    assert await lab.topology() == before


async def test_a_rollback_is_itself_undone_by_its_own_restore_point(lab: Lab) -> None:
    before = await lab.topology()
    deleted = await lab.run("delete_gns3_link", {"links": [{"node1": "Alice", "node2": "Bob"}]})
    after_delete = await lab.topology()
    rolled = await lab.rollback(deleted.output["restore_point_id"])
    assert await lab.topology() == before
    undone = await lab.rollback(rolled.output["restore_point_id"])
    assert topology_item(undone)["status"] == "success", undone.output
    assert await lab.topology() == after_delete


async def test_link_filter_changes_and_snapshot_restores_are_rolled_back(lab: Lab) -> None:
    before = await lab.topology()
    filtered = await lab.run(
        "gns3_link_filters",
        {"node1": "Bob", "node2": "Alice", "action": "set", "filters": {"bpf": ["icmp"]}},
    )
    assert filtered.output["status"] == "success", filtered.output
    rolled = await lab.rollback(filtered.output["restore_point_id"])
    assert topology_item(rolled)["output"]["actions"] == [
        "set link Alice Ethernet0 <-> Bob Ethernet0's filters back"
    ]
    assert await lab.topology() == before
