"""The service a ``gns3-copilot eval`` task's turn runs in, and how it is driven.

:func:`eval_container` is the service's own container
(:func:`~entrypoints.container.build_container`) with four overrides: the evaluation's
model is every user's (:class:`FixedLLMSettings`), no MCP server's tools are added (the
GNS3 tools are what is scored), no troubleshooting drill's tool either, and no turn
observer logs or counts. A lab may override
the tool source and the topology too (the simulated lab does). :func:`run_turn` then
drives one task's turn as a client of the chat service does: it starts the turn in a
session of the task, follows its events and answers each ``approval_required`` with a
yes through :meth:`~copilot_core.ChatService.decide`, the exchange the web page's
approve button uses; the figures come from the events and the turn's result.
"""

from __future__ import annotations

import json
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from dependency_injector import providers

from adapters.llm import LLMSettings
from copilot_core import ChatService, CopilotMode, Session, SessionKey, TurnRequest
from copilot_core.events import (
    ApprovalRequiredEvent,
    ContentEvent,
    ErrorEvent,
    ToolCallEvent,
    ToolEndEvent,
)
from copilot_core.ports import (
    CheckpointStore,
    Clock,
    IdFactory,
    LanguageModelProvider,
    ModelOverrides,
)
from entrypoints.container import Container, build_container, resolve
from entrypoints.settings import Settings

__all__ = [
    "EVAL_USER",
    "EvalService",
    "FixedLLMSettings",
    "Transcript",
    "TurnFigures",
    "eval_container",
    "run_turn",
]

#: The user every evaluation turn is asked by.
EVAL_USER = "eval"


@dataclass
class Transcript:
    """What one task's turn did: the answer, the calls run (and what each returned),
    errors. ``repeats``: calls the guards refused as repeats of one that succeeded, and
    calls that failed again exactly as an identical earlier call of the turn had failed
    (the guards let those run, but the model made the same failing call twice);
    ``refused``: the first kind only (they are not in ``calls``)."""

    answer: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    repeats: int = 0
    refused: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TurnFigures:
    """A turn's transcript, its tokens (as the model's server counted them) and the
    seconds to its first token or call (``None``: neither came)."""

    transcript: Transcript
    tokens: int
    first_s: float | None


class FixedLLMSettings:
    """The evaluation's LLM settings source: the one model its flags name, for anyone."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings

    async def get_secret(self, user_id: str) -> LLMSettings | None:
        return self.settings


def eval_container(settings: Settings, llm: LLMSettings) -> Container:
    """The service's container for an evaluation (see the module docstring). The
    caller may override more providers before it asks for any, and shuts the
    resources down afterwards."""
    container = build_container(settings)
    gateways = container.gateways
    gateways.llm_settings.override(providers.Object(FixedLLMSettings(llm)))
    gateways.mcp_sources.override(providers.Object(None))
    # No turn observers: the evaluation's table is its report (no metrics endpoint to
    # count for, and no turn logs between its lines).
    container.core.observers.override(providers.Object([]))
    # No troubleshooting drills: the model under evaluation is not offered practice_drill
    # (a fault of its own choosing in the lab it is scored on).
    container.core.drills.override(providers.Object(None))
    return container


@dataclass(frozen=True)
class EvalService:
    """The objects of the service's container a task's turn goes through."""

    chat: ChatService
    store: CheckpointStore
    models: LanguageModelProvider
    clock: Clock
    ids: IdFactory

    @classmethod
    async def of(cls, container: Container) -> EvalService:
        chat: ChatService = await resolve(container.core.chat())
        store: CheckpointStore = await resolve(container.gateways.store())
        models: LanguageModelProvider = await resolve(container.gateways.models())
        gateways = container.gateways
        return cls(chat, store, models, gateways.clock(), gateways.ids())

    async def new_session(self, project_id: str, task: str, mode: CopilotMode) -> SessionKey:
        """A session of the task, named for it (so no title is asked of the model: the
        task's figures are its turn's alone)."""
        now = self.clock.now()
        session = Session(
            thread_id=self.ids.new_id(),
            user_id=EVAL_USER,
            project_id=project_id,
            title=f"eval: {task}",
            copilot_mode=mode,
            created_at=now,
            updated_at=now,
            metadata={"agent_id": "copilot"},
        )
        await self.store.create_session(session)
        return session.key


async def run_turn(
    service: EvalService,
    project_id: str,
    task: str,
    mode: CopilotMode,
    message: str,
    credentials: str,
    session: SessionKey | None = None,
) -> TurnFigures:
    """One task's turn through the chat service, every approval answered yes; in a new
    session of the task, or in ``session`` (a turn after another one, in ``mode``)."""
    key = session or await service.new_session(project_id, task, mode)
    request = TurnRequest(
        project_id,
        EVAL_USER,
        message,
        session_id=key.session_id,
        copilot_mode=mode,
        credentials=credentials,
    )
    transcript = Transcript()
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    failed: set[str] = set()  # the failed calls so far, as tool + canonical arguments
    first: float | None = None
    # The model's client made once before the clock starts (the first turn would pay
    # for the LLM libraries' import): the first token's time is the model's own.
    await service.models.for_user(EVAL_USER, ModelOverrides())
    started = time.monotonic()
    turn = await service.chat.start_turn(request)
    async with aclosing(turn.subscribe()) as events:  # type: ignore[type-var]
        async for stamped in events:
            event = stamped.event
            if isinstance(event, (ContentEvent, ToolCallEvent)) and first is None:
                first = time.monotonic() - started
            if isinstance(event, ContentEvent):
                transcript.answer += event.content
            elif isinstance(event, ToolCallEvent) and event.complete:
                calls[event.id] = (event.name, _arguments(event.arguments))
            elif isinstance(event, ToolEndEvent):
                _ended(transcript, calls, failed, event)
            elif isinstance(event, ErrorEvent):
                transcript.errors.append(event.error)
            elif isinstance(event, ApprovalRequiredEvent):
                await service.chat.decide(
                    key, event.approval_id, approve=True, comment="eval", digest=event.digest
                )
    result = await turn.wait()
    return TurnFigures(transcript, result.stats.total_tokens, first)


def _arguments(text: str | None) -> dict[str, Any]:
    try:
        arguments = json.loads(text or "{}")
    except ValueError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _ended(
    transcript: Transcript,
    calls: dict[str, tuple[str, dict[str, Any]]],
    failed: set[str],
    event: ToolEndEvent,
) -> None:
    """A call's end in the transcript: a refused repeat, or a call run (and a repeat
    when it failed exactly as an identical earlier call of the turn had)."""
    if "already succeeded in this turn" in str(event.output):
        transcript.repeats += 1
        transcript.refused += 1
    elif event.tool_call_id in calls:
        name, arguments = calls[event.tool_call_id]
        transcript.calls.append((name, arguments))
        transcript.outputs.append(event.output)
        if event.status != "success":
            key = name + json.dumps(arguments, sort_keys=True)
            transcript.repeats += key in failed
            failed.add(key)
