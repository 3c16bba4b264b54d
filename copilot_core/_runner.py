"""The turn runner: the one path every turn takes, from start to ``done``.

:class:`TurnRunner` is the face of three parts, one per lifetime of a turn:

* starting it (:class:`~copilot_core._turn_start.TurnStarter`): the checks, the
  session's claim, the turn log and the relay, the user's model and mode, the user's
  message minted once and saved, the agent's run config; a refusal stores nothing;
* driving it (:class:`~copilot_core._turn_drive.TurnDriver`), in a task of its own: the
  agent's events published, steps and drafts saved, stats and title, approvals asked,
  and the end (``error``, ``abort``, ``done``), whatever happened; it alone sends
  ``abort`` and ``done``;
* the registry of live turns (:class:`~copilot_core._live_turns.LiveTurns`): attach a
  client, abort, decide, stop a session's turns, shut down.

``ChatService`` and programs that embed the core use the runner; the parts are
private.
"""

from __future__ import annotations

from collections.abc import Sequence

from copilot_core._approvals import ApprovalDecision, DecisionOutcome
from copilot_core._chat_settings import RunnerSettings
from copilot_core._history import HistoryWindows
from copilot_core._live import TurnHandle
from copilot_core._live_turns import LiveTurns
from copilot_core._session import Session
from copilot_core._session_key import SessionKey
from copilot_core._turn_drive import TurnDriver
from copilot_core._turn_start import TurnStarter
from copilot_core._turns import TurnRequest
from copilot_core.ports import (
    AgentBackend,
    CheckpointStore,
    Clock,
    EventSink,
    IdFactory,
    LanguageModelProvider,
    SessionLeases,
    TurnControlRelay,
    TurnLog,
)

__all__ = ["RunnerSettings", "TurnHandle", "TurnRunner"]


class TurnRunner:
    """Starts, drives, attaches to, aborts and shuts down turns (see the module docstring)."""

    def __init__(
        self,
        store: CheckpointStore,
        turn_log: TurnLog,
        windows: HistoryWindows,
        *,
        leases: SessionLeases,
        controls: TurnControlRelay,
        models: LanguageModelProvider | None,
        clock: Clock,
        ids: IdFactory,
        settings: RunnerSettings | None = None,
        observers: Sequence[EventSink] = (),
    ) -> None:
        self.windows = windows
        self.settings = settings or RunnerSettings()
        #: The turns this process runs.
        self.turns = LiveTurns(turn_log, controls)
        #: What drives each started turn to its end.
        self.driver = TurnDriver(
            store,
            turn_log,
            windows,
            leases=leases,
            controls=controls,
            clock=clock,
            ids=ids,
            settings=self.settings,
            turns=self.turns,
            observers=observers,
        )
        #: What starts turns.
        self.starter = TurnStarter(
            store,
            turn_log,
            windows,
            leases=leases,
            controls=controls,
            models=models,
            clock=clock,
            ids=ids,
            settings=self.settings,
            turns=self.turns,
            drive=self.driver.drive,
        )

    @property
    def closing(self) -> bool:
        """True once :meth:`shutdown` began: no new turn starts."""
        return self.turns.closing

    async def start(
        self,
        request: TurnRequest,
        backend: AgentBackend,
        *,
        agent_id: str,
        query: str,
        session: Session | None,
    ) -> TurnHandle:
        """Start a turn on ``session`` (``None``: a new session) and return at once (see
        :meth:`TurnStarter.start <copilot_core._turn_start.TurnStarter.start>` for what
        it refuses)."""
        return await self.starter.start(
            request, backend, agent_id=agent_id, query=query, session=session
        )

    async def attach(self, key: SessionKey) -> TurnHandle | None:
        """The session's running turn (or one that ended moments ago), for re-attaching."""
        return await self.turns.attach(key)

    async def running(self, project_id: str, session_id: str) -> bool:
        """Whether the session has a turn that has not ended (in any process)."""
        return await self.turns.running(project_id, session_id)

    async def abort(
        self, project_id: str, session_id: str, reason: str = "aborted by user"
    ) -> bool:
        """Abort the session's running turn wherever it runs; False when none runs."""
        return await self.turns.abort(project_id, session_id, reason)

    async def decide(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        """Deliver a decision on a pending approval of the session's turn, wherever it runs."""
        return await self.turns.decide(project_id, session_id, approval_id, decision)

    async def stop(self, project_id: str, session_id: str | None, reason: str) -> None:
        """Abort the running turns of a session (or of every session of a project) and wait
        for this process's ones to end."""
        await self.turns.stop(project_id, session_id, reason)

    async def shutdown(self, grace: float = 10.0) -> None:
        """Refuse new turns, abort every running one and give them ``grace`` seconds to
        save; turns still running after that are cancelled (they still end ``done``)."""
        await self.turns.shutdown(grace)
