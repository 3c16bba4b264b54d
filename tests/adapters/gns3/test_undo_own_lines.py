"""Undo planning on recorded before/after states: a rollback undoes exactly the change's
own lines (issue 35, cases 6 and 7).

Each case reads three configurations as the device shows them (before the change, just
after it, and now, after a colleague's edit), records what the change did
(:func:`line_changes`) and plans its undo on the configuration now
(:func:`plan_line_undo`): the commands it would send, its conflicts and notes.
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.gns3.model._device_state import ConfigurationKeeper, keeper_for
from adapters.gns3.model._platforms import DeviceKind
from adapters.gns3.restore._undo.host import route_problem
from adapters.gns3.restore._undo.judged import refusal
from adapters.gns3.restore._undo.lines import line_changes, lines_left, plan_line_undo
from adapters.gns3.restore._undo.plan import Step, UndoPlan, plan_undo, without_extras
from copilot_core import ToolResult, ToolStatus
from copilot_core.intent import (
    CheckResult,
    CheckStatus,
    IntentResult,
    VerificationPlan,
    VerifiedChange,
    checks_adapter,
)
from copilot_core.ports import ChangeRecord, ItemChanges


def _keeper(kind: DeviceKind) -> ConfigurationKeeper:
    keeper = keeper_for(kind)
    assert keeper is not None
    return keeper


FRR = _keeper(DeviceKind.FRR)
LINUX = _keeper(DeviceKind.LINUX)

BASE = """frr version 8.4
frr defaults traditional
hostname R2
!
interface eth1
 ip address 10.0.12.2/30
{eth1}exit
!
{tail}end
"""


def frr(eth1: list[str] | None = None, tail: str = "") -> dict[str, Any]:
    inner = "".join(f" {line}\n" for line in eth1 or [])
    return FRR.parse([BASE.format(eth1=inner, tail=tail)])


def plan(before: dict[str, Any], after: dict[str, Any], now: dict[str, Any]) -> Any:
    changes = line_changes(FRR, before, after)
    assert changes is not None
    return plan_line_undo(FRR, changes, now, "R2"), changes


ROUTE_MAP = "route-map COP permit 10\n set tag 5\nexit\n!\n"


def test_a_block_the_change_added_that_a_colleague_added_to_is_undone_line_by_line() -> None:
    """Case 6: `no route-map COP permit 10` would delete the colleague's `set metric 77`."""
    undo, changes = plan(
        frr(),
        frr(tail=ROUTE_MAP),
        frr(tail="route-map COP permit 10\n set tag 5\n set metric 77\nexit\n!\n"),
    )
    assert undo.commands == ["route-map COP permit 10", "no set tag 5", "exit"], undo
    assert not undo.conflicts
    assert any("only the change's own lines" in note for note in undo.notes), undo.notes
    # After it, the block holds the colleague's line alone: nothing is left to undo.
    after = frr(tail="route-map COP permit 10\n set metric 77\nexit\n!\n")
    assert lines_left(FRR, changes, after) == []
    assert lines_left(FRR, changes, frr(tail=ROUTE_MAP + "")) != []


def test_a_block_the_change_added_that_holds_only_its_lines_is_removed_whole() -> None:
    undo, changes = plan(frr(), frr(tail=ROUTE_MAP), frr(tail=ROUTE_MAP))
    assert undo.commands == ["no route-map COP permit 10"], undo
    assert not undo.conflicts and not undo.notes
    assert lines_left(FRR, changes, frr()) == []


def test_a_nested_block_is_undone_level_by_level() -> None:
    before = frr(tail="router bgp 65002\n neighbor 10.0.12.1 remote-as 65001\nexit\n!\n")
    after = frr(
        tail="router bgp 65002\n neighbor 10.0.12.1 remote-as 65001\n !\n"
        " address-family ipv4 unicast\n  network 10.9.0.0/16\n exit-address-family\nexit\n!\n"
    )
    now = frr(
        tail="router bgp 65002\n neighbor 10.0.12.1 remote-as 65001\n !\n"
        " address-family ipv4 unicast\n  network 10.9.0.0/16\n  network 10.77.0.0/16\n"
        " exit-address-family\nexit\n!\n"
    )
    undo, _ = plan(before, after, now)
    assert undo.commands == [
        "router bgp 65002",
        "address-family ipv4 unicast",
        "no network 10.9.0.0/16",
        "exit",
        "exit",
    ], undo


def test_a_line_replaced_again_since_is_a_conflict_and_is_not_put_back() -> None:
    """Case 6: `ip ospf cost 50` -> 60 by the change, 70 by a colleague: 50 is not sent."""
    undo, _ = plan(frr(["ip ospf cost 50"]), frr(["ip ospf cost 60"]), frr(["ip ospf cost 70"]))
    assert undo.commands == [], undo
    (conflict,) = undo.conflicts
    assert "ip ospf cost 50" in conflict and "ip ospf cost 60" in conflict, conflict
    assert "`ip ospf cost 70` now" in conflict and "R2" in conflict, conflict
    # Removed since (the default now): changed again too.
    undo, _ = plan(frr(["ip ospf cost 50"]), frr(["ip ospf cost 60"]), frr())
    assert undo.commands == [] and "removed since" in undo.conflicts[0], undo


