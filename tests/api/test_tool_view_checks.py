"""The tool card's view of checks: ``verify_intent``'s result and a verified change's
``verification`` as one row per check with its verdict in each phase, built from the
core's own result objects (the shapes the tools answer with)."""

from __future__ import annotations

import json
import re

from adapters.web._toolview import render_tool_html
from copilot_core import ToolResult, ToolStatus
from copilot_core.intent import (
    CheckResult,
    CheckStatus,
    Evidence,
    IntentResult,
    VerificationPlan,
    VerifiedChange,
    checks_adapter,
)

PING, OSPF = checks_adapter.validate_python(
    [
        {"kind": "reachability", "from": "PC1", "to": "PC2", "name": "PC1 reaches PC2"},
        {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"},
    ]
)


def verdict(check: object, status: CheckStatus, reason: str | None = None) -> CheckResult:
    evidence = (Evidence("PC1", "ping 10.0.2.10 -c 3", ("3 packets transmitted, 0 received",)),)
    return CheckResult(check, status, {"replies": 0}, evidence, 1, 0.5, reason)  # type: ignore[arg-type]


def cells(html: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html)
    return [
        [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]
        for row in rows
    ]


def test_a_rolled_back_change_shows_each_check_before_after_and_after_the_rollback() -> None:
    plan = VerificationPlan((PING,), (OSPF,))
    outcome = VerifiedChange(
        plan,
        ToolResult({"status": "success", "results": []}),
        before=IntentResult((verdict(PING, CheckStatus.PASS), verdict(OSPF, CheckStatus.PASS))),
        deciding=(0, 1),
        after=IntentResult(
            (
                verdict(PING, CheckStatus.FAIL, "PC1 got no reply from 10.0.2.10"),
                verdict(OSPF, CheckStatus.FAIL, "R1 has no OSPF neighbour R2"),
            )
        ),
        rollback=ToolResult({"status": "success"}, ToolStatus.SUCCESS),
        after_rollback=IntentResult(
            (verdict(PING, CheckStatus.PASS), verdict(OSPF, CheckStatus.PASS))
        ),
        reason="a check failed: the change was rolled back, and the checks hold again",
        failed=("PC1 reaches PC2: PC1 got no reply",),
    )
    output = {
        "status": "rolled_back",
        "error": "The change was rolled back.",
        "results": [],
        "verification": {
            **outcome.to_dict(),
            "diff": {"summary": "1 adjacency lost, 1 interface down"},
            "diff_after_rollback": {"no_difference": True, "summary": "no difference"},
        },
    }
    html = render_tool_html(json.dumps(output), "error")
    assert "Verification: rolled back: a check failed" in html
    assert cells(html)[:3] == [
        ["check", "before", "after", "after rollback"],
        ["PC1 reaches PC2", "pass", "fail PC1 got no reply from 10.0.2.10", "pass"],
        ["R1 OSPF neighbour R2 full", "pass", "fail R1 has no OSPF neighbour R2", "pass"],
    ]
    assert "the checks hold again" in html
    assert "What changed: 1 adjacency lost, 1 interface down" in html
    assert "After the rollback: no difference" in html
    assert "tv-checks" in html and "tv-verification" in html  # kept by the sanitiser


def test_a_verified_change_that_held_has_no_rollback_column() -> None:
    plan = VerificationPlan((PING,))
    outcome = VerifiedChange(
        plan,
        ToolResult({"status": "success", "results": []}),
        before=IntentResult((verdict(PING, CheckStatus.FAIL, "no reply"),)),
        deciding=(0,),
        after=IntentResult((verdict(PING, CheckStatus.PASS),)),
        reason="every check held",
    )
    html = render_tool_html(
        json.dumps({"status": "success", "results": [], "verification": outcome.to_dict()})
    )
    assert "Verification: every check held" in html
    assert cells(html)[:2] == [
        ["check", "before", "after"],
        ["PC1 reaches PC2", "fail no reply", "pass"],
    ]


def test_verify_intents_result_is_a_table_of_checks() -> None:
    result = IntentResult(
        (verdict(PING, CheckStatus.PASS), verdict(OSPF, CheckStatus.ERROR, "R9 is not a node"))
    )
    html = render_tool_html(json.dumps(result.to_dict()))
    assert cells(html) == [
        ["check", "error"],
        ["PC1 reaches PC2", "pass"],
        ["R1 OSPF neighbour R2 full", "error R9 is not a node"],
    ]
