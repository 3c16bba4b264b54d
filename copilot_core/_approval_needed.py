"""The record of a tool call that waits for the user's decision.

:class:`ApprovalNeeded` is one of a turn's records (:data:`~copilot_core.events.TurnRecord`,
re-exported by :mod:`copilot_core.events`), but unlike the others it is not a value: it
holds the future the decision completes, so the call can wait on it. It lives here,
apart from the values, for that reason.
"""

from __future__ import annotations

import asyncio

from copilot_core._approvals import ApprovalDecision, ApprovalRequest

__all__ = ["ApprovalNeeded"]


class ApprovalNeeded:
    """A tool call waits for the user's decision (a record: no client sees it as such).

    The gate hands it up with the call's :class:`~copilot_core.ports.ApprovalRequest`;
    whoever drives the agent (the turn runner) asks the user (``approval_required``) and
    sends the decision back down with :meth:`answer`. The call waits until then (or until
    the turn's abort cancels it): an agent driven by something else must answer it too.
    The turn runner registers :attr:`waiting` where decisions arrive
    (``TurnControl.expect``), so the user's decision completes the very future the call
    waits on: one future per approval, nothing relayed.
    """

    __slots__ = ("_reply", "request")

    def __init__(self, request: ApprovalRequest, reply: asyncio.Future[ApprovalDecision]) -> None:
        self.request = request
        self._reply = reply

    def answer(self, decision: ApprovalDecision) -> None:
        """The decision (once; a later one, or one after the call was cancelled, is
        ignored)."""
        if not self._reply.done():
            self._reply.set_result(decision)

    @property
    def waiting(self) -> asyncio.Future[ApprovalDecision]:
        """The future the call waits on, which the decision completes."""
        return self._reply

    async def decision(self) -> ApprovalDecision:
        """Wait for :meth:`answer`."""
        return await self._reply

    def __repr__(self) -> str:
        return f"ApprovalNeeded({self.request.tool_name!r}, {self.request.tool_call_id!r})"
