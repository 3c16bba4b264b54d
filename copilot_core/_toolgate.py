"""The one place every tool call passes, whoever makes it and whichever source serves it.

:class:`ToolGate` wraps a :class:`~copilot_core.ports.ToolExecutor` and applies, once
for every caller (the built-in agent, an MCP client) and every tool source:

* the operator's policy (:meth:`ToolGate.admit`): the caller's ``UserLimits`` travel in
  the call's context; a mode above theirs is a PermissionDeniedError before anything
  runs (an adapter maps it), an approval setting below theirs is raised to it;
* the mode's policy: only the tools the mode offers are run; any other call gets an
  error result naming the tools that are available;
* malformed calls (arguments that are not a JSON object) get an error result;
* approval: the executor assesses each call once; when the user's
  :class:`~copilot_core._approvals.ApprovalPolicy` requires it (from the tool's declared
  :class:`~copilot_core._approvals.ToolEffect` and the assessment), the gate *asks*: the
  call's exchange (:meth:`ToolGate.exchange`, a generator in the manner of httpx's auth
  flow) yields an :class:`~copilot_core._approvals.ApprovalRequest` and its driver sends
  the decision back in. :meth:`ToolGate.run` hands each request up as an
  :class:`~copilot_core.events.ApprovalNeeded` record, which the turn runner answers; no
  callback goes back up the stack. The user decides once per distinct call in a turn:
  given the turn's :class:`TurnDecisions`, ``run`` answers an identical call from them
  without asking again. A decision is bound to the call's arguments (its
  ``digest``): one for other arguments runs nothing. A call the model wrote in its
  reply's text rather than made (``from_text``) asks when it changes anything, whatever
  the policy (``never`` included), and its request says so: text can be quoted from a
  device, and what a device asks for is not a decision. A rejected call is answered
  ``rejected``, the decision kept with the tool message; an approved one runs with its
  :class:`~copilot_core._tools.Clearance` (the assessment, the decision). The gate
  binds each decision sent in to the digest of the request it answers, and it alone
  checks that a decision covers the call it runs;
* verified changes: a call its tool source gives :class:`~copilot_core.intent.ChangeSteps`
  for (it asks for checks that decide it) is run by the gate as
  :func:`~copilot_core.intent.verify_change` over those steps instead of ``execute``:
  the typed plan goes on the approval card and is the one that decides; each step is
  said as ``tool_progress``; the outcome becomes the call's result once;
* the time limit, a cap on the size of a result (a longer one is cut, saying so), and
  the mapping of failures to error results (a tool that raises a
  :class:`~copilot_core.errors.CopilotError` reports its message; anything else is an
  internal error, logged);
* abort: running calls are cancelled at once and answered ``{"status": "aborted"}``
  (the executor reacts to the cancellation, e.g. by interrupting a device's command);
* progress: what a running tool reports reaches the caller as ``tool_progress``
  events, coalesced.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from copilot_core._approvals import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Assessment,
    ChangePreview,
    ToolEffect,
    call_digest,
)
from copilot_core._callorder import Need, after_failure, blocked, plan
from copilot_core._limits import UserLimits
from copilot_core._session import CopilotMode
from copilot_core._streams import Aborted, race_abort
from copilot_core._tools import (
    Clearance,
    ParsedToolCall,
    ToolContext,
    ToolProgress,
    ToolResult,
    ToolSpec,
    ToolStatus,
    render_tool_output,
)
from copilot_core._verification import MonotonicClock, WaitClock
from copilot_core._verified_change import ChangeSteps, verify_change
from copilot_core.errors import CopilotError
from copilot_core.events import ApprovalNeeded, ToolEndEvent, ToolProgressEvent, ToolStartEvent
from copilot_core.ports import ToolExecutor

__all__ = [
    "MAX_RESULT_CHARS",
    "TOOL_TIMEOUT",
    "CallBounds",
    "Exchange",
    "ToolGate",
    "TurnDecisions",
]

log = logging.getLogger(__name__)

ToolEvent = ToolStartEvent | ToolProgressEvent | ToolEndEvent | ApprovalNeeded
#: One call as an exchange: it yields approval requests, each answered by sending the
#: decision in (``asend``), and ends with the call's result.
Exchange = AsyncGenerator[ApprovalRequest | ToolResult, ApprovalDecision | None]

#: Seconds one call may run unless the gate is told otherwise (``agent.tool_timeout``).
TOOL_TIMEOUT = 300.0
#: The longest result, in characters as the model reads it, unless the gate is told
#: otherwise (``agent.max_result_chars``).
MAX_RESULT_CHARS = 200_000


@dataclass(frozen=True, slots=True)
class CallBounds:
    """How long one call into the lab may run and how long its result may be: what the
    gate applies to every tool call (:attr:`ToolGate.bounds`), and what the core's own
    calls into the lab (a standing intent's run) take from it, so that no path into the
    lab runs longer or answers more than a tool call may."""

    timeout: float = TOOL_TIMEOUT
    max_result_chars: int = MAX_RESULT_CHARS


class ToolGate:
    """Runs tool calls under the copilot's rules (see the module's docstring)."""

    def __init__(
        self,
        tools: ToolExecutor,
        *,
        timeout: float = TOOL_TIMEOUT,
        progress_interval: float = 0.25,
        max_result_chars: int = MAX_RESULT_CHARS,
        wait_clock: WaitClock | None = None,
    ) -> None:
        self._tools = tools
        self.timeout = timeout
        self.progress_interval = progress_interval
        self.max_result_chars = max_result_chars
        #: What a verified change's checks wait on (the event loop's clock by default).
        self.wait_clock = wait_clock or MonotonicClock()
        self._orphans: set[asyncio.Task[Any]] = set()

    @property
    def bounds(self) -> CallBounds:
        """The time limit and the result cap this gate applies to each call."""
        return CallBounds(self.timeout, self.max_result_chars)

    def specs(self, mode: CopilotMode) -> list[ToolSpec]:
        """The tools offered in ``mode``."""
        return list(self._tools.specs(mode))

    # ------------------------------------------------------- the operator's policy
    def admit(self, ctx: ToolContext) -> ToolContext:
        """``ctx`` within the caller's limits (``ctx.limits``), the one place a tool
        call's are applied: PermissionDeniedError when its mode is above the highest the
        operator's policy allows them; its approval setting raised to the least allowed.
        :meth:`exchange` and :meth:`run` admit every context they are given."""
        _require_mode(ctx.mode, ctx.limits)
        approval = ctx.limits.floor_approval(ctx.approval)
        return ctx if approval is ctx.approval else replace(ctx, approval=approval)

    def offered(self, mode: CopilotMode, limits: UserLimits) -> list[ToolSpec]:
        """The tools a caller with ``limits`` is offered in ``mode`` (PermissionDeniedError
        when the mode is above their highest, as :meth:`admit`)."""
        _require_mode(mode, limits)
        return self.specs(mode)

    async def assess(self, call: ParsedToolCall, ctx: ToolContext) -> Assessment:
        """What the call would change (the executor's preview); a call the mode does not
        offer, or a malformed one, changes nothing."""
        if self._refusal(call, {spec.name: spec for spec in self.specs(ctx.mode)}, ctx):
            return Assessment.read_only()
        return await self._tools.assess(call, ctx)

    def exchange(
        self, call: ParsedToolCall, ctx: ToolContext, *, decision: ApprovalDecision | None = None
    ) -> Exchange:
        """One call as a two-way exchange: drive it with ``anext``; while it yields an
        :class:`ApprovalRequest`, send the decision in (``asend``); its last item is the
        call's :class:`ToolResult`. Sending ``None`` means no one can decide: the call is
        refused. ``decision``, made beforehand (a click on Undo), is used instead of
        asking; it must be bound to this call (``call_digest``); one sent in is bound
        here to the request it answers. The driver bounds the
        wait for a decision; ``ctx.abort`` is the driver's to watch too (:meth:`admit`)."""
        ctx = self.admit(ctx)
        offered = {spec.name: spec for spec in self.specs(ctx.mode)}
        return self._flow(call, ctx, offered, decision)

    async def call(
        self, call: ParsedToolCall, ctx: ToolContext, *, decision: ApprovalDecision | None = None
    ) -> ToolResult:
        """Run one call to its result; ``ctx.abort`` firing answers it ``aborted``. A call
        that waits for approval runs with ``decision`` (made beforehand, bound to this
        call), or is refused without one: no one can approve it here."""

        async def drive() -> ToolResult:
            async with aclosing(self.exchange(call, ctx, decision=decision)) as flow:
                step = await anext(flow)
                while isinstance(step, ApprovalRequest):
                    step = await flow.asend(None)
                return step

        try:
            return await race_abort(drive(), ctx.abort, None)
        except Aborted:
            return ToolResult.aborted()

    async def run(
        self,
        calls: Sequence[ParsedToolCall],
        ctx: ToolContext,
        *,
        from_text: bool = False,
        decided: TurnDecisions | None = None,
    ) -> AsyncGenerator[ToolEvent, None]:
        """Run the calls of one model message (``from_text``: the model wrote them in its
        text; each that changes anything asks, whatever ``ctx.approval``; ``decided``:
        the user's decisions so far in the turn, which answer an identical call without
        asking again, and keep the ones made here): concurrently,
        except that a call waits for every earlier call that creates or changes what it
        touches, and is not run when one of those did not create what it needs (see
        :mod:`copilot_core._callorder`).

        Yields ``tool_start`` for each call in order, ``tool_progress`` while they run,
        an :class:`~copilot_core.events.ApprovalNeeded` record for each call that waits
        for the user (whoever drives the run answers it: the turn runner), and one
        ``tool_end`` per call as it finishes (those finishing together in call order).
        When ``ctx.abort`` fires, the calls still running (or waiting) are cancelled (not
        awaited: they close their connections on their own time) and end ``aborted``
        (the context is admitted first: :meth:`admit`).
        """
        ctx = self.admit(ctx)
        offered = {spec.name: spec for spec in self.specs(ctx.mode)}
        progress = _ProgressRelay(self.progress_interval)
        asks = _Asks(decided if decided is not None else TurnDecisions())
        running: dict[asyncio.Task[ToolResult], ParsedToolCall] = {}
        tasks: dict[str, asyncio.Task[ToolResult]] = {}
        started: dict[str, float] = {}
        refused: dict[str, ToolResult] = {}
        for call in calls:
            refusal = self._refusal(call, offered, ctx)
            if refusal is not None:
                refused[call.id] = refusal
        needs = plan(calls, offered, {call.id for call in calls if call.id not in refused})
        for call in calls:
            yield ToolStartEvent(call.name, call.id)
            started[call.id] = time.monotonic()
            if call.id in refused:
                yield _end(call, refused[call.id], 0.0)
            else:
                call_ctx = replace(ctx, progress=progress.reporter(call))
                flow = self._flow(call, call_ctx, offered, None, from_text=from_text)
                task = asyncio.create_task(_in_order(flow, needs[call.id], tasks, asks))
                tasks[call.id] = task
                running[task] = call
        if not running:
            return

        abort_wait: asyncio.Future[Any] = asyncio.ensure_future(ctx.abort.wait())
        pending: set[asyncio.Task[ToolResult]] = set(running)
        order = {call.id: n for n, call in enumerate(calls)}
        try:
            while pending:
                await asyncio.wait(
                    {*pending, abort_wait, progress.ready(), asks.ready()},
                    return_when=asyncio.FIRST_COMPLETED,
                )
                for needed in asks.drain():
                    yield needed
                for event in progress.drain():
                    yield event
                done = sorted((t for t in pending if t.done()), key=lambda t: order[running[t].id])
                pending.difference_update(done)
                for task in done:
                    call = running[task]
                    for event in progress.drain(call.id):
                        yield event
                    yield _end(call, task.result(), time.monotonic() - started[call.id])
                if ctx.abort.is_aborted():
                    for task in sorted(pending, key=lambda t: order[running[t].id]):
                        task.cancel()
                        self._orphans.add(task)
                        task.add_done_callback(self._orphans.discard)
                        call = running[task]
                        yield _end(call, ToolResult.aborted(), time.monotonic() - started[call.id])
                    pending.clear()
        finally:
            progress.close()
            asks.close()
            abort_wait.cancel()
            for task in pending:
                task.cancel()

    @staticmethod
    def _refusal(
        call: ParsedToolCall, offered: dict[str, ToolSpec], ctx: ToolContext
    ) -> ToolResult | None:
        if call.name not in offered:
            names = ", ".join(sorted(offered)) or "none"
            return ToolResult.error(
                f"Tool {call.name!r} is not available in {ctx.mode.value} mode; "
                f"available tools: {names}."
            )
        if not call.is_valid:
            return ToolResult.error(
                f"The call of {call.name!r} was malformed ({call.error}); it was not run. "
                "Call it again with a JSON object as arguments.",
                arguments=call.raw_arguments[:2000],
            )
        return None

    async def _flow(
        self,
        call: ParsedToolCall,
        ctx: ToolContext,
        offered: dict[str, ToolSpec],
        decision: ApprovalDecision | None,
        *,
        from_text: bool = False,
    ) -> Exchange:
        """Assess the call (once) and ask its source whether it is a verified change, ask
        for a decision when the policy says so (from the tool's declared effect and the
        assessment; for a call read from the model's text, at least as ``changes``
        would), then run it within the time limit (waiting for a decision does not count
        against it) with what was assessed and decided; the last item is the result."""
        refusal = self._refusal(call, offered, ctx)
        if refusal is not None:
            yield refusal
            return
        spec = offered[call.name]
        arguments = dict(call.arguments or {})
        digest = call_digest(call.name, arguments)
        try:
            assessment = await self._tools.assess(call, ctx)
            steps = await self._tools.change_steps(call, ctx, assessment)
            preview = assessment.preview or _generic_preview(call, spec)
            if steps is not None:  # the card lists the checks that will decide the change
                preview = replace(preview, verification=steps.plan.to_dict())
            asks = ctx.approval.requires(spec.effect, assessment) or (
                from_text and ApprovalPolicy.CHANGES.requires(spec.effect, assessment)
            )
            if decision is None and asks:
                request = ApprovalRequest(
                    "", call.id, call.name, arguments, preview, from_text=from_text
                )
                answer = yield request
                if answer is None:
                    yield ToolResult.error(
                        f"{call.name} needs the user's approval, and no one can approve it here."
                    )
                    return
                decision = answer.bound(digest)  # a decision on this request, unless bound
                if not decision.approve:
                    if decision.reason == "aborted":  # the turn's abort answers it
                        yield replace(
                            ToolResult.aborted(), metadata={"approval": decision.to_metadata()}
                        )
                    else:
                        yield ToolResult.rejected(decision)
                    return
            if decision is not None and decision.digest != digest:
                yield _unbound(call, decision, digest)
                return
            clearance = Clearance(assessment, decision)
            async with asyncio.timeout(self.timeout):
                if steps is None:
                    result = await self._tools.execute(call, ctx, clearance)
                else:
                    result = await self._verified(steps, ctx)
        except TimeoutError:
            result = ToolResult.error(f"{call.name} did not finish within {self.timeout:g} s.")
        except CopilotError as exc:
            result = ToolResult.error(exc.message)
        except Exception:
            log.exception("tool %s failed", call.name)
            result = ToolResult.error(
                f"{call.name} failed with an internal error; see the server log."
            )
        result = self._capped(call, result)
        if decision is not None:
            result = replace(
                result, metadata={**(result.metadata or {}), "approval": decision.to_metadata()}
            )
        yield result

    async def _verified(self, steps: ChangeSteps, ctx: ToolContext) -> ToolResult:
        """The change as a transaction decided by the steps' plan (the card's), its result
        fitted to the cap by cutting its evidence before ``_capped`` would cut its text."""
        outcome = await verify_change(steps, self.wait_clock, progress=ctx.report_progress)
        return outcome.to_result(self.max_result_chars)

    def _capped(self, call: ParsedToolCall, result: ToolResult) -> ToolResult:
        """A result longer than ``max_result_chars`` (as the model would read it) is cut,
        saying so: one tool must not fill the model's context."""
        text = render_tool_output(result.output)
        if len(text) <= self.max_result_chars:
            return result
        note = (
            f"The output of {call.name} was {len(text)} characters long; only the first "
            f"{self.max_result_chars} are kept. Ask for less (fewer devices or commands, a "
            "narrower show command)."
        )
        return replace(
            result,
            output={"truncated": True, "note": note, "output": text[: self.max_result_chars]},
        )


#: What a call of a tool declaring each effect does, in words (a card's title).
_EFFECT_WORDS: dict[ToolEffect | None, str] = {
    ToolEffect.READ_ONLY: "read from the lab",
    ToolEffect.DEVICE_CHANGE: "change a device",
    ToolEffect.TOPOLOGY_CHANGE: "change the topology",
    ToolEffect.NODE_STATE: "start or stop nodes",
    ToolEffect.CAPTURE: "start or stop a packet capture",
    ToolEffect.EXTERNAL_CHANGE: "change something outside the lab",
    None: "run a tool that may change anything",
}


def _require_mode(mode: CopilotMode, limits: UserLimits) -> None:
    limits.require_mode(mode, "Calling the copilot's tools in this mode")


def _generic_preview(call: ParsedToolCall, spec: ToolSpec) -> ChangePreview:
    """What the card says when the executor described nothing: the tool's declared effect
    in words (the page shows the tool's name apart)."""
    return ChangePreview(_EFFECT_WORDS[spec.effect])


def _unbound(call: ParsedToolCall, decision: ApprovalDecision, digest: str) -> ToolResult:
    """The answer to a call whose approval was given for other arguments."""
    return ToolResult(
        {
            "status": "rejected",
            "error": f"The approval does not cover this call of {call.name}: it was given for "
            f"other arguments (digest {decision.digest or 'none'}; this call's is {digest}). "
            "Nothing was done.",
        },
        ToolStatus.REJECTED,
        {"approval": decision.to_metadata()},
    )


async def _in_order(
    flow: Exchange,
    needs: Sequence[Need],
    tasks: Mapping[str, asyncio.Task[ToolResult]],
    asks: _Asks,
) -> ToolResult:
    """Drive one call's exchange once the earlier calls it needs (``tasks``: the reply's
    calls by id) have ended; not at all when one of them did not create what it needs."""
    earlier = {need.call.id: tasks[need.call.id] for need in needs}
    if earlier:
        await asyncio.wait(earlier.values())
    results = {call_id: _outcome(task) for call_id, task in earlier.items()}
    refusal = blocked(needs, results)
    if refusal is not None:
        await flow.aclose()
        return refusal
    return after_failure(await asks.settle(flow), needs, results)


def _outcome(task: asyncio.Task[ToolResult]) -> ToolResult:
    """An ended call's result (a cancelled one was aborted)."""
    if task.cancelled():
        return ToolResult.aborted()
    if task.exception() is not None:
        return ToolResult.error("the call failed with an internal error")
    return task.result()


def _end(call: ParsedToolCall, result: ToolResult, elapsed: float) -> ToolEndEvent:
    return ToolEndEvent(
        call.name, call.id, result.output, result.status.value, elapsed, result.metadata
    )


class TurnDecisions:
    """The user's decisions in one turn, by the digest of the call decided on: the user
    decides once per distinct call in a turn, so an identical call later in the turn
    (the model trying again after a failure) is answered from here without asking. A
    lapse or an abort is not kept: nobody decided."""

    __slots__ = ("_by_digest",)

    def __init__(self) -> None:
        self._by_digest: dict[str, ApprovalDecision] = {}

    def recall(self, digest: str) -> ApprovalDecision | None:
        """The decision on an identical call earlier in the turn, if there was one."""
        return self._by_digest.get(digest)

    def keep(self, digest: str, decision: ApprovalDecision) -> None:
        """The user decided on the call ``digest`` names."""
        if decision.reason == "decided":
            self._by_digest[digest] = decision


class _Asks:
    """The approval requests of running calls, handed up by :meth:`ToolGate.run` as
    :class:`ApprovalNeeded` records (each call waits on its record's one future), or
    answered from the turn's :class:`TurnDecisions` when the user decided on an
    identical call already."""

    def __init__(self, decided: TurnDecisions) -> None:
        self._loop = asyncio.get_running_loop()
        self._decided = decided
        self._waiting: list[ApprovalNeeded] = []
        self._wake: asyncio.Future[None] = self._loop.create_future()

    async def settle(self, flow: Exchange) -> ToolResult:
        """Drive one call's exchange to its result, asking up for each decision (bound
        to the request it answers) the turn has not made yet."""
        async with aclosing(flow):
            step = await anext(flow)
            while isinstance(step, ApprovalRequest):
                decision = self._decided.recall(step.digest)
                if decision is None:
                    needed = ApprovalNeeded(step, self._loop.create_future())
                    self._waiting.append(needed)
                    if not self._wake.done():
                        self._wake.set_result(None)
                    decision = await needed.decision()  # the exchange binds it
                    self._decided.keep(step.digest, decision)
                step = await flow.asend(decision)
            return step

    def ready(self) -> asyncio.Future[None]:
        """Completes when a request waits to be handed up."""
        return self._wake

    def drain(self) -> list[ApprovalNeeded]:
        if not self._wake.done():
            return []
        self._wake = self._loop.create_future()
        waiting, self._waiting = self._waiting, []
        return waiting

    def close(self) -> None:
        if not self._wake.done():
            self._wake.cancel()


class _ProgressRelay:
    """Collects what running tools report and hands it out coalesced: per call and
    device, at most one ``tool_progress`` event every ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._buffer: dict[tuple[str, str | None], list[str]] = {}
        self._names: dict[str, str] = {}
        self._wake: asyncio.Future[None] = self._loop.create_future()
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._closed = False

    def reporter(self, call: ParsedToolCall) -> Callable[[ToolProgress], None]:
        self._names[call.id] = call.name

        def report(progress: ToolProgress) -> None:
            if self._closed or not progress.text:
                return
            self._buffer.setdefault((call.id, progress.device), []).append(progress.text)
            if self._timer is None and not self._wake.done():
                delay = max(0.0, self._last + self._interval - self._loop.time())
                self._timer = self._loop.call_later(delay, self._ring)

        return report

    def _ring(self) -> None:
        self._timer = None
        if not self._wake.done():
            self._wake.set_result(None)

    def ready(self) -> asyncio.Future[None]:
        """Completes when buffered progress is due."""
        return self._wake

    def drain(self, call_id: str | None = None) -> list[ToolProgressEvent]:
        """The due events (all calls), or everything buffered for ``call_id``."""
        if call_id is None:
            if not self._wake.done():
                return []
            self._wake = self._loop.create_future()
            self._last = self._loop.time()
            keys = list(self._buffer)
        else:
            keys = [key for key in self._buffer if key[0] == call_id]
        events = []
        for key in keys:
            text = "".join(self._buffer.pop(key))
            events.append(ToolProgressEvent(self._names[key[0]], key[0], text, key[1]))
        return events

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._buffer.clear()
