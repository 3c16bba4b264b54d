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
    # The result names a check that did not hold before, without its verdict or evidence.
    assert cells(html)[:2] == [
        ["check", "before", "after"],
        ["PC1 reaches PC2", "not held", "pass"],
    ]


def test_after_a_rollback_a_check_not_holding_as_before_is_told_from_one_the_rollback_broke() -> (
    None
):
    # PC1 reaches PC2 did not hold before (the change was to make it hold) and does not
    # after the rollback: as before. R1's adjacency held before and does not after the
    # rollback: the rollback did not bring it back, its verdict in full. A standing check
    # that did not hold before does not decide: nothing after.
    never = checks_adapter.validate_python(
        [{"kind": "interface", "node": "R1", "interface": "eth9"}]
    )
    plan = VerificationPlan((PING,), (OSPF, *never))
    outcome = VerifiedChange(
        plan,
        ToolResult({"status": "success", "results": []}),
        before=IntentResult(
            (
                verdict(PING, CheckStatus.FAIL, "no reply"),
                verdict(OSPF, CheckStatus.PASS),
                verdict(never[0], CheckStatus.ERROR, "R1 has no interface eth9"),
            )
        ),
        deciding=(0, 1),
        after=IntentResult(
            (verdict(PING, CheckStatus.FAIL, "still no reply"), verdict(OSPF, CheckStatus.PASS))
        ),
        rollback=ToolResult({"status": "success"}, ToolStatus.SUCCESS),
        after_rollback=IntentResult(
            (
                verdict(PING, CheckStatus.FAIL, "no reply"),
                verdict(OSPF, CheckStatus.FAIL, "R1 has no OSPF neighbour R2"),
            )
        ),
        reason="a check failed: the change was rolled back, but not every check holds again",
        failed=("PC1 reaches PC2: still no reply",),
    )
    data = outcome.to_dict()
    assert data["after_rollback"]["as_before"] == ["PC1 reaches PC2"]
    html = render_tool_html(json.dumps({"status": "rolled_back", "verification": data}), "error")
    assert cells(html)[:4] == [
        ["check", "before", "after", "after rollback"],
        ["PC1 reaches PC2", "not held", "fail still no reply", "not held"],
        ["R1 OSPF neighbour R2 full", "pass", "pass", "fail R1 has no OSPF neighbour R2"],
        ["R1 eth9 up", "not held", "", ""],
    ]


def test_a_verification_cut_to_the_cap_says_so_and_its_names_are_left_blank() -> None:
    plan = VerificationPlan((PING,), (OSPF,))
    long = (Evidence("PC1", "ping 10.0.2.10 -c 3", ("no answer " * 40,) * 200),)
    outcome = VerifiedChange(
        plan,
        ToolResult({"status": "success", "results": []}),
        before=IntentResult((verdict(PING, CheckStatus.PASS), verdict(OSPF, CheckStatus.FAIL))),
        deciding=(0,),
        after=IntentResult((CheckResult(PING, CheckStatus.FAIL, {}, long, 1, 0.5, "no reply"),)),
        reason="a check failed, and the change was kept (on_fail: keep)",
        failed=("PC1 reaches PC2: no reply",),
    )
    output = outcome.to_result(800).output  # too small for all but the verdicts
    assert "held" not in output["verification"]["before"]  # the names were cut
    html = render_tool_html(json.dumps(output))
    assert "were cut (every verdict and count stays)" in html
    # Before: what held is no longer named, so nothing is said rather than "not held".
    assert cells(html)[:3] == [
        ["check", "before", "after"],
        ["PC1 reaches PC2", "", "fail no reply"],
        ["R1 OSPF neighbour R2 full", "", ""],
    ]


def test_a_result_saved_in_the_older_shape_is_still_a_table_of_every_check() -> None:
    def phase(*results: CheckResult) -> dict[str, object]:
        return IntentResult(results).to_dict()  # every check, in full

    saved = {
        "status": "fail",
        "deciding": ["PC1 reaches PC2"],
        "before": phase(verdict(PING, CheckStatus.FAIL, "no reply")),
        "after": phase(verdict(PING, CheckStatus.FAIL, "still no reply")),
        "rolled_back": True,
        "after_rollback": phase(verdict(PING, CheckStatus.FAIL, "no reply")),
    }
    html = render_tool_html(json.dumps({"status": "rolled_back", "verification": saved}))
    assert cells(html)[:2] == [
        ["check", "before", "after", "after rollback"],
        ["PC1 reaches PC2", "fail no reply", "fail still no reply", "fail no reply"],
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
