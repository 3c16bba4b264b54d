"""A verified change's result says each thing once (issue 39: a 10-router build's result was
184k characters, every check's evidence before and after the build): a check that holds
by its name, one that does not with the evidence that decided it, in the phase where it
did not hold. Its size grows with the number of checks, not with their evidence, and one
still longer than the gate's cap has its evidence cut, never its verdicts, before the gate
would cut its text.

The build is the benchmark's (``tests/benchmarks/bench_lab_build.py``): a ring of 10 FRR
routers with a host behind each (``plan_from_intent``: 190 checks), its evidence as the
GNS3 probe words it for FRR and Linux hosts (``adapters/gns3/model/_intent_*``), without
the router lab."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolGate,
    ToolResult,
    ToolStatus,
)
from copilot_core._tools import render_tool_output
from copilot_core.events import ApprovalNeeded, ToolEndEvent
from copilot_core.intent import (
    Check,
    CheckProbe,
    CheckResult,
    CheckStatus,
    Evidence,
    IntentResult,
    Observation,
    OspfNeighborCheck,
    ReachabilityCheck,
    RouteCheck,
    VerificationPlan,
    VerifiedChange,
    check_label,
    check_node,
)
from copilot_core.labs import HostIntent, LabIntent, plan_from_intent
from copilot_core.ports import ApprovalDecision, ApprovalPolicy, Assessment, ChangeSteps
from copilot_core.testing import FakeToolExecutor, FakeWaitClock

ROUTERS = tuple(f"R{i}" for i in range(1, 11))
HOSTS = tuple(f"H{i}" for i in range(1, 11))
CAP = 200_000  # the gate's default cap (agent.max_result_chars)


def ring_checks() -> tuple[Check, ...]:
    links = tuple((ROUTERS[i], ROUTERS[(i + 1) % 10]) for i in range(10))
    hosts = tuple(HostIntent(name=h, behind=r) for h, r in zip(HOSTS, ROUTERS, strict=True))
    plan = plan_from_intent(
        LabIntent(routers=ROUTERS, links=links, hosts=hosts, pool="10.10.0.0/16")
    )
    return tuple(plan.checks)


CHECKS = ring_checks()


def held(check: Check, lines: int = 1) -> CheckResult:
    """A check that holds, its evidence as the probe gives it (``lines``: more of it)."""
    if isinstance(check, ReachabilityCheck):
        said = tuple(
            f"64 bytes from {check.to}: seq={i} ttl=61 time=0.{400 + i} ms" for i in range(3)
        )
        observed: Any = {"to": check.to, "sent": 3, "replies": 3, "reachable": True}
        evidence = Evidence(check.source, f"ping -c 3 -W 2 {check.to}", said * lines)
    elif isinstance(check, RouteCheck):
        said = (f"O>* {check.prefix} [110/30] via 10.10.0.2, eth0, weight 1, 00:00:24",)
        observed = {
            "prefix": check.prefix, "present": True, "code": "O", "via": ["10.10.0.2"],
            "interfaces": ["eth0"],
        }  # fmt: skip
        evidence = Evidence(check.node, "show ip route", said * lines)
    else:
        assert isinstance(check, OspfNeighborCheck)
        said = (
            f"{check.neighbor}           1 Full/-          36.412s           9.102s 10.10.0.2"
            "       eth0:10.10.0.1                     0     0     0",
        )
        observed = {
            "neighbor": check.neighbor, "neighbor_id": check.neighbor, "address": "10.10.0.2",
            "state": "full", "interface": "eth0:10.10.0.1",
        }  # fmt: skip
        evidence = Evidence(check.node, "show ip ospf neighbor", said * lines)
    return CheckResult(check, CheckStatus.PASS, observed, (evidence,), 1, 0.0)


def absent(check: Check) -> CheckResult:
    """A check of a node the empty project does not have yet (before the build)."""
    why = (
        f"No node named {check_node(check)!r} in this project; existing nodes: none (the "
        "project has no nodes)."
    )
    return CheckResult(check, CheckStatus.ERROR, None, (), 1, 0.0, why)


def no_reply(check: Check, lines: int = 1) -> CheckResult:
    assert isinstance(check, ReachabilityCheck)
    said = ("3 packets transmitted, 0 packets received, 100% packet loss",) * lines
    evidence = Evidence(check.source, f"ping -c 3 -W 2 {check.to}", said)
    observed = {"to": check.to, "sent": 3, "replies": 0, "reachable": False}
    why = f"{check.source} got no reply from {check.to} (still so after 120 s)"
    return CheckResult(check, CheckStatus.FAIL, observed, (evidence,), 40, 120.0, why)


def report() -> dict[str, Any]:
    """The build's own report (nodes, links, devices, timings), as build_lab answers."""
    nodes = [*ROUTERS, *HOSTS]
    uuid = "5f1c2a3b-0000-4000-8000-{:012d}"
    return {
        "status": "success",
        "nodes": [
            {"name": n, "node_id": uuid.format(i), "created": True} for i, n in enumerate(nodes)
        ],
        "links": [
            {"link": f"R{i}:eth0-R{i % 10 + 1}:eth1", "link_id": uuid.format(i), "created": True}
            for i in range(1, 21)
        ],
        "devices": [{"name": n, "lines": 17, "configured": True, "seconds": 2.1} for n in nodes],
        "problems": [],
        "timings_s": {"nodes": 3.1, "links": 2.0, "start": 12.0, "configure": 6.0, "total": 23.1},
        "restore_point_id": "77a1c2a3-0000-4000-8000-000000000001",
    }


