"""The registry of live turns: the turns this process runs, found for whoever asks.

A turn is here from the moment its session is claimed until its end is published (one
that is ending may still be found, having let its session go). :class:`LiveTurns` is
how a client re-attaches to a turn, how an abort or a decision reaches it (here, or
through the :class:`~copilot_core.ports.TurnControlRelay` when another process runs
it), and how a session's deletion or the service's shutdown stops turns. It starts
nothing and drives nothing: :class:`~copilot_core._turn_start.TurnStarter` adds the
turns, :class:`~copilot_core._turn_drive.TurnDriver` removes them.
"""

from __future__ import annotations

import asyncio
import logging

from copilot_core._approvals import ApprovalDecision, DecisionOutcome
from copilot_core._live import LiveTurn, TurnHandle
from copilot_core._session_key import SessionKey
from copilot_core.ports import TurnControlRelay, TurnLog

__all__ = ["LiveTurns"]

log = logging.getLogger(__name__)


class LiveTurns:
    """The turns this process runs, by id (see the module's docstring)."""

    def __init__(self, turn_log: TurnLog, controls: TurnControlRelay) -> None:
        self._log = turn_log
        self._controls = controls
        self._live: dict[str, LiveTurn] = {}
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once :meth:`shutdown` began: no new turn starts."""
        return self._closing

    def add(self, turn: LiveTurn) -> None:
        self._live[turn.info.turn_id] = turn

    def remove(self, turn: LiveTurn) -> None:
        self._live.pop(turn.info.turn_id, None)

    def find(self, project_id: str, session_id: str) -> LiveTurn | None:
        """The session's turn in this process that still holds the session (the newest:
        one that is ending may still be here, having let the session go)."""
        for turn in reversed(self._live.values()):
            if (turn.info.project_id, turn.info.session_id) == (project_id, session_id):
                return turn
        return None

    # ==================================================================== clients
    async def attach(self, key: SessionKey) -> TurnHandle | None:
        """The session's running turn (or one that ended moments ago), for re-attaching."""
        state = await self._log.find(key.project_id, key.session_id)
        if state is None or state.info.user_id != key.user_id:
            return None
        return TurnHandle(
            state.info,
            self._log,
            last_seq=state.last_seq,
            finished=state.finished,
            pending=state.pending,
            live=self._live.get(state.info.turn_id),
        )

    async def running(self, project_id: str, session_id: str) -> bool:
        """Whether the session has a turn that has not ended (in any process)."""
        state = await self._log.find(project_id, session_id)
        return state is not None and not state.finished

    async def abort(self, project_id: str, session_id: str, reason: str) -> bool:
        """Abort the session's running turn wherever it runs; False when none runs."""
        turn = self.find(project_id, session_id)
        if turn is not None:
            return turn.abort.abort(reason)
        return await self._controls.request_abort(project_id, session_id, reason)

    async def decide(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        """Deliver a decision on a pending approval of the session's turn, wherever it runs."""
        turn = self.find(project_id, session_id)
        if turn is not None:
            return turn.control.decide(approval_id, decision)
        return await self._controls.send_decision(project_id, session_id, approval_id, decision)

    # ===================================================================== stop
    async def stop(self, project_id: str, session_id: str | None, reason: str) -> None:
        """Abort the running turns of a session (or of every session of a project) and wait
        for this process's ones to end."""
        ours = [
            turn
            for turn in self._live.values()
            if turn.info.project_id == project_id and session_id in (None, turn.info.session_id)
        ]
        for turn in ours:
            turn.abort.abort(reason)
        if session_id is not None and not ours:
            await self._controls.request_abort(project_id, session_id, reason)
        if ours:
            await asyncio.wait([asyncio.shield(turn.result) for turn in ours])

    async def shutdown(self, grace: float) -> None:
        """Refuse new turns, abort every running one and give them ``grace`` seconds to
        save; turns still running after that are cancelled (they still end ``done``)."""
        self._closing = True
        turns = list(self._live.values())
        for turn in turns:
            turn.abort.abort("the service is shutting down")
        if not turns:
            return
        results = {asyncio.shield(turn.result) for turn in turns}
        _, late = await asyncio.wait(results, timeout=grace)
        if not late:
            return
        for turn in turns:
            if turn.task is not None and not turn.result.done():
                turn.task.cancel()
        _, stuck = await asyncio.wait(late, timeout=5.0)
        if stuck:
            log.error("%d turn(s) did not end after shutdown was requested", len(stuck))
