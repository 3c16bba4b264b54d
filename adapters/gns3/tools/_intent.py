"""``verify_intent``: checks of intent, compiled and decided by the service, retried until
they hold or the wait runs out (read-only, every mode).

The model states what should hold as checks (``copilot_core.intent``); the service sends
each node's platform the commands that answer them, parses the output and decides
(:class:`~adapters.gns3.tools._intent_probe.Gns3CheckProbe`, one per call from the lab's
:class:`~adapters.gns3.tools._intent_probe.Gns3CheckProbes`, which the core's standing
intent uses too), then waits and asks again
while a check does not hold yet, at most ``wait_s``. While it waits it reports which
checks are still open as progress (``tool_progress`` events).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema, model_validator

from adapters.gns3.lab import (
    BOTH_MODES,
    AtMost,
    CallScope,
    Gns3Tool,
    LabAccess,
    ToolArguments,
)
from adapters.gns3.tools._intent_probe import Gns3CheckProbes
from copilot_core import CopilotMode, ToolResult
from copilot_core.intent import (
    MAX_STANDING_CHECKS,
    Check,
    IntentResult,
    MonotonicClock,
    WaitClock,
    check_label,
    checks_adapter,
    dump_check,
    verify_checks,
)
from copilot_core.ports import ChangePreview, StandingIntentRecord, ToolEffect

__all__ = ["StandingIntentAction", "VerifyIntent", "intent_tools", "run_checks"]


class VerifyIntent(ToolArguments):
    checks: Annotated[list[Check], AtMost("max_batch")] = Field(
        min_length=1, description="the checks that must hold, each an object with its kind"
    )
    wait_s: Annotated[float, Field(ge=0), AtMost("max_verify_wait")] = Field(
        60.0, description="seconds to keep retrying checks that do not hold yet (default 60)"
    )


async def run_checks(
    lab: LabAccess,
    scope: CallScope,
    checks: list[Check],
    wait_s: float,
    clock: WaitClock | None = None,
) -> IntentResult:
    """Verify ``checks`` on the call's lab, reporting progress to the call's context:
    the lab's probes (:class:`Gns3CheckProbes`), as the core's standing intent runs them."""
    probes = Gns3CheckProbes(lab)
    return await verify_checks(
        checks,
        probes.probe(scope.context),
        clock or MonotonicClock(),
        wait_s=wait_s,
        interval=probes.limits.interval,
        progress=scope.context.report_progress,
    )


async def verify_intent(lab: LabAccess, args: VerifyIntent, scope: CallScope) -> ToolResult:
    scope.context.report_progress(f"verifying {len(args.checks)} check(s)\n")
    result = await run_checks(lab, scope, list(args.checks), args.wait_s)
    return ToolResult(result.to_dict())


class StandingIntentAction(ToolArguments):
    action: Literal["list", "add", "remove"] = Field(
        description="list the user's standing checks in this project, add checks, or remove "
        "checks by name"
    )
    # The check objects are verify_intent's (described there): not repeated in this schema.
    checks: Annotated[
        list[Check],
        AtMost("max_batch"),
        WithJsonSchema({"type": "array", "items": {"type": "object"}, "x-limit": "max_batch"}),
    ] = Field(
        default_factory=list,
        description="for add: verify_intent's check objects, each with a name",
    )
    names: list[str] = Field(default_factory=list, description="for remove: the checks' names")

    @model_validator(mode="after")
    def _what_to_change(self) -> StandingIntentAction:
        if self.action == "add" and not self.checks:
            raise ValueError("add needs checks")
        if self.action == "add" and any(not (c.name or "").strip() for c in self.checks):
            raise ValueError("each standing check needs a name (the user sees it by its name)")
        if self.action == "remove" and not self.names:
            raise ValueError("remove needs names (list shows them)")
        return self


def _standing_change(args: StandingIntentAction, mode: CopilotMode) -> ChangePreview | None:
    """Adding or removing standing checks is the user's to approve (list changes nothing)."""
    if args.action == "add":
        lines = [f"always: {check_label(check)}" for check in args.checks]
        return ChangePreview(f"add {len(lines)} standing check(s)", topology=lines)
    if args.action == "remove":
        lines = [f"no longer: {name}" for name in args.names]
        return ChangePreview(f"remove {len(lines)} standing check(s)", topology=lines)
    return None


