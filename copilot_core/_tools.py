"""What the agent knows about tools: their specs, a parsed call, the call's context and result."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from copilot_core._abort import AbortToken
from copilot_core._approvals import ApprovalDecision, ApprovalPolicy, Assessment, ToolEffect
from copilot_core._limits import UNLIMITED, UserLimits
from copilot_core._session import CopilotMode

__all__ = [
    "NOT_CLEARED",
    "Clearance",
    "ParsedToolCall",
    "ToolContext",
    "ToolEffect",
    "ToolProgress",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "Touch",
    "TouchKind",
    "call_title",
    "render_tool_output",
]

log = logging.getLogger(__name__)


class TouchKind(StrEnum):
    """How one call touches a named resource of the world its tool works on."""

    READ = "read"
    #: The call brings the resource into being: a later call naming it needs it to succeed.
    CREATE = "create"
    #: The call changes (configures, starts, stops, deletes) a resource that exists.
    CHANGE = "change"


@dataclass(frozen=True, slots=True)
class Touch:
    """One resource a call names, and how: the tool source's declaration, computed from
    the call's arguments, from which the gate orders the calls of one reply (see
    :mod:`copilot_core._callorder`). ``resource`` is compared as given (the source folds
    case where its world does); ``label`` is how a message names it (default: the key)."""

    resource: str
    kind: TouchKind
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.resource


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to the model: name, description and JSON-schema parameters.

    ``mutates_topology`` tells the agent to re-read the lab topology after a
    successful call; ``effect`` is what the tool can do at most (``None``: not
    declared, which the gate treats as a change).

    For the compact tool set (small models): ``brief`` is the tool's description in a
    sentence (empty: the description's first sentence); an ``everyday`` tool is always
    offered, another one only when the user's message contains one of its ``cues``
    (lower-case words or word starts), and its schema without ``compact_omits``.

    ``title(arguments)`` names one call for people, in plain words ("Run 2 show commands
    on R1"): the page's tool card shows it. It is the tool source's, computed from the
    call's arguments, never the model's; ``None`` (or a call it cannot name): no title,
    and clients show the tool's name.

    ``touches(arguments)`` declares which resources one call reads, creates or changes
    (the tool source's, from the call's arguments): the calls of one reply are ordered
    by it (a call waits for every earlier call that creates or changes something it
    touches). ``None`` (or a call it cannot read): undeclared, ordered by ``effect``
    alone (a change runs after every earlier change of the reply).
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    mutates_topology: bool = False
    effect: ToolEffect | None = None
    brief: str = ""
    everyday: bool = True
    cues: tuple[str, ...] = ()
    #: Optional properties the compact set leaves out (options a small model does without).
    compact_omits: tuple[str, ...] = ()
    title: Callable[[dict[str, Any]], str | None] | None = field(
        default=None, compare=False, repr=False
    )
    touches: Callable[[dict[str, Any]], Sequence[Touch] | None] | None = field(
        default=None, compare=False, repr=False
    )

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ParsedToolCall:
    """A complete tool call: its raw argument text, and either the parsed object or an error."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    error: str | None = None

    @property
    def is_valid(self) -> bool:
        return self.error is None

    @classmethod
    def parse(cls, id: str, name: str, raw_arguments: str) -> ParsedToolCall:
        """Parse JSON argument text; empty text means no arguments. Never raises."""
        if not name:
            return cls(id, name, raw_arguments, None, "the tool call has no tool name")
        if not raw_arguments.strip():
            return cls(id, name, raw_arguments, {})
        try:
            value = json.loads(raw_arguments)
        except ValueError as exc:
            return cls(id, name, raw_arguments, None, f"arguments are not valid JSON: {exc}")
        if not isinstance(value, dict):
            kind = type(value).__name__
            return cls(
                id, name, raw_arguments, None, f"arguments must be a JSON object, not {kind}"
            )
        return cls(id, name, raw_arguments, value)


