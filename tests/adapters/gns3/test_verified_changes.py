"""Verified changes over real telnet sockets: a changing call with ``verify`` runs, through
the gate, as a transaction over the executor's steps (checks before, the restore point and
the change, checks after, and the rollback of exactly that change when a check fails), and
its approval card lists the checks that will decide it.

The router is the IOS telnet emulator (its running configuration follows what it is
told); GNS3's REST answers come from ``httpx.MockTransport`` (``FakeGns3`` of the restore
point tests); restore points and standing intent go to the core's in-memory store.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.gns3 import Gns3ToolExecutor, Gns3ToolSettings
from copilot_core import (
    AbortToken,
    CopilotMode,
    ParsedToolCall,
    ToolContext,
    ToolGate,
    ToolResult,
    ToolStatus,
)
from copilot_core._compact import compact_tools
from copilot_core.intent import check_label, checks_adapter
from copilot_core.ports import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Clearance,
    StandingIntentRecord,
    ToolProgress,
)
from copilot_core.testing import InMemoryCheckpointStore
from tests.adapters.gns3.test_restore_points import (
    PROJECT,
    SESSION,
    TOKEN,
    lab,
    make,
    store,
)
from tests.fakes.telnet_devices import EmulatedCiscoRouter, EmulatedDeviceLab

__all__ = ["lab", "store"]  # the fixtures, used here by name

pytestmark = pytest.mark.timeout(120)

AUTOMATION = CopilotMode.LAB_AUTOMATION_ASSISTANT
ROUTE = "ip route 10.9.0.0 255.255.0.0 Null0"
FAST = Gns3ToolSettings(verify_interval=0.2)


def route_change(**verification: Any) -> dict[str, Any]:
    return {
        "device_configs": [{"device_name": "R1", "config_commands": [ROUTE]}],
        **verification,
    }


def line(text: str, present: bool = True, name: str | None = None) -> dict[str, Any]:
    check: dict[str, Any] = {"kind": "config_line", "node": "R1", "line": text, "present": present}
    return {**check, "name": name} if name else check


def router(lab: EmulatedDeviceLab) -> EmulatedCiscoRouter:
    r1 = lab["R1"]
    assert isinstance(r1, EmulatedCiscoRouter)
    return r1


def context(
    progress: list[ToolProgress] | None = None,
    approval: ApprovalPolicy = ApprovalPolicy.NEVER,
) -> ToolContext:
    report = progress.append if progress is not None else (lambda _: None)
    return ToolContext(
        PROJECT,
        "alice",
        SESSION,
        AUTOMATION,
        AbortToken(),
        TOKEN,
        progress=report,
        approval=approval,
    )


async def run(
    executor: Gns3ToolExecutor,
    name: str,
    arguments: dict[str, Any],
    *,
    call_id: str = "call-1",
    progress: list[ToolProgress] | None = None,
) -> ToolResult:
    """The call through the gate (which runs verified changes), approved by alice."""
    call = ParsedToolCall.parse(call_id, name, json.dumps(arguments))
    result = await ToolGate(executor).call(call, context(progress), decision=_approved(call))
    json.dumps(result.output)
    return result


async def test_a_change_whose_check_holds_is_verified_and_stays(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store, settings=FAST)
    result = await run(
        executor,
        "execute_multiple_device_config_commands",
        route_change(verify=[line(ROUTE, name="the route is configured")], verify_wait_s=10),
    )
    assert result.status is ToolStatus.SUCCESS, result.output
    verification = result.output["verification"]
    assert verification["status"] == "pass" and verification["rolled_back"] is False
    # not there before: not among the checks that held (and its verdict then not kept)
    assert verification["before"]["held"] == []
    assert verification["before"]["summary"] == {"pass": 0, "fail": 1, "error": 0}
    # held after: named, without its evidence
    assert verification["after"]["passed"] == ["the route is configured"]
    assert verification["after"]["checks"] == []
    assert verification["after_rollback"] is None
    assert ROUTE in router(lab).config
    assert result.output["restore_point_id"]  # the change kept its way back
    assert verification["diff"]["config"] == [{"node": "R1", "added": [ROUTE]}]
    assert "diff_after_rollback" not in verification
    assert result.metadata is not None and result.metadata["verification"] == "pass"


async def test_a_change_whose_check_fails_is_rolled_back_exactly(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store, settings=FAST)
    r1 = router(lab)
    r1.globals.append("ip route 10.77.0.0 255.255.0.0 Null0")  # a colleague's line
    progress: list[ToolProgress] = []
    result = await run(
        executor,
        "execute_multiple_device_config_commands",
        route_change(verify=[line("ip route 10.8.0.0 255.255.0.0 Null0")], verify_wait_s=1),
        progress=progress,
    )

    assert result.status is ToolStatus.ERROR
    assert result.output["status"] == "rolled_back"
    assert "a check failed after it" in result.output["error"]
    verification = result.output["verification"]
    assert verification["status"] == "fail" and verification["rolled_back"] is True
    assert verification["after"]["checks"][0]["attempts"] >= 2  # retried within the wait
    assert verification["after_rollback"]["status"] == "fail"  # it never held
    # not holding after the rollback as before the change: named, not repeated in full
    assert verification["after_rollback"]["as_before"] == [verification["deciding"][0]]
    assert verification["after_rollback"]["checks"] == []
    assert verification["after"]["checks"][0]["held_before"] is False
    assert verification["rollback"]["status"] == "success", verification["rollback"]
    # exactly the change undone: the colleague's route stays, ours is gone
    assert ROUTE not in r1.config
    assert "ip route 10.77.0.0 255.255.0.0 Null0" in r1.config
    point = (await store.restore_points(PROJECT, SESSION))[0]
    assert point.rolled_back is not None and point.rolled_back.by == "verification"
    said = "".join(p.text for p in progress)
    assert "before the change" in said and "rolling it back" in said
    assert "after the rollback" in said
    # what changed in the network: the route came and went; after the rollback, nothing
    changed = verification["diff"]["config"]
    assert changed == [{"node": "R1", "added": [ROUTE]}], changed
    assert verification["diff_after_rollback"]["no_difference"] is True


async def test_on_fail_keep_leaves_the_change_and_says_so(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store, settings=FAST)
    result = await run(
        executor,
        "execute_multiple_device_config_commands",
        route_change(
            verify=[line("ip route 10.8.0.0 255.255.0.0 Null0")], on_fail="keep", verify_wait_s=0
        ),
    )
    assert result.status is ToolStatus.SUCCESS
    assert result.output["verification"]["status"] == "fail"
    assert result.output["verification"]["rolled_back"] is False
    assert "kept (on_fail: keep)" in result.output["warning"]
    assert ROUTE in router(lab).config


async def test_the_standing_intent_decides_where_it_held_before(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    await store.save_standing_intent(
        PROJECT,
        "alice",
        StandingIntentRecord(
            [
                line("hostname R1", name="R1 is named"),  # holds before: it decides
                line("ip route 10.66.0.0 255.255.0.0 Null0", name="never there"),  # does not
            ],
            datetime.now(UTC),
        ),
    )
    executor, _ = make(lab, store, settings=FAST, intent=store)
    # the change removes nothing the standing intent needs: verified
    result = await run(
        executor,
        "execute_multiple_device_config_commands",
        route_change(verify=[line(ROUTE)], verify_wait_s=1),
    )
    verification = result.output["verification"]
    assert verification["status"] == "pass", verification
    assert verification["standing"] == ["R1 is named", "never there"]
    assert verification["deciding"][1:] == ["R1 is named"]
    assert verification["before"]["held"] == ["R1 is named"]
    assert verification["after"]["passed"][1:] == ["R1 is named"]

    # a change that breaks a standing check that held is rolled back, though its own holds
    rename = {
        "device_configs": [{"device_name": "R1", "config_commands": ["hostname R9"]}],
        "verify": [line(ROUTE)],
        "verify_wait_s": 1,
    }
    broken = await run(
        executor, "execute_multiple_device_config_commands", rename, call_id="call-2"
    )
    assert broken.output["verification"]["rolled_back"] is True, broken.output
    (renamed,) = broken.output["verification"]["after"]["checks"]  # what broke, in full
    assert (renamed["name"], renamed["held_before"]) == ("R1 is named", True), renamed
    assert renamed["evidence"][0]["command"] == "show running-config"
    assert broken.output["verification"]["after_rollback"]["status"] == "pass"
    assert router(lab).name == "R1"


async def test_the_approval_card_lists_the_checks_and_the_card_is_what_decides(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    await store.save_standing_intent(
        PROJECT, "alice", StandingIntentRecord([line("hostname R1")], datetime.now(UTC))
    )
    executor, _ = make(lab, store, settings=FAST, intent=store)
    call = ParsedToolCall.parse(
        "call-1",
        "execute_multiple_device_config_commands",
        json.dumps(route_change(verify=[line(ROUTE)], verify_wait_s=3)),
    )
    flow = ToolGate(executor).exchange(call, context(approval=ApprovalPolicy.CHANGES))
    asked = await anext(flow)
    assert isinstance(asked, ApprovalRequest)
    card = asked.preview.to_dict()
    assert card["devices"] == {"R1": [ROUTE]}
    assert card["verification"]["checks"] == [{**line(ROUTE), "kind": "config_line"}]
    assert card["verification"]["standing"] == [line("hostname R1")]
    assert (card["verification"]["on_fail"], card["verification"]["wait_s"]) == ("rollback", 3)
    # the standing intent changes after the approval: the card's checks decide
    await store.save_standing_intent(
        PROJECT, "alice", StandingIntentRecord([line("hostname R2")], datetime.now(UTC))
    )
    result = await flow.asend(ApprovalDecision(True, user_id="alice"))  # the gate binds it
    await flow.aclose()
    assert isinstance(result, ToolResult)
    assert result.metadata is not None
    assert result.metadata["approval"]["digest"] == _approved(call).digest
    standing = checks_adapter.validate_python([line("hostname R1")])[0]
    assert result.output["verification"]["standing"] == [check_label(standing)]
    assert result.output["verification"]["deciding"][-1] == check_label(standing)
    assert result.output["verification"]["status"] == "pass"


async def test_bad_verification_arguments_are_refused_and_nothing_is_sent(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, fake = make(lab, store, settings=FAST)
    cases = [
        (route_change(verify=[{"kind": "config_line", "node": "R1"}]), "verify.0"),
        (route_change(verify=[]), "verify"),
        (route_change(on_fail="keep"), "on_fail without verify"),
        (route_change(verify=[line(ROUTE)], on_fail="ignore"), "on_fail"),
        (route_change(verify=[line(ROUTE)], verify_wait_s=10_000), "verify_wait_s"),
    ]
    for arguments, named in cases:
        result = await run(executor, "execute_multiple_device_config_commands", arguments)
        assert result.status is ToolStatus.ERROR, arguments
        assert named in result.output["error"], result.output["error"]
        assert "Nothing was done" in result.output["error"]
    # a read-only tool takes no verify: an unknown argument there
    result = await run(
        executor, "verify_intent", {"checks": [line(ROUTE)], "verify": [line(ROUTE)]}
    )
    assert result.status is ToolStatus.ERROR and "verify" in result.output["error"]
    assert ROUTE not in router(lab).config
    assert await store.restore_points(PROJECT, SESSION) == []
    assert not any(method == "POST" for method, _ in fake.requests)


async def test_a_verified_change_called_past_the_gate_is_refused_and_nothing_is_sent(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, fake = make(lab, store, settings=FAST)
    call = ParsedToolCall.parse(
        "call-1",
        "execute_multiple_device_config_commands",
        json.dumps(route_change(verify=[line(ROUTE)])),
    )
    result = await executor.execute(call, context(), Clearance(decision=_approved(call)))
    assert result.status is ToolStatus.ERROR and "gate" in result.output["error"]
    assert "Nothing was done" in result.output["error"]
    assert ROUTE not in router(lab).config
    assert await store.restore_points(PROJECT, SESSION) == []
    assert not any(method == "POST" for method, _ in fake.requests)


def test_every_changing_tool_offers_verify_and_no_read_only_one_does() -> None:
    from adapters.gns3 import Gns3Client, Gns3ToolExecutor

    executor = Gns3ToolExecutor(Gns3Client("http://127.0.0.1:3080"))
    specs = {spec.name: spec for spec in executor.specs(AUTOMATION)}
    offering = {name for name, spec in specs.items() if "verify" in spec.parameters["properties"]}
    assert offering == {
        "create_gns3_node",
        "create_gns3_link",
        "start_gns3_node",
        "update_gns3_node_name",
        "execute_multiple_device_commands",
        "gns3_snapshots",
        "gns3_link_filters",
        "stop_gns3_node",
        "suspend_gns3_node",
        "start_all_gns3_nodes",
        "stop_all_gns3_nodes",
        "delete_gns3_node",
        "delete_gns3_link",
        "execute_multiple_device_config_commands",
        "execute_vpcs_commands",
        "gns3_annotate",
    }
    schema = specs["create_gns3_link"].parameters["properties"]
    assert schema["on_fail"]["enum"] == ["rollback", "keep"]
    assert schema["verify_wait_s"]["maximum"] == Gns3ToolSettings().max_change_verify_wait
    # the compact set (small models) leaves them out: they verify with verify_intent
    compact = compact_tools(list(specs.values()), "configure R1 and verify")
    assert compact and not any("verify" in spec.parameters["properties"] for spec in compact)
    assert any(spec.name == "verify_intent" for spec in compact)


def _approved(call: ParsedToolCall) -> ApprovalDecision:
    from copilot_core.ports import call_digest

    return ApprovalDecision(True, user_id="alice").bound(
        call_digest(call.name, call.arguments or {})
    )


# ------------------------------------------------------------------ standing_intent
async def test_the_agent_proposes_standing_checks_the_user_approves_them_like_a_change(
    lab: EmulatedDeviceLab, store: InMemoryCheckpointStore
) -> None:
    executor, _ = make(lab, store, settings=FAST, intent=store)
    context = ToolContext(PROJECT, "alice", SESSION, CopilotMode.TEACHING_ASSISTANT, AbortToken())
    add = ParsedToolCall.parse(
        "call-1",
        "standing_intent",
        json.dumps({"action": "add", "checks": [line("hostname R1", name="R1 is named")]}),
    )
    assessed = await executor.assess(add, context)  # a change: the user approves it
    assert assessed.changes is True and assessed.preview is not None
    assert assessed.preview.topology == ["always: R1 is named"]
    assert "standing_intent" in {spec.name for spec in executor.specs(context.mode)}
    added = await executor.execute(add, context, Clearance(assessed, _approved(add)))
    assert added.status is ToolStatus.SUCCESS, added.output
    record = await store.standing_intent(PROJECT, "alice")
    assert record is not None and [c["name"] for c in record.checks] == ["R1 is named"]
    assert await store.restore_points(PROJECT, SESSION) == []  # nothing of the lab to keep

    listed = ParsedToolCall.parse("call-2", "standing_intent", json.dumps({"action": "list"}))
    assert (await executor.assess(listed, context)).changes is False
    assert (await executor.execute(listed, context)).output["checks"] == record.checks
    again = await executor.execute(add, context, Clearance(assessed, _approved(add)))
    assert again.status is ToolStatus.ERROR and "exist already" in again.output["error"]
    unnamed = ParsedToolCall.parse(
        "call-3", "standing_intent", json.dumps({"action": "add", "checks": [line("x")]})
    )
    refused = await executor.execute(unnamed, context)
    assert refused.status is ToolStatus.ERROR and "needs a name" in refused.output["error"]
    drop = ParsedToolCall.parse(
        "call-4", "standing_intent", json.dumps({"action": "remove", "names": ["R1 is named"]})
    )
    dropped = await executor.execute(drop, context, Clearance(decision=_approved(drop)))
    assert dropped.output["checks"] == []
    assert (await store.standing_intent(PROJECT, "alice")).checks == []  # type: ignore[union-attr]
    # another user of the project has their own (none)
    bob = ToolContext(PROJECT, "bob", SESSION, CopilotMode.TEACHING_ASSISTANT, AbortToken())
    assert (await executor.execute(listed, bob)).output["checks"] == []
