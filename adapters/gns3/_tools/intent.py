"""``verify_intent``: checks of intent, compiled and decided by the service, retried until
they hold or the wait runs out (read-only, every mode).

The model states what should hold as checks (``copilot_core.intent``); the service sends
each node's platform the commands that answer them, parses the output and decides
(:class:`~adapters.gns3._tools.intent_probe.Gns3CheckProbe`), then waits and asks again
while a check does not hold yet, at most ``wait_s``. While it waits it reports which
checks are still open as progress (``tool_progress`` events).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from adapters.gns3._tools.intent_probe import Gns3CheckProbe
from adapters.gns3._tools.registry import (
    BOTH_MODES,
    AtMost,
    CallScope,
    Gns3Tool,
    LabAccess,
    ToolArguments,
)
from copilot_core import ToolResult
from copilot_core.intent import Check, IntentResult, MonotonicClock, WaitClock, verify_checks
from copilot_core.ports import ToolEffect

__all__ = ["VerifyIntent", "intent_tools", "run_checks"]


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
    """Verify ``checks`` on the call's lab, reporting progress to the call's context."""

    def progress(text: str) -> None:
        scope.context.report_progress(text)

    return await verify_checks(
        checks,
        Gns3CheckProbe(lab, scope),
        clock or MonotonicClock(),
        wait_s=wait_s,
        interval=lab.settings.verify_interval,
        progress=progress,
    )


async def verify_intent(lab: LabAccess, args: VerifyIntent, scope: CallScope) -> ToolResult:
    scope.context.report_progress(f"verifying {len(args.checks)} check(s)\n")
    result = await run_checks(lab, scope, list(args.checks), args.wait_s)
    return ToolResult(result.to_dict())


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
        )
    ]
