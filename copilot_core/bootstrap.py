"""Building the chat from its parts, for a program that embeds the core.

The service builds its objects in its composition root (``entrypoints.container``);
a program that embeds the core and has no container of its own calls
:func:`build_chat_service`: it builds the :class:`~copilot_core.TurnRunner`, its
:class:`HistoryWindows` and (unless they are given) the in-memory ports of running
turns (turn log, session leases, turn control relay) from the settings, then the
:class:`~copilot_core.ChatService` over them. Nothing else builds a collaborator:
``ChatService`` and ``TurnRunner`` take theirs as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from copilot_core._chat_settings import ChatSettings, RunnerSettings
from copilot_core._history import HistoryWindows
from copilot_core._leases import InMemorySessionLeases
from copilot_core._relay import InMemoryTurnControlRelay
from copilot_core._runner import TurnRunner
from copilot_core._service import ChatService
from copilot_core._turnlog import InMemoryTurnLog
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

__all__ = [
    "HistoryWindows",
    "InMemorySessionLeases",
    "InMemoryTurnControlRelay",
    "InMemoryTurnLog",
    "build_chat_service",
    "history_windows",
]


def build_chat_service(
    store: CheckpointStore,
    agents: Mapping[str, AgentBackend],
    *,
    models: LanguageModelProvider | None,
    clock: Clock,
    ids: IdFactory,
    settings: ChatSettings | None = None,
    runner_settings: RunnerSettings | None = None,
    default_agent: str = "copilot",
    observers: Sequence[EventSink] = (),
    turn_log: TurnLog | None = None,
    leases: SessionLeases | None = None,
    controls: TurnControlRelay | None = None,
) -> ChatService:
    """A chat service over ``store`` and ``agents``, every part built from ``settings``:
    the turn log (in memory, keeping a finished turn ``finished_turn_retention`` seconds,
    unless ``turn_log`` is given), the session leases and the turn control relay (in
    memory unless given: a shared turn log goes with shared ones, ``adapters.redis``),
    the history windows (``history_*``) and the runner (with the ``observers``; it takes
    ``settings`` whole, a ``ChatSettings`` being a ``RunnerSettings``, unless
    ``runner_settings`` are given). ``default_agent`` answers requests that name none."""
    settings = settings or ChatSettings()
    runner = TurnRunner(
        store,
        turn_log or InMemoryTurnLog(retention=settings.finished_turn_retention),
        history_windows(store, settings),
        leases=leases or InMemorySessionLeases(),
        controls=controls or InMemoryTurnControlRelay(),
        models=models,
        clock=clock,
        ids=ids,
        settings=runner_settings or settings,
        observers=observers,
    )
    return ChatService(
        store, agents, runner, clock=clock, settings=settings, default_agent=default_agent
    )


def history_windows(store: CheckpointStore, settings: ChatSettings) -> HistoryWindows:
    """The history windows of the runner, from the chat's ``history_*`` settings."""
    return HistoryWindows(
        store,
        chars_per_token=settings.history_chars_per_token,
        page=settings.history_page,
        keep=settings.history_cache_sessions,
    )
