"""The approvals a running turn waits for: the runner's side of the gate's exchange.

The gate hands a call's :class:`~copilot_core.ports.ApprovalRequest` up as an
:class:`~copilot_core.events.ApprovalNeeded` record; :class:`TurnApprovals` names it,
publishes ``approval_required`` (the full arguments, the preview and the digest they are
bound to), and resolves it exactly once, on the first of: the user's decision (through
:class:`~copilot_core.ports.TurnControl`, from this process or another replica), the time
limit, or the turn's abort or end.

One future per approval: the one the waiting call awaits (``ApprovalNeeded.waiting``)
is the one registered where decisions arrive (``TurnControl.expect``), so whatever
decides it (the user, the time limit, the turn's end) answers the call directly. Its
callback publishes ``approval_resolved``. Nothing here awaits but the registration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from copilot_core._approvals import ApprovalDecision, TurnControl
from copilot_core.events import (
    ApprovalNeeded,
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    WireEvent,
)

__all__ = ["TurnApprovals"]


@dataclass(eq=False, slots=True)
class _Asked:
    needed: ApprovalNeeded
    lapse: asyncio.TimerHandle


class TurnApprovals:
    """One turn's pending approvals (see the module's docstring)."""

    __slots__ = (
        "_asked",
        "_control",
        "_expect",
        "_new_id",
        "_publish",
        "_resolved",
        "_timeout",
    )

    def __init__(
        self,
        control: TurnControl,
        new_id: Callable[[], str],
        publish: Callable[[WireEvent], None],
        timeout: float,
        *,
        expect: Callable[[str], Awaitable[asyncio.Future[ApprovalDecision]]] | None = None,
        resolved: Callable[[str], None] | None = None,
    ) -> None:
        """``expect`` registers an approval where decisions arrive (the turn control
        relay, decidable from any replica; default: ``control`` only); ``resolved`` tells
        it the approval is over."""
        self._control = control
        self._new_id = new_id
        self._publish = publish
        self._timeout = timeout
        self._expect = expect
        self._resolved = resolved
        self._asked: dict[str, _Asked] = {}

    async def ask(self, needed: ApprovalNeeded) -> None:
        """Ask the user about one call: ``approval_required``; the decision comes later."""
        request = needed.request
        approval_id = self._new_id()
        # The call's own future, decidable from anywhere before any client can see it
        # (the relay, expecting it too, gets that same future).
        waiting = self._control.expect(approval_id, needed.waiting, request.digest)
        if self._expect is not None:
            await self._expect(approval_id)
        lapse = asyncio.get_running_loop().call_later(
            self._timeout,
            self._control.decide,
            approval_id,
            ApprovalDecision(False, reason="timeout"),
        )
        self._asked[approval_id] = _Asked(needed, lapse)
        self._publish(
            ApprovalRequiredEvent(
                approval_id,
                request.tool_call_id,
                request.tool_name,
                dict(request.arguments),
                request.preview.to_dict(),
                request.digest,
                request.from_text,
            )
        )
        waiting.add_done_callback(lambda _: self._resolve(approval_id))

    def settle(self, reason: str = "aborted") -> None:
        """Resolve every approval still waiting (the turn is aborted or ends): nobody
        decided them."""
        for approval_id in list(self._asked):
            self._resolve(approval_id, ApprovalDecision(False, reason=reason))

    def _resolve(self, approval_id: str, fallback: ApprovalDecision | None = None) -> None:
        asked = self._asked.pop(approval_id, None)
        if asked is None:
            return  # resolved already
        asked.lapse.cancel()
        waiting = asked.needed.waiting
        if waiting.cancelled():  # the call was cancelled (the turn's abort or end)
            decision = fallback or ApprovalDecision(False, reason="aborted")
            self._control.decide(approval_id, decision)  # (a later one: already decided)
        else:
            if not waiting.done() and fallback is not None:
                self._control.decide(approval_id, fallback)  # unless a decision came first
            decision = waiting.result()  # the first decision accepted
        if self._resolved is not None:
            self._resolved(approval_id)
        request = asked.needed.request
        self._publish(
            ApprovalResolvedEvent(
                approval_id,
                request.tool_call_id,
                "approve" if decision.approve else "reject",
                decision.user_id,
                decision.comment,
                decision.reason,
            )
        )
