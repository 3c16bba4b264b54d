"""``capture_lab_state`` and ``diff_lab_state`` on the real router lab (PC1 – R1 – R2 – PC2,
FRR 8.4 and Linux hosts), through the tools as the agent calls them: a capture of the
converged lab; R2's link to R1 shut on R2's console; once R1 has lost the adjacency (a
bounded wait on ``verify_intent``, not a sleep), the diff names the lost OSPF adjacency
R1–R2, the lost routes, the interface down, the PCs that no longer reach each other and the
configuration line; the link is put back and the diff from the break shows it all regained.
How long a capture takes is printed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor
from copilot_core import CopilotMode, ParsedToolCall
from tests.adapters.gns3.conftest import make_context
from tests.lab.lab_project import LabProject
from tests.lab.test_intent_lab import OSPF_FULL, PC1_PC2, configure, topology

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

__all__ = ["topology"]  # the lab's PC1 – R1 – R2 – PC2, as test_frr_lab builds it

FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def lab(topology: LabProject) -> Iterator[LabProject]:
    yield topology
    print("\nlab state figures:", {k: round(v, 2) for k, v in FIGURES.items()}, flush=True)


def entries(diff: dict[str, Any], category: str, **match: Any) -> list[dict[str, Any]]:
    return [e for e in diff.get(category, []) if all(e.get(k) == v for k, v in match.items())]


async def shut(lab: LabProject, on: bool) -> None:
    line = "shutdown" if on else "no shutdown"
    done = await ConsoleRunner(command_timeout=20.0).run(
        lab.target("R2"), ["interface eth1", line], config_mode=True
    )
    assert done.error is None, done.error


def test_the_diff_across_r2s_link_shut_names_the_lost_adjacency_and_routes(
    lab: LabProject,
) -> None:
    configure(lab)

    async def scenario() -> None:
        async with Gns3Client(lab.lab.url, timeout=120.0) as client:
            tools = Gns3ToolExecutor(client, runner=ConsoleRunner(command_timeout=20.0))
            context = make_context(lab.project, lab.token, CopilotMode.TEACHING_ASSISTANT)

            async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await tools.execute(
                    ParsedToolCall.parse("c1", name, json.dumps(arguments)), context
                )
                assert result.status.value == "success", result.output
                output: dict[str, Any] = result.output
                return output

            held = await call("verify_intent", {"checks": [OSPF_FULL, PC1_PC2], "wait_s": 120})
            assert held["status"] == "pass", json.dumps(held, indent=1)

            begun = time.monotonic()
            first = await call("capture_lab_state", {})
            FIGURES["capture_s"] = time.monotonic() - begun
            print("\ncapture summary:", json.dumps(first), flush=True)
            rows = {row["node"]: row for row in first["nodes"]}
            assert set(rows) == {"PC1", "PC2", "R1", "R2"}
            assert rows["R1"]["adjacencies_up"] == 2  # OSPF Full and BGP with R2
            assert first["reachability"]["reachable"] == 2

            await shut(lab, True)
            cut = time.monotonic()
            try:
                lost = {**OSPF_FULL, "state": "down", "name": "R1-R2 lost"}
                gone = await call("verify_intent", {"checks": [lost], "wait_s": 90})
                FIGURES["adjacency_lost_seen_after_s"] = time.monotonic() - cut
                assert gone["status"] == "pass", json.dumps(gone, indent=1)

                begun = time.monotonic()
                diff = await call("diff_lab_state", {"from": first["state_id"]})
                FIGURES["diff_with_fresh_capture_s"] = time.monotonic() - begun
                print("diff across the break:", json.dumps(diff, indent=1), flush=True)
                (adjacency,) = entries(diff, "adjacencies", node="R1", protocol="ospf")
                assert adjacency["neighbor"] == "2.2.2.2"
                assert adjacency["peer_node"] == "R2"
                assert (adjacency["change"], adjacency["before"]) == ("lost", "full")
                assert entries(diff, "adjacencies", node="R2", protocol="ospf", change="lost")
                assert entries(diff, "routes", node="R1", prefix="10.0.2.0/24", change="removed")
                assert entries(diff, "routes", node="R2", prefix="10.0.1.0/24", change="removed")
                assert entries(diff, "interfaces", node="R2", interface="eth1", change="down")
                assert entries(diff, "reachability", change="lost") == [
                    {"from": "PC1", "to": "PC2", "change": "lost", "address": "10.0.2.10"},
                    {"from": "PC2", "to": "PC1", "change": "lost", "address": "10.0.1.10"},
                ]
                assert entries(diff, "config", node="R2") == [
                    {"node": "R2", "added": ["interface eth1 / shutdown"]}
                ]
                broken = diff["to"]
            finally:
                await shut(lab, False)

            back = await call("verify_intent", {"checks": [OSPF_FULL, PC1_PC2], "wait_s": 120})
            assert back["status"] == "pass", json.dumps(back, indent=1)
            healed = await call("diff_lab_state", {"from": broken, "to": "now"})
            print("diff after the link is back:", json.dumps(healed, indent=1), flush=True)
            (regained,) = entries(healed, "adjacencies", node="R1", protocol="ospf")
            assert (regained["change"], regained["after"]) == ("gained", "full")
            assert entries(healed, "routes", node="R1", prefix="10.0.2.0/24", change="added")
            assert len(entries(healed, "reachability", change="gained")) == 2
            assert entries(healed, "config", node="R2") == [
                {"node": "R2", "removed": ["interface eth1 / shutdown"]}
            ]

    asyncio.run(scenario())
