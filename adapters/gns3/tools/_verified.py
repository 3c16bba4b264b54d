"""Verified changes: ``verify``, ``on_fail`` and ``verify_wait_s`` on every tool that
changes a device or the topology.

A changing call may carry checks (``verify``: the same check objects as ``verify_intent``);
the gate then runs it as the core's transaction (:func:`copilot_core.intent.verify_change`)
over the executor's steps (:mod:`.change_steps`): the checks before, the restore point and
the change, the checks after (with their wait), and, when one fails and ``on_fail`` is
``rollback`` (the default), the rollback of exactly that change and the checks once more.
The user's standing intent in the project joins the call's checks (:func:`plan_of`; a
standing check decides where it held before the change). The gate puts the plan on the
approval card, and the result carries ``verification``.

The three arguments are taken off the call (:func:`split_verification`) before the tool's
own argument model sees the rest, so every changing tool accepts them the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field

from adapters.gns3.lab import (
    AtMost,
    Gns3Tool,
    Gns3ToolSettings,
    LabAccess,
    ToolArguments,
    parse_arguments,
)
from copilot_core import ToolResult, ToolSpec
from copilot_core.intent import Check, VerificationPlan, checks_adapter
from copilot_core.ports import IntentStore, Touch

__all__ = [
    "VERIFY_FIELDS",
    "VerifyArguments",
    "call_titler",
    "call_touches",
    "offered_spec",
    "plan_of",
    "split_verification",
    "standing_checks",
    "verification_properties",
]

JSON = dict[str, Any]
VERIFY_FIELDS = ("verify", "on_fail", "verify_wait_s")


class VerifyArguments(ToolArguments):
    """A changing call's own checks, what to do when one fails, and the wait."""

    verify: Annotated[list[Check], AtMost("max_batch")] = Field(min_length=1)
    on_fail: Literal["rollback", "keep"] = "rollback"
    verify_wait_s: Annotated[float, Field(ge=0), AtMost("max_change_verify_wait")] = 60.0


def verification_properties(settings: Gns3ToolSettings) -> JSON:
    """The three arguments as every changing tool's schema offers them, kept short: they
    are the same on every changing tool (the system prompt says how to use them, and the
    check objects are verify_intent's, described there)."""
    return {
        "verify": {
            "type": "array",
            "items": {"type": "object"},
            "maxItems": settings.max_batch,
            "description": "verify_intent checks that decide the change",
        },
        "on_fail": {"type": "string", "enum": ["rollback", "keep"]},
        "verify_wait_s": {
            "type": "number",
            "minimum": 0,
            "maximum": settings.max_change_verify_wait,
        },
    }


def offered_spec(tool: Gns3Tool[Any], lab: LabAccess) -> ToolSpec:
    """The tool's spec, with the three arguments in its schema when it is verifiable, and
    its title of a call."""
    spec = replace(
        tool.spec(lab),
        title=call_titler(tool, lab.settings),
        touches=call_touches(tool, lab.settings),
    )
    if not tool.verifiable:
        return spec
    properties = {**spec.parameters.get("properties", {}), **verification_properties(lab.settings)}
    return replace(
        spec,
        parameters={**spec.parameters, "properties": properties},
        compact_omits=VERIFY_FIELDS,  # small models verify with verify_intent instead
    )


def call_titler(
    tool: Gns3Tool[Any], settings: Gns3ToolSettings
) -> Callable[[JSON], str | None] | None:
    """The tool's title of a call from the call's raw arguments (``None`` when they are
    not valid: the call fails anyway); a verified change says it is verified."""
    name = tool.title
    if name is None:
        return None

    def title(arguments: JSON) -> str | None:
        split = split_verification(tool, arguments, settings)
        if isinstance(split, ToolResult):
            return None
        own, verification = split
        args = tool.parse(own, settings)
        if isinstance(args, ToolResult):
            return None
        said = name(args)
        if verification is None:
            return said
        checks = len(verification.verify)
        return f"{said}, then verify {checks} check{'' if checks == 1 else 's'}"

    return title


def call_touches(
    tool: Gns3Tool[Any], settings: Gns3ToolSettings
) -> Callable[[JSON], Sequence[Touch] | None] | None:
    """What a call reads, creates or changes, from its raw arguments (``None`` when they
    are not valid: the call fails anyway, ordered as undeclared)."""
    declare = tool.touches
    if declare is None:
        return None

    def touches(arguments: JSON) -> Sequence[Touch] | None:
        split = split_verification(tool, arguments, settings)
        if isinstance(split, ToolResult):
            return None
        args = tool.parse(split[0], settings)
        return None if isinstance(args, ToolResult) else declare(args)

    return touches


def split_verification(
    tool: Gns3Tool[Any], arguments: JSON, settings: Gns3ToolSettings
) -> tuple[JSON, VerifyArguments | None] | ToolResult:
    """The tool's own arguments and the call's verification (``None``: none asked for),
    or an error result naming what is wrong with it (nothing is done)."""
    if not tool.verifiable or not any(name in arguments for name in VERIFY_FIELDS):
        return arguments, None
    own = {k: v for k, v in arguments.items() if k not in VERIFY_FIELDS}
    asked = {k: arguments[k] for k in VERIFY_FIELDS if k in arguments}
    if "verify" not in asked:
        listed = " and ".join(sorted(asked))
        return ToolResult.error(
            f"The arguments of {tool.name} are invalid: {listed} without verify (the checks "
            "that decide the change). Nothing was done.",
            expected={
                **tool.example,
                "verify": [{"kind": "reachability", "from": "PC1", "to": "PC2"}],
            },
        )
    parsed = parse_arguments(VerifyArguments, asked, settings, tool.name, tool.example)
    if isinstance(parsed, ToolResult):
        return parsed
    return own, parsed


async def standing_checks(
    store: IntentStore | None, project_id: str, user_id: str
) -> tuple[Check, ...]:
    """The user's standing intent in the project (none when no store keeps it)."""
    if store is None or not user_id:
        return ()
    record = await store.standing_intent(project_id, user_id)
    if record is None or not record.checks:
        return ()
    return tuple(checks_adapter.validate_python(record.checks))


def plan_of(args: VerifyArguments, standing: tuple[Check, ...]) -> VerificationPlan:
    return VerificationPlan(tuple(args.verify), standing, args.on_fail, args.verify_wait_s)
