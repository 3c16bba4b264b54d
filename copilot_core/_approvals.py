"""Approvals: the user sees and approves a change to the lab before it is made.

A tool executor *assesses* each call: whether it would change a device or the
topology, and what exactly (a :class:`ChangePreview`). Under the user's
:class:`ApprovalPolicy` the :class:`~copilot_core._toolgate.ToolGate` then asks for a
decision before running the call: the turn pauses, clients get ``approval_required``,
and the call runs only once it is approved. A rejected (or unanswered, or aborted)
call is answered to the model with a tool message that says so.

:class:`TurnControl` is what may reach a running turn from outside: its abort token,
and the decisions on its pending approvals.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from copilot_core._abort import AbortToken

__all__ = [
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Assessment",
    "ChangePreview",
    "DecisionOutcome",
    "PreviewCommand",
    "ToolEffect",
    "TurnControl",
    "call_digest",
]


class ToolEffect(StrEnum):
    """What a tool can do at most, as its source declares it.

    The gate decides approval from it and the executor's assessment of each call: under
    the approval setting ``changes`` every call of a tool that is not ``read_only`` asks,
    unless the executor assessed that call as changing nothing (``list``, ``get``, a
    show command). A tool that declares no effect counts as a change (default deny).
    """

    #: Reads only: the topology, a device's state, a skill.
    READ_ONLY = "read_only"
    #: Changes a device's configuration or state through its console.
    DEVICE_CHANGE = "device_change"
    #: Changes the topology: nodes, links, link filters, drawings, snapshots.
    TOPOLOGY_CHANGE = "topology_change"
    #: Starts, stops, suspends or reloads nodes.
    NODE_STATE = "node_state"
    #: Starts or stops a packet capture.
    CAPTURE = "capture"
    #: Changes something outside the lab (an MCP server's tool not known to be read-only).
    EXTERNAL_CHANGE = "external_change"


class ApprovalPolicy(StrEnum):
    """Which tool calls wait for the user's approval."""

    #: Every call that can change a device or the topology (the default).
    CHANGES = "changes"
    #: Every call, even a read.
    ALWAYS = "always"
    #: None: the copilot acts on its own (within its mode).
    NEVER = "never"

    def requires(self, effect: ToolEffect | None, assessment: Assessment) -> bool:
        """Whether a call of a tool declaring ``effect``, assessed so, waits for approval."""
        if self is ApprovalPolicy.ALWAYS:
            return True
        return self is ApprovalPolicy.CHANGES and assessment.changes_under(effect)


@dataclass(frozen=True, slots=True)
class PreviewCommand:
    """One command of a console call, exactly as it will be sent, and whether it changes
    the device (``expanded``: as the device reads it; ``note``: why it changes it)."""

    command: str
    changes: bool
    expanded: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "changes": self.changes,
            "expanded": self.expanded,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class ChangePreview:
    """What a call would change: per device, the exact commands that change it
    (``devices``) and, for a console call, every command it sends, in order, each marked
    (``commands``); for the topology, one line per change (``create node PC3 (VPCS)``,
    ``link PC1 e0 - SW1 e1``); for a verified change, the checks that decide it."""

    summary: str
    devices: Mapping[str, Sequence[str]] = field(default_factory=dict)
    topology: Sequence[str] = ()
    commands: Mapping[str, Sequence[PreviewCommand]] = field(default_factory=dict)
    #: For a verified change: the checks that will decide it and what happens when one
    #: fails (``checks``, ``standing``, ``on_fail``, ``wait_s``).
    verification: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "summary": self.summary,
            "devices": {name: list(commands) for name, commands in self.devices.items()},
            "topology": list(self.topology),
        }
        if self.commands:
            data["commands"] = {
                name: [line.to_dict() for line in lines] for name, lines in self.commands.items()
            }
        if self.verification is not None:
            data["verification"] = dict(self.verification)
        return data


@dataclass(frozen=True, slots=True)
class Assessment:
    """A tool executor's view of one call: whether it changes the lab, and how.

    ``changes`` ``None`` means the executor has no view of this call: the tool's
    declared effect decides (:meth:`changes_under`).
    """

    changes: bool | None = None
    preview: ChangePreview | None = None

    @classmethod
    def read_only(cls) -> Assessment:
        return cls(False)

    def changes_under(self, effect: ToolEffect | None) -> bool:
        """Whether the call changes something, for a tool declaring ``effect``: the
        executor's verdict when it gave one, else anything but ``read_only`` (an
        undeclared effect included) is a change."""
        if self.changes is not None:
            return self.changes
        return effect is not ToolEffect.READ_ONLY


