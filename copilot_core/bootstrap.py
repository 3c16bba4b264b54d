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

from copilot_core._history import HistoryWindows
from copilot_core._leases import InMemorySessionLeases
from copilot_core._relay import InMemoryTurnControlRelay
from copilot_core._runner import RunnerSettings, TurnRunner
from copilot_core._service import ChatService, ChatSettings
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
    observers: Sequence[EventSink] = (),
    turn_log: TurnLog | None = None,
    leases: SessionLeases | None = None,
    controls: TurnControlRelay | None = None,
) -> ChatService:
    """A chat service over ``store`` and ``agents``, every part built from ``settings``
    and ``runner_settings``: the turn log (in memory, keeping a finished turn
    ``finished_turn_retention`` seconds, unless ``turn_log`` is given), the session leases
    and the turn control relay (in memory unless given: a shared turn log goes with
    shared ones, ``adapters.redis``), the history
    windows (``history_*``) and the runner (with the ``observers``)."""
    settings = settings or ChatSettings()
    runner = TurnRunner(
        store,
        turn_log or InMemoryTurnLog(retention=settings.finished_turn_retention),
        HistoryWindows(
            store,
            chars_per_token=settings.history_chars_per_token,
            page=settings.history_page,
            keep=settings.history_cache_sessions,
        ),
        leases=leases or InMemorySessionLeases(),
        controls=controls or InMemoryTurnControlRelay(),
        models=models,
        clock=clock,
        ids=ids,
        settings=runner_settings or RunnerSettings(default_mode=settings.default_mode),
        observers=observers,
    )
    return ChatService(store, agents, runner, clock=clock, settings=settings)