def test_a_replaced_line_still_as_the_change_left_it_is_put_back() -> None:
    undo, _ = plan(frr(["ip ospf cost 50"]), frr(["ip ospf cost 60"]), frr(["ip ospf cost 60"]))
    assert undo.commands == ["interface eth1", "no ip ospf cost 60", "ip ospf cost 50", "exit"]
    assert not undo.conflicts


def test_a_line_whose_block_a_colleague_deleted_is_undone_already_not_a_conflict() -> None:
    """Case 7: the undo line of a gone block made the whole undo a conflict."""
    before = frr(tail=ROUTE_MAP.replace("set tag 5", "set tag 4"))
    after = frr(["shutdown"], tail=ROUTE_MAP)
    now = frr(["shutdown"])  # the colleague deleted the route-map
    undo, _ = plan(before, after, now)
    assert undo.conflicts == [], undo
    assert undo.commands == ["interface eth1", "no shutdown", "exit"], undo
    assert any("gone since" in note for note in undo.notes), undo.notes


def test_an_old_record_cannot_tell_a_blocks_lines_apart_and_conflicts() -> None:
    changes = {"added": [{"context": [], "line": "route-map COP permit 10"}], "removed": []}
    now = frr(tail="route-map COP permit 10\n set tag 5\n set metric 77\nexit\n!\n")
    undo = plan_line_undo(FRR, changes, now, "R2")
    assert undo.commands == [] and "does not say" in undo.conflicts[0], undo


def test_a_device_line_the_grammar_does_not_read_as_one_command_is_not_sent() -> None:
    """A line read from the device is judged before it is planned: one that would be read
    as something else (a filter, a `do`) is a conflict, never a command."""
    changes = {
        "format": 2,
        "added": [{"context": ["interface eth1"], "line": "ip ospf cost 5 | write"}],
        "removed": [],
    }
    now = frr(["ip ospf cost 5 | write"])
    undo = plan_line_undo(FRR, changes, now, "R2")
    assert undo.commands == [], undo
    assert "not undone" in undo.conflicts[0], undo
    # A description is taken back by ``no description``: its words are never sent.
    labelled = {
        **changes,
        "added": [{"context": ["interface eth1"], "line": "description up | write"}],
    }
    undo = plan_line_undo(FRR, labelled, frr(["description up | write"]), "R2")
    assert undo.commands == ["interface eth1", "no description", "exit"], undo
    assert refusal("do write", DeviceKind.FRR, config=True) is not None
    assert refusal("no set tag 5", DeviceKind.FRR, config=True) is None


# ================================================================== Linux hosts
def host(addresses: list[str], routes: list[str]) -> dict[str, Any]:
    addr = "".join(
        f"{n}: {dev}    inet {cidr} brd 10.255.255.255 scope global {dev}\\       valid_lft "
        "forever preferred_lft forever\n"
        for n, (dev, cidr) in enumerate((a.split() for a in addresses), start=2)
    )
    return LINUX.parse([addr, "".join(f"{route}\n" for route in routes)])


H_BEFORE = host(["eth0 10.0.1.10/24"], ["default via 10.0.1.1 dev eth0"])


def host_plan(after: dict[str, Any], now: dict[str, Any]) -> Any:
    changes = line_changes(LINUX, H_BEFORE, after)
    assert changes is not None
    return plan_line_undo(LINUX, changes, now, "H1"), changes


def test_a_hosts_undo_is_scoped_to_the_changes_own_addresses_and_routes() -> None:
    """Case 6: a colleague's 10.77.0.1/24 (and route) are not a diff to undo."""
    after = host(
        ["eth0 10.0.1.10/24", "eth1 10.5.0.1/24"],
        ["default via 10.0.1.1 dev eth0", "10.9.0.0/16 via 10.5.0.254 dev eth1"],
    )
    now = host(
        ["eth0 10.0.1.10/24", "eth1 10.5.0.1/24", "eth1 10.77.0.1/24"],
        [
            "default via 10.0.1.1 dev eth0",
            "10.9.0.0/16 via 10.5.0.254 dev eth1",
            "10.78.0.0/16 via 10.77.0.254 dev eth1",
        ],
    )
    undo, changes = host_plan(after, now)
    assert undo.commands == [
        "ip route del 10.9.0.0/16 via 10.5.0.254 dev eth1",
        "ip addr del 10.5.0.1/24 dev eth1",
    ], undo
    assert not any("10.77" in c or "10.78" in c for c in undo.commands)
    assert not undo.conflicts
    left = host(["eth0 10.0.1.10/24", "eth1 10.77.0.1/24"], ["default via 10.0.1.1 dev eth0"])
    assert lines_left(LINUX, changes, left) == []