class ToolStatus(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    ABORTED = "aborted"
    #: The user did not approve the call (rejected it, or did not answer in time).
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned: a JSON-serialisable value (or a string) and a status."""

    output: Any
    status: ToolStatus = ToolStatus.SUCCESS
    #: Kept with the tool message (e.g. an approval's decision and who made it).
    metadata: dict[str, Any] | None = None

    @classmethod
    def error(cls, message: str, **details: Any) -> ToolResult:
        return cls({"status": "error", "error": message, **details}, ToolStatus.ERROR)

    @classmethod
    def aborted(cls) -> ToolResult:
        return cls({"status": "aborted"}, ToolStatus.ABORTED)

    @classmethod
    def rejected(cls, decision: ApprovalDecision) -> ToolResult:
        """The answer to a call the user did not approve: the model learns why, so it can
        propose something else."""
        if decision.reason == "timeout":
            why = "The user did not approve this change in time; it was not made."
        else:
            why = "The user rejected this change; it was not made."
        output: dict[str, Any] = {"status": "rejected", "error": why}
        if decision.comment:
            output["comment"] = decision.comment
        return cls(output, ToolStatus.REJECTED, {"approval": decision.to_metadata()})


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """Text a running tool has produced since its last report (a device's console output).

    ``device`` names where it comes from when the tool works on several.
    """

    text: str
    device: str | None = None


def _ignore_progress(progress: ToolProgress) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who calls a tool, where, and how to reach GNS3 on their behalf.

    ``credentials`` (the caller's GNS3 token) lives in memory only and is never
    shown by ``repr``. A tool that runs for a while reports what it has so far with
    :meth:`report_progress`; the agent forwards it to clients, rate-limited, as
    ``tool_progress`` events (reporting never blocks and may be called often).
    """

    project_id: str
    user_id: str
    session_id: str
    mode: CopilotMode
    abort: AbortToken
    credentials: str | None = field(default=None, repr=False)
    progress: Callable[[ToolProgress], None] = field(
        default=_ignore_progress, repr=False, compare=False
    )
    #: Which calls wait for the user's approval (the gate asks; its caller answers).
    approval: ApprovalPolicy = ApprovalPolicy.NEVER
    #: Work no person is waiting on at a console (a standing-intent run): a tool source
    #: may let a person's calls go first where they share something (a device console).
    background: bool = False
    #: The caller's limits under the operator's policy: the gate admits a call only within
    #: them (its mode at most theirs, its approval at least theirs; ``ToolGate.admit``).
    limits: UserLimits = field(default=UNLIMITED, repr=False, compare=False)

    def report_progress(self, text: str, *, device: str | None = None) -> None:
        """Hand on output produced since the last report (empty text is ignored)."""
        if text:
            self.progress(ToolProgress(text, device))


@dataclass(frozen=True, slots=True)
class Clearance:
    """How the gate lets one call through to ``execute``: the executor's own assessment
    of it (made once, before any approval; ``None`` when the call did not come through
    the gate) and, when the user was asked, their decision, bound to the call's
    arguments. An approved change is the executor's to make after taking a restore
    point, whose id its result names."""

    assessment: Assessment | None = None
    decision: ApprovalDecision | None = None

    @property
    def approved(self) -> ApprovalDecision | None:
        """The user's approval of this call, if it was approved."""
        decision = self.decision
        return decision if decision is not None and decision.approve else None


#: A call that did not come through the gate: not assessed, not approved.
NOT_CLEARED = Clearance()


#: The longest title a call gets (a longer one is cut with an ellipsis).
MAX_TITLE_CHARS = 120


def call_title(spec: ToolSpec | None, call: ParsedToolCall) -> str | None:
    """The plain-language title of ``call`` from its tool's ``spec`` (one line, at most
    :data:`MAX_TITLE_CHARS`), or ``None``: no spec or titler, arguments that are not an
    object, or a titler that names nothing. A titler that fails is logged and gives no
    title: a title never stops a call."""
    if spec is None or spec.title is None or call.arguments is None:
        return None
    try:
        title = spec.title(call.arguments)
    except Exception:  # a cosmetic: any failure means no title
        log.warning("the title of a %s call failed", spec.name, exc_info=True)
        return None
    text = " ".join(str(title or "").split())
    if len(text) > MAX_TITLE_CHARS:
        text = text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return text or None


def render_tool_output(output: Any) -> str:
    """Tool output as the text stored and streamed: strings as they are, others as JSON."""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, indent=2, default=str)
