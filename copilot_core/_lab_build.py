"""Building a lab plan on the user's click: the build over HTTP as a use case (issue 39).

:class:`LabBuilds` is what an adapter calls when the user approves a shown plan outside a
chat (``POST …/labs/build``). The click is the approval of ONE call, the same gated
build call the chat's agent makes (named by the tool source, :class:`LabBuildCalls`): the
tool source makes it a verified change (restore point, build, the plan's checks retried,
rolled back or kept). It

1. applies the operator's policy: a user whom it keeps below lab automation may not
   build (:class:`~copilot_core.errors.PermissionDeniedError`, 403), checked first;
2. checks that the session is the caller's (404 otherwise): the build is kept in its
   history, and its restore point with it;
3. binds the click to the plan shown: the request carries the :meth:`LabBuilds.digest`
   the plan's answer gave (the :func:`~copilot_core.ports.call_digest` of the build call
   of the plan alone); a plan whose digest is another is
   :class:`PlanChangedError` (409) and nothing is built;
4. resolves the plan against the server once more (a plan the server cannot build now:
   :class:`~copilot_core.labs.LabPlanError` naming every problem, nothing built);
5. claims the session exactly as a turn does (a ``lab-build-<id>`` claim): while it runs a
   turn, a rollback or a second build of the session is refused, and a running turn
   refuses it (:class:`~copilot_core.errors.SessionBusyError`, 409);
6. runs the call through the :class:`~copilot_core.ToolGate` with the user's limits and a
   decision made beforehand, bound to the call's digest (the gate alone checks that it
   covers the call it runs); the call stops when the claim is lost; what the build says
   as it goes reaches ``progress``;
7. records it in the session's history as one assistant message making that call
   and the tool message that answers it (the model of the next turn reads the build as
   one of its tools' calls), their metadata saying who and the verification's status.

The call is the tool source's (:meth:`LabBuildCalls.build_call`): a build with the tool's
defaults is exactly the call whose digest the plan's answer gave.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from copilot_core._approvals import ApprovalDecision, ApprovalPolicy, call_digest
from copilot_core._conversation import Conversation
from copilot_core._history import HistoryWindows
from copilot_core._lab_plan import LabPlan
from copilot_core._lab_plan_file import LabPlanError
from copilot_core._lab_plan_ports import LabBuildCalls, LabPlanner, PlanProblems
from copilot_core._limits import UNLIMITED, UserLimits
from copilot_core._messages import Message, ToolCall
from copilot_core._session import CopilotMode
from copilot_core._session_key import SessionKey
from copilot_core._store_ports import owned_session
from copilot_core._toolgate import ToolGate
from copilot_core._tools import (
    ParsedToolCall,
    ToolContext,
    ToolProgress,
    ToolResult,
    render_tool_output,
)
from copilot_core._verified_change import OnFail
from copilot_core.errors import ConflictError
from copilot_core.ports import AbortToken, CheckpointStore, Clock, IdFactory, SessionLeases

__all__ = [
    "LAB_BUILD_TURN_PREFIX",
    "BuildStatus",
    "LabBuildOutcome",
    "LabBuildRequest",
    "LabBuilds",
    "PlanChangedError",
]

#: The turn id of a build's claim on its session starts with this.
LAB_BUILD_TURN_PREFIX = "lab-build-"
#: The mode a build needs under the operator's policy (it changes the lab).
BUILD_MODE = CopilotMode.LAB_AUTOMATION_ASSISTANT
#: ``pass``/``fail``/``not_run``: the verification's (``not_run``: the build did not run
#: to the point of being checked, or was refused); ``unchecked``: a plan without checks,
#: built with nothing to decide it.
BuildStatus = Literal["pass", "fail", "not_run", "unchecked"]


class PlanChangedError(ConflictError):
    """The plan sent is not the one shown: its digest is another; nothing was built."""

    def __init__(self, given: str, digest: str) -> None:
        super().__init__(
            f"The plan is not the one that was shown (its digest is {digest}, the approval "
            f"was given for {given or 'none'}); nothing was built. Plan it again "
            "(POST …/labs/plan), look at it, and build the plan that answer gives."
        )
        self.given = given
        self.digest = digest


@dataclass(frozen=True, slots=True)
class LabBuildRequest:
    """One build approved by a session's owner. ``credentials`` stays in memory."""

    key: SessionKey
    plan: LabPlan
    #: The :meth:`LabBuilds.digest` of the plan as it was shown.
    digest: str
    on_fail: OnFail = "rollback"
    #: Seconds the checks may take to hold (``None``: the tool's default).
    wait_s: float | None = None
    #: A relative build: the fingerprint of the lab the plan was made against (the
    #: relative plan's answer gave it); only the difference is built, and the digest
    #: binds it (``None``: the whole plan is built).
    base: str | None = None
    credentials: str | None = field(default=None, repr=False)
    #: Who, in words (a user name), for the history; the user id is kept regardless.
    by: str | None = None
    #: The caller's limits under the operator's policy.
    limits: UserLimits = field(default=UNLIMITED, repr=False)
    #: Where what the build says as it goes is handed (per stage and device).
    progress: Callable[[ToolProgress], None] | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class LabBuildOutcome:
    """What a build did: the call's result and the two messages that record it."""

    call_id: str
    result: ToolResult
    status: BuildStatus
    messages: tuple[Message, ...]

    @property
    def output(self) -> Mapping[str, Any]:
        """The result's JSON object (the build's report with its ``verification``)."""
        output = self.result.output
        return output if isinstance(output, Mapping) else {"output": output}