def test_a_malicious_interface_name_from_the_device_is_refused_never_typed() -> None:
    """Case 6: `a;touch${IFS}Z` typed unquoted created /Z as root."""
    evil = "a;touch${IFS}Z"
    after = host(["eth0 10.0.1.10/24", f"{evil} 10.5.0.1/24"], ["default via 10.0.1.1 dev eth0"])
    undo, _ = host_plan(after, after)
    assert undo.commands == [], undo
    (conflict,) = undo.conflicts
    assert "not undone" in conflict and repr(evil) in conflict, conflict
    # Routes too: each word is a keyword followed by a value of its kind.
    assert route_problem(f"10.9.0.0/16 dev {evil}") is not None
    assert route_problem("10.9.0.0/16 via 10.0.0.1%x dev eth0") is not None
    assert route_problem("10.9.0.0/16 via 10.0.0.1 dev eth0 metric 5 onlink") is None
    assert refusal(f"ip addr del 10.5.0.1/24 dev {evil}", DeviceKind.LINUX, config=False)
    assert refusal("ip addr del 10.5.0.1/24 dev eth1", DeviceKind.LINUX, config=False) is None


def test_a_hosts_route_replaced_again_is_a_conflict() -> None:
    after = host(["eth0 10.0.1.10/24"], ["default via 10.0.1.2 dev eth0"])
    now = host(["eth0 10.0.1.10/24"], ["default via 10.0.1.3 dev eth0"])
    undo, _ = host_plan(after, now)
    assert undo.commands == [] and "default via 10.0.1.3 dev eth0" in undo.conflicts[0], undo
    undo, _ = host_plan(after, after)
    assert undo.commands == [
        "ip route del default via 10.0.1.2 dev eth0",
        "ip route add default via 10.0.1.1 dev eth0",
    ], undo


# ================================================================== the topology
@pytest.mark.parametrize("extra", [True, False])
def test_a_partial_undo_leaves_out_what_touches_others_work(extra: bool) -> None:
    plan = UndoPlan(
        steps=[
            Step("delete_link", "l1", "delete link a"),
            Step("delete_node", "n", "x", extra=extra),
        ],
        conflicts=["n was linked since"] if extra else [],
    )
    kept = without_extras(plan)
    assert [s.target for s in kept.steps] == (["l1"] if extra else ["l1", "n"])
    assert kept.skipped == plan.conflicts


def test_a_field_changed_again_is_set_back_only_as_an_extra_step() -> None:
    change = ChangeRecord(
        nodes=ItemChanges(changed={"n1": {"name": "R1", "fields": {"x": [0, 10], "y": [0, 10]}}})
    )
    current = {"nodes": {"n1": {"node_id": "n1", "name": "R1", "x": 99, "y": 10}}}
    planned = plan_undo(change, current)
    assert [(s.body, s.extra) for s in planned.steps] == [({"y": 0}, False), ({"x": 0}, True)]
    assert [s.body for s in without_extras(planned).steps] == [{"y": 0}]


# ================================================================== a verified change
def _verified(rollback: ToolResult | None) -> Any:
    check = checks_adapter.validate_python(
        [{"kind": "config_line", "node": "R2", "line": "ip route 10.200.0.0/16 Null0"}]
    )[0]
    failed = IntentResult((CheckResult(check, CheckStatus.FAIL, None, (), 1, 0.0, "absent"),))
    changed = ToolResult({"status": "success", "results": []})
    return VerifiedChange(
        VerificationPlan((check,)),
        changed,
        failed,
        (0,),
        failed,
        rollback,
        failed if rollback is not None else None,
        "a check failed",
        ("ip route 10.200.0.0/16 Null0: absent",),
    )


@pytest.mark.parametrize(
    ("rollback", "status", "said"),
    [
        (ToolResult({"status": "success", "results": []}), "rolled_back", "rolled back"),
        (ToolResult({"status": "partial_success", "results": []}), "failed", "stays"),
        (ToolResult({"status": "conflict"}, ToolStatus.ERROR), "failed", "rolling it back"),
        (None, "failed", "no restore point"),
    ],
    ids=["undone", "undone-but-conflicts", "refused", "no-point"],
)
def test_a_failed_check_with_the_change_left_in_place_is_never_success(
    rollback: ToolResult | None, status: str, said: str
) -> None:
    """Case 7: the change stayed and the result's status was `success`."""
    outcome = _verified(rollback)
    assert outcome.rolled_back is (status == "rolled_back")
    result = outcome.to_result()
    assert result.status is ToolStatus.ERROR
    assert result.output["status"] == status, result.output
    assert said in result.output["error"], result.output