LINKS_NOW = [f"R{i}:eth0 - R{i % 10 + 1}:eth1" for i in range(1, 21)]
PLAN = VerificationPlan(CHECKS, (), "rollback", 120.0)
EVERY = tuple(range(len(CHECKS)))


def passing_build(lines: int = 1) -> VerifiedChange:
    return VerifiedChange(
        PLAN,
        ToolResult(report()),
        IntentResult(tuple(absent(c) for c in CHECKS)),
        EVERY,
        IntentResult(tuple(held(c, lines) for c in CHECKS), 31.4),
        reason="every check held",
        observed={"lab_now": {"nodes": sorted([*ROUTERS, *HOSTS]), "links": LINKS_NOW}},
    )


def rolled_back_build(failing: int, lines: int = 1) -> VerifiedChange:
    """A build whose first ``failing`` checks (pings) do not hold: rolled back, and after
    the rollback no check holds (its nodes are gone), as before the build."""
    after = tuple(
        no_reply(c, lines) if i < failing else held(c, lines) for i, c in enumerate(CHECKS)
    )
    return VerifiedChange(
        PLAN,
        ToolResult(report()),
        IntentResult(tuple(absent(c) for c in CHECKS)),
        EVERY,
        IntentResult(after, 120.0),
        ToolResult({"status": "success", "deleted": {"links": LINKS_NOW, "nodes": list(ROUTERS)}}),
        IntentResult(tuple(absent(c) for c in CHECKS), 0.5),
        "a check failed: the change was rolled back, but not every check holds again",
        tuple(f"{check_label(c)}: no reply" for c in CHECKS[:failing]),
        {"lab_now": {"nodes": [], "links": []}},
    )


def read(output: Any) -> int:
    """The result's length as the model reads it (what the gate's cap measures)."""
    return len(render_tool_output(output))


def test_a_ten_router_builds_result_grows_with_its_checks_not_their_evidence() -> None:
    assert len(CHECKS) == 190  # the benchmark's 10-router ring
    result = passing_build().to_result(CAP)
    verification = result.output["verification"]
    # Each check that holds is named, its evidence is not kept: before, nothing held.
    assert verification["after"]["passed"] == [check_label(c) for c in CHECKS]
    assert verification["after"]["checks"] == []
    assert verification["before"]["held"] == []
    assert verification["before"]["summary"] == {"pass": 0, "fail": 0, "error": 190}
    assert "cut" not in verification
    # Ten times the evidence: not one character more.
    longer = passing_build(lines=10).to_result(CAP)
    assert read(longer.output) == read(result.output)
    # A bound per check (its name, said at most three times), whatever its evidence says.
    per_check = 3 * max(len(json.dumps(check_label(c))) + 8 for c in CHECKS)
    assert read(verification) <= per_check * len(CHECKS) + 1_000
    print(
        f"\n10-router build, 190 checks, passing: {len(json.dumps(result.output))} characters"
        f" of JSON, {read(result.output)} as the model reads it"
        f" (verification {read(verification)})"
    )


def test_a_failing_check_is_said_once_with_the_evidence_that_decided_it() -> None:
    result = rolled_back_build(failing=1).to_result(CAP)
    assert result.status is ToolStatus.ERROR and result.output["status"] == "rolled_back"
    verification = result.output["verification"]
    (failed,) = verification["after"]["checks"]
    assert failed["name"] == check_label(CHECKS[0]) and failed["status"] == "fail"
    assert failed["evidence"][0]["command"].startswith("ping -c 3")
    assert failed["held_before"] is False
    assert len(verification["after"]["passed"]) == 189
    text = render_tool_output(result.output)
    assert text.count("100% packet loss") == 1  # its evidence, once
    # After the rollback no check holds, as before the build: by name, not in full.
    again = verification["after_rollback"]
    assert again["status"] == "error" and again["checks"] == []
    assert again["as_before"] == [check_label(c) for c in CHECKS]
    assert text.count("No node named") == 0  # the reasons of what was not there before
    # Consumers read the same fields: the deciding checks, the rollback, what the lab is.
    assert verification["rolled_back"] is True and verification["lab_now"]["nodes"] == []
    print(
        f"\n10-router build, 1 check failed, rolled back: {len(json.dumps(result.output))}"
        f" characters of JSON, {read(result.output)} as the model reads it"
    )


