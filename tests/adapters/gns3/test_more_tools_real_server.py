"""The tools that give the model more of GNS3, against a real gns3-server 3.0.6: snapshots,
link filters, deleting nodes and links, starting and stopping every node, waiting for a
console, notes on the canvas."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from adapters.gns3.lab._snapshot import LabSnapshot
from adapters.gns3.tools._links import LinkRef, find_link
from copilot_core import CopilotMode, ParsedToolCall, ToolResult
from tests.adapters.gns3.conftest import make_context

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

TEACHING = CopilotMode.TEACHING_ASSISTANT
AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT


class Lab:
    def __init__(self, client: Gns3Client, project_id: str, token: str) -> None:
        self.client = client
        self.executor = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=1.0))
        self.project_id = project_id
        self.token = token

    async def run(
        self, name: str, arguments: dict[str, Any], mode: CopilotMode = AUTOMATION
    ) -> ToolResult:
        call = ParsedToolCall.parse("call-1", name, json.dumps(arguments))
        result = await self.executor.execute(call, make_context(self.project_id, self.token, mode))
        json.dumps(result.output)
        return result


@pytest.fixture
async def lab(gns3_client: Gns3Client, project_id: str, admin_token: str) -> Lab:
    lab = Lab(gns3_client, project_id, admin_token)
    made = await lab.run(
        "create_gns3_node",
        {
            "nodes": [
                {"template_name": "VPCS", "name": "R1", "x": 0, "y": 0},
                {"template_name": "VPCS", "name": "R2", "x": 200, "y": 0},
                {"template_name": "VPCS", "name": "PC3", "x": 400, "y": 0},
            ]
        },
    )
    assert made.output["status"] == "success", made.output
    linked = await lab.run(
        "create_gns3_link",
        {"links": [{"node1": "R1", "port1": "e0", "node2": "R2", "port2": "e0"}]},
    )
    assert linked.output["status"] == "success", linked.output
    return lab


def only(result: ToolResult) -> dict[str, Any]:
    (entry,) = result.output["results"]
    return dict(entry)


# ================================================================== snapshots
async def test_snapshots_are_taken_listed_and_restored_by_name(lab: Lab) -> None:
    assert (await lab.run("gns3_snapshots", {"action": "list"}, TEACHING)).output == {
        "status": "success",
        "snapshots": [],
    }
    taken = only(await lab.run("gns3_snapshots", {"action": "create", "name": "baseline"}))
    assert taken["status"] == "success", taken
    again = only(await lab.run("gns3_snapshots", {"action": "create", "name": "baseline"}))
    assert again["status"] == "failed"
    assert "already exists" in again["error"]
    listed = (await lab.run("gns3_snapshots", {"action": "list"}, TEACHING)).output["snapshots"]
    assert [(s["name"], s["restore_point"]) for s in listed] == [("baseline", False)]
    assert listed[0]["created_at"].endswith("+00:00")

    await lab.run("delete_gns3_node", {"node_names": ["PC3"]})
    restored = only(await lab.run("gns3_snapshots", {"action": "restore", "name": "baseline"}))
    assert restored["status"] == "success", restored
    assert restored["output"]["nodes"] == ["PC3 (stopped)", "R1 (stopped)", "R2 (stopped)"]
    unknown = only(await lab.run("gns3_snapshots", {"action": "restore", "name": "nope"}))
    assert unknown["error"] == "No snapshot 'nope'; snapshots: baseline."


async def test_teaching_mode_lists_snapshots_but_takes_none(lab: Lab) -> None:
    refused = await lab.run("gns3_snapshots", {"action": "create", "name": "x"}, TEACHING)
    assert refused.status.value == "error"
    assert "lab automation" in refused.output["error"]
    assert await lab.client.snapshots(lab.token, lab.project_id) == []
    missing = await lab.run("gns3_snapshots", {"action": "restore"})
    assert "restore needs the snapshot's name" in missing.output["error"]


# =============================================================== link filters
async def test_link_filters_are_read_set_and_cleared_by_node_names(lab: Lab) -> None:
    got = only(
        await lab.run(
            "gns3_link_filters", {"node1": "R2", "node2": "R1", "action": "get"}, TEACHING
        )
    )
    assert got["device_name"] == "R1 Ethernet0 <-> R2 Ethernet0"
    assert got["output"]["filters"] == {}
    offered = {f["type"]: f for f in got["output"]["offered"]}
    assert set(offered) == {"frequency_drop", "packet_loss", "delay", "corrupt", "bpf"}
    assert offered["packet_loss"]["parameters"] == [
        {"name": "Chance", "minimum": 0, "maximum": 100, "unit": "%"}
    ]
    set_ = only(
        await lab.run(
            "gns3_link_filters",
            {
                "node1": "R1",
                "node2": "R2",
                "action": "set",
                "filters": {"packet_loss_percent": 20, "bpf": ["icmp", "udp port 53"]},
            },
        )
    )
    assert set_["output"]["filters"] == {"packet_loss_percent": 20, "bpf": ["icmp", "udp port 53"]}
    # set keeps what it does not name.
    more = only(
        await lab.run(
            "gns3_link_filters",
            {"node1": "R1", "node2": "R2", "action": "set", "filters": {"delay_ms": 80}},
        )
    )
    assert more["output"]["filters"] == {
        "packet_loss_percent": 20,
        "bpf": ["icmp", "udp port 53"],
        "delay_ms": 80,
        "jitter_ms": 0,
    }
    link = (await lab.client.links(lab.token, lab.project_id))[0]
    assert link["filters"] == {"packet_loss": [20], "bpf": ["icmp\nudp port 53"], "delay": [80, 0]}
    cleared = only(
        await lab.run(
            "gns3_link_filters", {"node1": "R1", "node2": "R2", "action": "clear", "names": ["bpf"]}
        )
    )
    assert cleared["output"]["filters"] == {
        "packet_loss_percent": 20,
        "delay_ms": 80,
        "jitter_ms": 0,
    }
    everything = only(
        await lab.run("gns3_link_filters", {"node1": "R1", "node2": "R2", "action": "clear"})
    )
    assert everything["output"]["filters"] == {}


async def test_a_filter_value_out_of_the_links_range_changes_nothing(lab: Lab) -> None:
    refused = only(
        await lab.run(
            "gns3_link_filters",
            {
                "node1": "R1",
                "node2": "R2",
                "action": "set",
                "filters": {"packet_loss_percent": 150, "drop_every_nth": -2},
            },
        )
    )
    assert refused["status"] == "failed"
    assert "packet_loss Chance: 150 is outside 0..100 %" in refused["error"]
    assert "frequency_drop Frequency: -2 is outside -1..32767 th packet" in refused["error"]
    assert (await lab.client.links(lab.token, lab.project_id))[0]["filters"] == {}


async def test_filters_of_a_link_that_does_not_exist_name_the_links_that_do(lab: Lab) -> None:
    missing = only(
        await lab.run("gns3_link_filters", {"node1": "R1", "node2": "PC3", "action": "get"})
    )
    assert missing["error"] == (
        "No link joins R1 <-> PC3; existing links: R1 Ethernet0 <-> R2 Ethernet0."
    )
    teaching = await lab.run(
        "gns3_link_filters",
        {"node1": "R1", "node2": "R2", "action": "set", "filters": {"corrupt_percent": 5}},
        TEACHING,
    )
    assert "lab automation" in teaching.output["error"]


# ==================================================================== deletes
async def test_nodes_and_links_are_deleted_by_name(lab: Lab) -> None:
    unlinked = only(await lab.run("delete_gns3_link", {"links": [{"node1": "R2", "node2": "R1"}]}))
    assert unlinked == {
        "device_name": "R2 <-> R1",
        "status": "success",
        "output": {"deleted": "R1 Ethernet0 <-> R2 Ethernet0"},
    }
    again = only(await lab.run("delete_gns3_link", {"links": [{"node1": "R2", "node2": "R1"}]}))
    assert again["error"] == "No link joins R2 <-> R1; existing links: none."
    deleted = await lab.run("delete_gns3_node", {"node_names": ["PC3", "Nobody"]})
    assert deleted.output["status"] == "partial_success"
    pc3, nobody = deleted.output["results"]
    assert pc3["output"] == {"deleted": True, "links_deleted": []}
    assert nobody["error"].startswith("No node named 'Nobody' in this project; existing nodes:")
    names = sorted(n["name"] for n in await lab.client.nodes(lab.token, lab.project_id))
    assert names == ["R1", "R2"]


# ============================================================ all nodes at once
async def test_starting_every_node_reports_each_nodes_own_error(lab: Lab) -> None:
    started = await lab.run("start_all_gns3_nodes", {})
    # No VPCS binary nor uBridge here: GNS3 refuses, and says why for each node.
    assert started.output["status"] == "failed"
    assert started.output["note"].startswith("GNS3 did not start every node at once:")
    assert {r["device_name"] for r in started.output["results"]} == {"R1", "R2", "PC3"}
    assert all("VPCS" in r["error"] or "uBridge" in r["error"] for r in started.output["results"])
    stopped = await lab.run("stop_all_gns3_nodes", {})
    assert stopped.output["status"] == "success"
    assert [r["output"] for r in stopped.output["results"]] == [{"status": "stopped"}] * 3


@pytest.mark.timeout(120)  # less than the wait asked for: only failing at once ends in time
async def test_waiting_for_a_stopped_nodes_console_fails_at_once(lab: Lab) -> None:
    waited = only(await lab.run("wait_for_console", {"node_names": ["R1"], "timeout_s": 240}))
    assert waited["status"] == "failed"
    assert waited["error"] == "R1 is stopped; start it first with start_gns3_node."


# ================================================================= annotations
async def test_a_note_is_drawn_above_a_node_with_its_text_escaped(lab: Lab) -> None:
    noted = only(await lab.run("gns3_annotate", {"text": "uplink <R2> & co", "near": "R2"}))
    assert noted["status"] == "success", noted
    assert (noted["output"]["x"], noted["output"]["y"]) == (200, -44)
    boxed = only(
        await lab.run(
            "gns3_annotate",
            {
                "kind": "rectangle",
                "x": -50,
                "y": -50,
                "width": 300,
                "height": 120,
                "color": "#ff0000",
            },
        )
    )
    assert boxed["status"] == "success", boxed
    drawings = {d["drawing_id"]: d for d in await lab.client.drawings(lab.token, lab.project_id)}
    text = drawings[noted["output"]["drawing_id"]]
    assert "uplink &lt;R2&gt; &amp; co</text>" in text["svg"]
    rect = drawings[boxed["output"]["drawing_id"]]
    assert '<rect width="300" height="120"' in rect["svg"]
    assert 'stroke="#ff0000"' in rect["svg"]
    assert (rect["x"], rect["y"]) == (-50, -50)
    unknown = only(await lab.run("gns3_annotate", {"text": "x", "near": "R9"}))
    assert unknown["status"] == "failed"
    bad = await lab.run("gns3_annotate", {"text": "x", "color": "red"})
    assert "color: Value error, a color like #ff0000" in bad.output["error"]


def test_a_link_between_two_nodes_joined_twice_needs_its_ports() -> None:
    ports = [
        {"name": f"Ethernet{n}", "short_name": f"e{n}", "adapter_number": n, "port_number": 0}
        for n in range(2)
    ]
    nodes = [{"name": name, "node_id": name.lower(), "ports": ports} for name in ("SW1", "SW2")]
    links = [
        {
            "link_id": f"l{n}",
            "nodes": [
                {"node_id": "sw1", "adapter_number": n, "port_number": 0},
                {"node_id": "sw2", "adapter_number": n, "port_number": 0},
            ],
        }
        for n in range(2)
    ]
    snapshot = LabSnapshot({}, nodes, links)
    ambiguous = find_link(snapshot, LinkRef(node1="SW2", node2="SW1"))
    assert ambiguous == (
        "Several links join SW2 <-> SW1 (SW1 Ethernet0 <-> SW2 Ethernet0; SW1 Ethernet1 <-> "
        "SW2 Ethernet1); name the ports (port1, port2)."
    )
    one = find_link(snapshot, LinkRef(node1="SW2", node2="SW1", port1="e1"))
    assert isinstance(one, dict) and one["link_id"] == "l1"
    wrong = find_link(snapshot, LinkRef(node1="SW1", node2="SW2", port1="e7"))
    assert wrong == "SW1 has no port 'e7'; its ports: Ethernet0 (in use), Ethernet1 (in use)."