async def standing_intent(
    lab: LabAccess, args: StandingIntentAction, scope: CallScope
) -> ToolResult:
    store = lab.intent
    context = scope.context
    if store is None or not context.user_id:
        return ToolResult.error("This service keeps no standing intent.")
    record = await store.standing_intent(scope.project_id, context.user_id)
    kept = list(record.checks) if record is not None else []
    if args.action == "list":
        return ToolResult({"status": "success", "checks": kept})
    if args.action == "add":
        taken = {str(c.get("name")) for c in kept}
        clashes = sorted(str(c.name) for c in args.checks if c.name in taken)
        if clashes:
            return ToolResult.error(
                f"Standing checks named {', '.join(clashes)} exist already; remove them first "
                "or choose other names. Nothing was changed."
            )
        kept += [dump_check(check) for check in args.checks]
        if len(kept) > MAX_STANDING_CHECKS:
            return ToolResult.error(
                f"At most {MAX_STANDING_CHECKS} standing checks per project. Nothing was changed."
            )
    else:
        unknown = sorted(set(args.names) - {str(c.get("name")) for c in kept})
        if unknown:
            return ToolResult.error(
                f"No standing check is named {', '.join(unknown)}; list shows them. Nothing was "
                "changed."
            )
        kept = [c for c in kept if str(c.get("name")) not in set(args.names)]
    checks_adapter.validate_python(kept)  # what is stored is what a check is
    await store.save_standing_intent(
        scope.project_id,
        context.user_id,
        StandingIntentRecord(checks=kept, updated_at=lab.clock.now()),
    )
    return ToolResult({"status": "success", "checks": kept})


def intent_tools() -> list[Gns3Tool[Any]]:
    return [
        Gns3Tool(
            "verify_intent",
            "Check that the network does what is meant, and answer 'did it work?' with this, "
            "not by reading raw output. Each check is an object with a kind: reachability "
            "(from, to, expect reachable|unreachable, count), ospf_neighbor (node, neighbor, "
            "state), bgp_session (node, peer, state), route (node, prefix, present, via, "
            "protocol), interface (node, interface, state up|down), config_line (node, line, "
            "present); each may have a name. The service sends the commands and decides; a "
            "check that does not hold yet is retried for wait_s seconds (default 60, at most "
            "{settings.max_verify_wait:g}). Result: status pass|fail|error, and per check "
            "its status, observed fact, evidence (node, command, deciding lines), attempts "
            "and waited_s. error means the check could not be answered (the reason says why).",
            VerifyIntent,
            verify_intent,
            BOTH_MODES,
            effect=ToolEffect.READ_ONLY,
            example={
                "checks": [
                    {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"},
                    {"kind": "reachability", "from": "PC1", "to": "PC2"},
                ],
                "wait_s": 60,
            },
        ),
        Gns3Tool(
            "standing_intent",
            "The user's standing intent in this project: checks that should always hold (PC1 "
            "reaches PC2, R1-R2 OSPF full), run with every verified change and from the "
            "page's Intent panel. action list shows them; add proposes checks (each with a "
            "name; the user approves the addition); remove drops checks by name.",
            StandingIntentAction,
            standing_intent,
            BOTH_MODES,
            effect=ToolEffect.EXTERNAL_CHANGE,
            needs_gns3=False,
            change=_standing_change,
            restores=lambda args, preview: None,  # nothing in the lab to put back
            checks_allowed=False,
            example={
                "action": "add",
                "checks": [{"kind": "reachability", "from": "PC1", "to": "PC2", "name": "PC1-PC2"}],
            },
        ),
    ]
