"""Turn events as Server-Sent Events (DESIGN §4).

Every numbered event is sent as ``id: <turn_id>:<seq>`` plus one ``data:`` line
of JSON; heartbeats carry no id (they are not replayed). A client that lost its
connection sends the last id back as ``Last-Event-ID`` and gets what follows.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Literal

import structlog
from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.web._gaia import GaiaTranslator
from adapters.web._wire import copilot_event
from copilot_core import TurnHandle
from copilot_core.errors import InvalidRequestError
from copilot_core.events import TurnEvent

__all__ = ["Protocol", "event_id", "parse_last_event_id", "sse_response", "turn_messages"]

#: ``copilot``: spec 000's events extended with spec 002's activity types (the default);
#: ``gaia``: spec 002's own event vocabulary, for clients built for it.
Protocol = Literal["copilot", "gaia"]

log = structlog.get_logger("adapters.web")

SSE_HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}


def event_id(turn: TurnHandle, event: TurnEvent) -> str | None:
    return f"{turn.turn_id}:{event.seq}" if event.seq > 0 else None


def encode(turn: TurnHandle, event: TurnEvent) -> ServerSentEventMessage:
    data = json.dumps(copilot_event(event), ensure_ascii=False, separators=(",", ":"))
    return ServerSentEventMessage(data=data, id=event_id(turn, event))


def encode_gaia(
    turn: TurnHandle, event: TurnEvent, translator: GaiaTranslator
) -> list[ServerSentEventMessage]:
    """Spec 002's events for one turn event. Only the last carries the id, so a client
    that resumes never misses the rest of a group (it may see its start twice)."""
    items = translator.translate(event)
    return [
        ServerSentEventMessage(
            data=json.dumps(item, ensure_ascii=False, separators=(",", ":")),
            id=event_id(turn, event) if n == len(items) - 1 else None,
        )
        for n, item in enumerate(items)
    ]


_DIGITS = re.compile(r"[0-9]{1,16}")


def parse_last_event_id(value: str | None, turn: TurnHandle) -> int:
    """The sequence number to resume after: 0 for no id or another turn's id."""
    if value is None or not value.strip():
        return 0
    turn_id, sep, seq = value.strip().rpartition(":")
    if not sep or not turn_id or not _DIGITS.fullmatch(seq):
        raise InvalidRequestError(
            "Last-Event-ID must look like '<turn_id>:<seq>', as sent in the stream's 'id:' lines."
        )
    if turn_id != turn.turn_id:
        return 0  # an older turn: everything of this one is new to the client
    return min(int(seq), turn.last_seq) if turn.finished else int(seq)


async def turn_messages(
    turn: TurnHandle,
    *,
    after: int = 0,
    heartbeat: float | None = None,
    on_disconnect: Callable[[], Awaitable[object]] | None = None,
    protocol: Protocol = "copilot",
    again: Sequence[TurnEvent] = (),
) -> AsyncIterator[ServerSentEventMessage]:
    """The turn's events after ``after``, live until the turn ends; ``again`` first (the
    approvals still pending that the client saw before it lost its connection).

    If the client goes away first (the response task is cancelled) the turn keeps
    running; ``on_disconnect`` is awaited then (to abort it, when so configured).
    """
    ended = False
    translator = GaiaTranslator() if protocol == "gaia" else None
    try:
        for event in again:
            if translator is None:
                yield encode(turn, event)
            else:
                for message in encode_gaia(turn, event, translator):
                    yield message
        async with aclosing(turn.subscribe(after=after, heartbeat=heartbeat)) as events:  # type: ignore[type-var]
            async for event in events:
                if translator is None:
                    yield encode(turn, event)
                else:
                    for message in encode_gaia(turn, event, translator):
                        yield message
        ended = True
    finally:
        if not ended:
            log.info(
                "client_disconnected",
                turn_id=turn.turn_id,
                session_id=turn.session_id,
                aborting=on_disconnect is not None,
            )
            if on_disconnect is not None:
                await on_disconnect()


def sse_response(
    turn: TurnHandle,
    *,
    after: int = 0,
    heartbeat: float | None = None,
    on_disconnect: Callable[[], Awaitable[object]] | None = None,
    protocol: Protocol = "copilot",
    again: Sequence[TurnEvent] = (),
) -> ServerSentEvent:
    headers = dict(SSE_HEADERS)
    headers["X-Session-Id"] = turn.session_id
    headers["X-Turn-Id"] = turn.turn_id
    return ServerSentEvent(
        turn_messages(
            turn,
            after=after,
            heartbeat=heartbeat,
            on_disconnect=on_disconnect,
            protocol=protocol,
            again=again,
        ),
        headers=headers,
    )
