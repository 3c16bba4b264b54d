"""The in-memory :class:`~copilot_core.ports.TurnControlRelay`: the turns of one process
reached by the requests of that process.

The turn runner attaches each turn it runs with its
:class:`~copilot_core._approvals.TurnControl`; an abort or a decision for the session
then reaches it. A shared relay (``adapters.redis``) does the same across replicas.
"""

from __future__ import annotations

import asyncio

from copilot_core._approvals import ApprovalDecision, DecisionOutcome, TurnControl
from copilot_core._turns import TurnInfo

__all__ = ["InMemoryTurnControlRelay"]


class InMemoryTurnControlRelay:
    """Aborts and decisions for the turns of this process (the default)."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], tuple[str, TurnControl]] = {}

    async def attach(self, turn: TurnInfo, control: TurnControl) -> None:
        self._turns[(turn.project_id, turn.session_id)] = (turn.turn_id, control)

    async def detach(self, turn: TurnInfo) -> None:
        key = (turn.project_id, turn.session_id)
        attached = self._turns.get(key)
        if attached is not None and attached[0] == turn.turn_id:
            del self._turns[key]

    async def expect(self, turn: TurnInfo, approval_id: str) -> asyncio.Future[ApprovalDecision]:
        attached = self._turns.get((turn.project_id, turn.session_id))
        if attached is None or attached[0] != turn.turn_id:
            raise RuntimeError(f"turn {turn.turn_id} is not attached")
        return attached[1].expect(approval_id)

    def resolved(self, turn: TurnInfo, approval_id: str) -> None:
        return None  # the turn's TurnControl is all there is

    async def request_abort(self, project_id: str, session_id: str, reason: str) -> bool:
        attached = self._turns.get((project_id, session_id))
        return attached is not None and attached[1].abort.abort(reason)

    async def send_decision(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        attached = self._turns.get((project_id, session_id))
        if attached is None:
            return DecisionOutcome.UNKNOWN
        return attached[1].decide(approval_id, decision)