def call_digest(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """What an approval is bound to: ``sha256:`` and the hex SHA-256 of the UTF-8 JSON
    text of ``[tool_name, arguments]`` with keys sorted, no whitespace and non-ASCII
    characters as they are (``json.dumps(..., sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)``)."""
    canonical = json.dumps(
        [tool_name, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call waiting for the user's decision: exactly what would run (the tool, its full
    arguments) and what it would change (the preview); ``from_text``: the model wrote the
    call in its reply's text instead of making it (such a call may be quoted from what a
    device or a file said, so the card says so)."""

    approval_id: str
    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    preview: ChangePreview
    from_text: bool = False

    @property
    def digest(self) -> str:
        """The digest of the tool and its arguments that a decision on it is bound to."""
        return call_digest(self.tool_name, self.arguments)


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The user's answer (``user_id`` who gave it), or the lack of one (``reason``:
    ``timeout`` or ``aborted``, with ``approve`` False).

    ``digest`` is the :func:`call_digest` of the call it decides on: an approved call runs
    only when its own digest is that one (``None``: not bound yet; the gate runs nothing
    under an unbound approval).
    """

    approve: bool
    user_id: str | None = None
    comment: str = ""
    reason: str = "decided"
    digest: str | None = None

    def answers(self, digest: str | None) -> bool:
        """Whether this decision may answer the request for the call ``digest`` names:
        unbound (the request binds it), or bound to that call. The one rule a decision
        meets its request by: where it is delivered (:meth:`TurnControl.decide`) and
        where the call runs (the gate)."""
        return self.digest is None or digest is None or self.digest == digest

    def bound(self, digest: str) -> ApprovalDecision:
        """This decision bound to ``digest``, unless it is bound already (to it or to
        other arguments, which the gate then refuses)."""
        if self.digest is not None:
            return self
        return ApprovalDecision(self.approve, self.user_id, self.comment, self.reason, digest)

    def to_metadata(self) -> dict[str, Any]:
        """How the decision is kept with the tool message it led to."""
        kept: dict[str, Any] = {
            "decision": "approve" if self.approve else "reject",
            "by": self.user_id,
            "comment": self.comment,
            "reason": self.reason,
        }
        if self.digest is not None:
            kept["digest"] = self.digest
        return kept


class DecisionOutcome(StrEnum):
    ACCEPTED = "accepted"
    ALREADY_DECIDED = "already_decided"
    UNKNOWN = "unknown"
    #: Bound to other arguments than the waiting call's: refused, nothing decided.
    OTHER_ARGUMENTS = "other_arguments"


class TurnControl:
    """What may reach a running turn from outside (the abort endpoint, the approval
    endpoint, another replica through a shared turn log). Synchronous; loop-bound."""

    __slots__ = ("_decided", "_digests", "_pending", "abort")

    def __init__(self, abort: AbortToken | None = None) -> None:
        self.abort = abort or AbortToken()
        self._pending: dict[str, asyncio.Future[ApprovalDecision]] = {}
        self._digests: dict[str, str] = {}
        self._decided: set[str] = set()

    def expect(
        self,
        approval_id: str,
        waiting: asyncio.Future[ApprovalDecision] | None = None,
        digest: str | None = None,
    ) -> asyncio.Future[ApprovalDecision]:
        """Register an approval the turn waits for; its decision completes ``waiting``
        (the future the waiting call awaits; a new one by default), which is returned.
        ``digest``: the call's (:func:`call_digest`); a decision bound to other arguments
        is then refused on delivery, before it is taken. An approval registered already
        keeps its future: a relay that expects it again, to make it decidable from other
        replicas, gets that same one."""
        future = self._pending.get(approval_id)
        if future is None:
            future = waiting or asyncio.get_running_loop().create_future()
            self._pending[approval_id] = future
            if digest is not None:
                self._digests[approval_id] = digest
        return future

    def digest_of(self, approval_id: str) -> str | None:
        """The digest of the call a waiting approval is for (``None``: not known)."""
        return self._digests.get(approval_id)

    def decide(self, approval_id: str, decision: ApprovalDecision) -> DecisionOutcome:
        """Deliver a decision: accepted once; a second one is refused, and so is one
        bound to other arguments than the waiting call's (which decides nothing)."""
        if approval_id in self._decided:
            return DecisionOutcome.ALREADY_DECIDED
        if approval_id not in self._pending:
            return DecisionOutcome.UNKNOWN
        if not decision.answers(self._digests.get(approval_id)):
            return DecisionOutcome.OTHER_ARGUMENTS
        future = self._pending.pop(approval_id)
        self._digests.pop(approval_id, None)
        self._decided.add(approval_id)
        if not future.done():
            future.set_result(decision)
        return DecisionOutcome.ACCEPTED

    @property
    def pending(self) -> tuple[str, ...]:
        """Approvals waiting for a decision, oldest first."""
        return tuple(self._pending)
