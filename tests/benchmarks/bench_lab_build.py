"""Lab builds on the real router lab (issue 39): how long ``build_lab`` takes.

Run: ``flock /tmp/router-lab.lock python -m tests.benchmarks.bench_lab_build [--sizes 3,6]
[--consoles 4,1] [--quick]`` (it needs the router lab: root, dockerd, the FRR image;
without it, it says so and exits 0). For each size N: a ring of N FRR routers running
OSPF with a Linux host behind each (``plan_from_intent``; three routers are the
triangle), built in an empty scratch project as the chat builds it: ``build_lab`` through
the gate, approved, one verified change (restore point, build, the plan's checks retried
until they hold). Each size is built once per ``--consoles`` value: the devices
configured ``build_consoles`` (4) at a time, and one at a time (1); ``--quick`` builds 3
routers, 4 at a time, only.

Printed per build: each stage's seconds (nodes, links, start, configure, the build's
total), the seconds until the first run of all the checks that passed (``checks_s``:
every check holds from then on), the whole approved call (``call_s``), the number of
checks, the service's memory: this process runs the service's parts (the gate, the tool
source, the console runner), its resident set before the build and at its peak
(``rss_mib``, ``peak_rss_mib``), and the length of the call's result as JSON
(``result_chars``: the agent cuts a result at ``agent.max_result_chars``). The scratch
project is deleted after each build. It asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.gns3 import ConsoleRunner, Gns3Client, Gns3ToolExecutor, Gns3ToolSettings
from adapters.gns3.labs import BUILD_TOOL, Gns3LabPlanner, LabBuildTools
from copilot_core import AbortToken, CopilotMode, ParsedToolCall, Session, ToolContext, ToolGate
from copilot_core.labs import HostIntent, LabIntent, plan_data, plan_from_intent
from copilot_core.ports import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from copilot_core.testing import InMemoryCheckpointStore
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, LabUnavailableError, RouterLab

SESSION = "bench-build"


def ring(size: int) -> dict[str, Any]:
    routers = tuple(f"R{i}" for i in range(1, size + 1))
    links = tuple((routers[i], routers[(i + 1) % size]) for i in range(size))
    plan = plan_from_intent(
        LabIntent(
            routers=routers,
            links=links,
            hosts=tuple(HostIntent(name=f"H{i}", behind=f"R{i}") for i in range(1, size + 1)),
            pool="10.10.0.0/16",
        )
    )
    data = plan_data(plan)
    for node in data["nodes"]:
        node["template"] = ROUTER_TEMPLATE if node["platform"] == "frr" else HOST_TEMPLATE
    return data


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def build(lab: RouterLab, project: LabProject, size: int, consoles: int) -> dict[str, Any]:
    store = InMemoryCheckpointStore()
    now = datetime.now(UTC)
    await store.create_session(
        Session(
            thread_id=SESSION, user_id="bench", project_id=project.project, created_at=now,
            updated_at=now,
        )
    )  # fmt: skip
    figures: dict[str, Any] = {"routers": size, "consoles": consoles, "rss_mib": rss_mib()}
    async with Gns3Client(lab.url, timeout=60.0) as client:
        runner = ConsoleRunner()
        try:
            executor = Gns3ToolExecutor(
                client,
                runner=runner,
                restore_points=store,
                settings=Gns3ToolSettings(build_consoles=consoles),
            )
            tools = LabBuildTools(executor.lab, Gns3LabPlanner(executor.lab), executor.probes)
            context = ToolContext(
                project_id=project.project, user_id="bench", session_id=SESSION,
                mode=CopilotMode.LAB_AUTOMATION_ASSISTANT, abort=AbortToken(),
                credentials=project.token, approval=ApprovalPolicy.CHANGES,
            )  # fmt: skip
            plan = ring(size)
            call = ParsedToolCall.parse(
                "bench", BUILD_TOOL, json.dumps({"plan": plan, "wait_s": 120})
            )
            # the result's whole verification is read here: no cap on its length (the
            # agent's is max_result_chars: a verified change over it has its evidence cut)
            gate = ToolGate(tools, timeout=900, max_result_chars=50_000_000)
            flow = gate.exchange(call, context)
            asked = await anext(flow)
            assert isinstance(asked, ApprovalRequest), asked
            began = time.monotonic()
            result = await flow.asend(ApprovalDecision(True, user_id="bench"))
            figures["call_s"] = round(time.monotonic() - began, 1)
            await flow.aclose()
        finally:
            await runner.aclose()
    output = result.output
    figures["result_chars"] = len(json.dumps(output))
    if output.get("error"):
        figures["error"] = str(output["error"])[:300]
    verification = output.get("verification") or {}
    after = verification.get("after") or {}
    figures.update(output.get("timings_s") or {})
    figures["checks"] = len(plan.get("checks") or [])
    figures["checks_status"] = after.get("status")
    figures["checks_s"] = after.get("waited_s")
    figures["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    figures["rss_mib"] = round(figures["rss_mib"], 1)
    if output.get("problems"):
        figures["problems"] = output["problems"][:3]
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="3,6", help="router counts, comma-separated")
    parser.add_argument("--consoles", default="4,1", help="build_consoles values, in order")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    bounds = [int(c) for c in args.consoles.split(",")]
    sizes = [3] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = [(n, 4) for n in sizes] if args.quick else [(n, c) for n in sizes for c in bounds]
    lab = RouterLab()
    try:
        lab.start()
    except LabUnavailableError as exc:
        print(f"bench_lab_build: the router lab cannot run here: {exc}")
        return 0
    try:
        for size, consoles in runs:
            token = lab.server.token()
            project = LabProject(lab, token, lab.server.new_project(f"bench-{size}", token))
            try:
                figures = asyncio.run(build(lab, project, size, consoles))
            finally:
                project.delete()
            print("lab build:", json.dumps(figures), flush=True)
    finally:
        lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