class LabBuilds:
    """Build approved plans, one at a time per session (see the module docstring)."""

    def __init__(
        self,
        gate: ToolGate,
        planner: LabPlanner,
        calls: LabBuildCalls,
        store: CheckpointStore,
        leases: SessionLeases,
        *,
        clock: Clock,
        ids: IdFactory,
        windows: HistoryWindows | None = None,
    ) -> None:
        self._gate = gate
        self._planner = planner
        self._calls = calls
        self._store = store
        self._leases = leases
        self._clock = clock
        self._ids = ids
        self._windows = windows

    def digest(self, plan: LabPlan, base: str | None = None) -> str:
        """What a click on a shown plan is bound to: the digest of the build call of the
        plan alone (the tool's defaults), relative to the lab ``base`` names if given."""
        call = self._calls.build_call(plan, base=base)
        return call_digest(call.name, json.loads(call.arguments or "{}"))

    async def admit(self, key: SessionKey, limits: UserLimits) -> None:
        """What is refused before the plan is even read: a caller the operator's policy
        keeps below lab automation (PermissionDeniedError), a session that is not the
        caller's (SessionNotFoundError). The build checks them again."""
        limits.require_mode(BUILD_MODE, "Building a lab")  # the one check
        await owned_session(self._store, key)

    async def __call__(self, request: LabBuildRequest) -> LabBuildOutcome:
        """Build the plan and record it (see the module docstring).

        Raises before anything is built: PermissionDeniedError (the operator's policy),
        SessionNotFoundError, PlanChangedError (not the plan shown), LabPlanError (the
        server cannot build it), SessionBusyError (a turn, a rollback or a build runs).
        """
        key = request.key
        await self.admit(key, request.limits)
        digest = self.digest(request.plan, request.base)
        if request.digest != digest:
            raise PlanChangedError(request.digest, digest)
        await self._resolvable(request)
        claim = await self._leases.claim(
            key.project_id, key.session_id, f"{LAB_BUILD_TURN_PREFIX}{self._ids.new_id()}"
        )
        try:
            function = self._calls.build_call(
                request.plan, on_fail=request.on_fail, wait_s=request.wait_s, base=request.base
            )
            text = function.arguments or "{}"
            call_id = f"{LAB_BUILD_TURN_PREFIX}{self._ids.new_id()}"
            call = ParsedToolCall.parse(call_id, function.name, text)
            clicked = ApprovalDecision(True, user_id=key.user_id, comment="Built by the user")
            clicked = clicked.bound(call_digest(function.name, json.loads(text)))
            result = await self._gate.call(
                call, self._context(request, claim.lost), decision=clicked
            )
            status = _status(result, bool(request.plan.checks))
            now = self._clock.now()
            tool_call = ToolCall(id=call_id, function=function)
            messages = self._record(tool_call, result, status, request)
            await self._store.append_messages(key.project_id, key.session_id, messages)
            await self._store.record_turn(key.project_id, key.session_id, now)
            if self._windows is not None:
                self._windows.forget(key.project_id, key.session_id)
            return LabBuildOutcome(call_id, result, status, messages)
        finally:
            await self._leases.release(claim)

    async def _resolvable(self, request: LabBuildRequest) -> None:
        """LabPlanError when the server cannot build the plan now (nothing is done)."""
        resolved = await self._planner.resolve(request.plan, self._context(request, AbortToken()))
        if isinstance(resolved, PlanProblems):
            raise LabPlanError("plan", list(resolved.problems))

    @staticmethod
    def _context(request: LabBuildRequest, abort: AbortToken) -> ToolContext:
        return ToolContext(
            project_id=request.key.project_id,
            user_id=request.key.user_id,
            session_id=request.key.session_id,
            mode=BUILD_MODE,
            abort=abort,
            credentials=request.credentials,
            progress=request.progress or _ignore,
            # The click is the decision: the gate does not ask (its decision is given).
            approval=ApprovalPolicy.CHANGES,
            limits=request.limits,
        )

    def _record(
        self,
        call: ToolCall,
        result: ToolResult,
        status: BuildStatus,
        request: LabBuildRequest,
    ) -> tuple[Message, ...]:
        """The assistant message making the build call and the tool message answering it."""
        now = self._clock.now()
        who = request.by or request.key.user_id
        plan = request.plan
        what = "the change to the lab" if request.base else "the lab plan"
        note = (
            f"{who} built {what} ({len(plan.nodes)} nodes, {len(plan.links)} links, "
            f"{len(plan.checks)} checks); the build's status: {status}."
        )
        build = {"by": request.key.user_id, "by_name": who, "status": status}
        assistant = Message.assistant(self._ids.new_id(), note, now, (call,), lab_build=build)
        metadata: dict[str, Any] = dict(result.metadata or {})
        tool = Message.tool(
            self._ids.new_id(),
            call.id,
            call.function.name,
            render_tool_output(result.output),  # the gate capped it already
            now,
            lab_build=build,
            **metadata,
        )
        conversation = Conversation()
        conversation.extend([assistant, tool])  # refuses anything invalid
        return (assistant, tool)


def _status(result: ToolResult, checked: bool) -> BuildStatus:
    verification = (result.metadata or {}).get("verification")
    if verification in ("pass", "fail", "not_run"):
        return verification  # type: ignore[no-any-return]
    output = result.output
    built = isinstance(output, Mapping) and "nodes" in output
    return "unchecked" if built and not checked else "not_run"


def _ignore(progress: ToolProgress) -> None:
    return None