def test_a_result_over_the_cap_has_its_evidence_cut_never_a_verdict() -> None:
    outcome = rolled_back_build(failing=90, lines=40)  # every ping fails, with long output
    whole = outcome.to_result()
    assert read(whole.output) > 300_000
    cut = outcome.to_result(150_000)
    assert read(cut.output) <= 150_000
    assert cut.status is whole.status and cut.metadata == whole.metadata
    verification = cut.output["verification"]
    assert "evidence" in verification["cut"] and str(read(whole.output)) in verification["cut"]
    failed = verification["after"]["checks"]
    full = whole.output["verification"]["after"]["checks"]
    assert len(failed) == len(full) == 90  # every verdict stays, with its reason and command
    for said, was in zip(failed, full, strict=True):
        assert {**said, "evidence": None} == {**was, "evidence": None}
        (evidence,) = said["evidence"]
        assert evidence["command"] == was["evidence"][0]["command"]
        lines = evidence["lines"]
        assert 0 < len(lines) < 40 and lines == was["evidence"][0]["lines"][: len(lines)]
    assert (
        cut.output["restore_point_id"] == report()["restore_point_id"]
        and cut.output["status"] == "rolled_back"
    )
    # What fits is left as it is.
    assert outcome.to_result(read(whole.output)).output == whole.output


def test_a_result_far_over_the_cap_keeps_its_verdicts_and_counts() -> None:
    outcome = rolled_back_build(failing=90, lines=40)
    whole = outcome.to_result().output["verification"]
    # At 70k: each failing check is its verdict, and where its evidence came from.
    cut = outcome.to_result(70_000).output
    assert read(cut) <= 70_000
    verification = cut["verification"]
    failed = verification["after"]["checks"]
    assert failed == [
        {
            "name": check["name"],
            "kind": "reachability",
            "status": "fail",
            "reason": check["reason"],
            "held_before": False,
            "evidence": [
                {"node": check["evidence"][0]["node"], "command": check["evidence"][0]["command"]}
            ],
        }
        for check in whole["after"]["checks"]
    ]
    assert verification["after"]["summary"] == {"pass": 100, "fail": 90, "error": 0}
    assert len(verification["after"]["passed"]) == 100  # the names still fit
    assert "definition" in verification["cut"] and "names" not in verification["cut"]
    # At 60k the names go too, their counts stay.
    cut = outcome.to_result(60_000).output
    assert read(cut) <= 60_000
    verification = cut["verification"]
    assert "passed" not in verification["after"] and "held" not in verification["before"]
    assert "as_before" not in verification["after_rollback"]
    assert verification["after_rollback"]["summary"] == {"pass": 0, "fail": 0, "error": 190}
    assert [c["status"] for c in verification["after"]["checks"]] == ["fail"] * 90
    assert "names" in verification["cut"]


# ---------------------------------------------------------------------- through the gate
@dataclass
class Probe:
    """Every check fails, with a long output as its evidence."""

    async def observe(self, checks: Sequence[Check]) -> list[Observation]:
        lines = tuple(f"line {i} of a long output " * 3 for i in range(60))
        return [Observation.failed({}, "absent", Evidence("R1", "show run", lines))] * len(checks)


@dataclass
class Steps:
    plan: VerificationPlan
    interval: float = 1.0

    @property
    def probe(self) -> CheckProbe:
        return Probe()

    async def restore_point(self) -> ToolResult | None:
        return None

    async def apply(self) -> ToolResult:
        return ToolResult({"status": "success", "restore_point_id": "rp-1"})

    async def roll_back(self) -> ToolResult | None:
        return ToolResult({"status": "success"})

    async def observed(self, rolled_back: bool) -> Mapping[str, Any]:
        return {}


class Tools(FakeToolExecutor):
    def __init__(self) -> None:
        super().__init__()
        self.add("configure", lambda args, ctx: {"status": "success"})

    async def change_steps(
        self, call: ParsedToolCall, context: ToolContext, assessment: Assessment
    ) -> ChangeSteps | None:
        return Steps(replace(PLAN, wait_s=0.0))


async def test_the_gate_fits_a_verified_change_to_its_cap_rather_than_cut_its_text() -> None:
    gate = ToolGate(Tools(), wait_clock=FakeWaitClock(), max_result_chars=100_000)
    context = ToolContext(
        "p", "alice", "s", CopilotMode.LAB_AUTOMATION_ASSISTANT, AbortToken(), "t",
        approval=ApprovalPolicy.CHANGES,
    )  # fmt: skip
    call = ParsedToolCall.parse("call-1", "configure", "{}")
    ended: list[ToolEndEvent] = []
    async for event in gate.run([call], context):
        if isinstance(event, ApprovalNeeded):
            event.answer(ApprovalDecision(True, "alice"))
        if isinstance(event, ToolEndEvent):
            ended.append(event)
    (end,) = ended
    output = end.output
    assert read(output) <= 100_000
    # Still the change's result, not the gate's cut text: its status, restore point, and
    # every check's verdict; the evidence's lines cut, as it says.
    assert "truncated" not in output
    assert output["status"] == "rolled_back" and output["restore_point_id"] == "rp-1"
    verification = output["verification"]
    assert len(verification["after"]["checks"]) == 190 and "cut" in verification
