"""Rows to core types and back: sessions, messages and timestamps.

Timestamps are stored as fixed-width UTC ISO 8601 text
(``2026-01-01T00:00:00.000000+00:00``) so that SQL orders them as time orders them.
A naive datetime is taken as UTC. Messages are stored as the compact JSON of
:meth:`Message.to_dict`, the OpenAI shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from copilot_core.messages import Message
from copilot_core.session import CopilotMode, Session

__all__ = [
    "SESSION_COLUMNS",
    "decode_messages",
    "decode_session",
    "encode_json",
    "encode_message",
    "encode_time",
]

SESSION_COLUMNS = (
    "id, thread_id, user_id, project_id, title, copilot_mode, pinned, message_count, "
    "llm_calls_count, input_tokens, output_tokens, total_tokens, last_message_at, "
    "created_at, updated_at, metadata, stats"
)

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def encode_time(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


_EPOCH = "1970-01-01T00:00:00+00:00"
_MODES = frozenset(mode.value for mode in CopilotMode)


def _as_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _decode_json_object(value: str | None) -> dict[str, Any]:
    if not value:
        return {}
    try:
        decoded = json.loads(value)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def encode_json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_message(message: Message) -> str:
    return encode_json(message.to_dict())


def decode_session(row: Sequence[Any]) -> Session:
    """A ``chat_sessions`` row selected with :data:`SESSION_COLUMNS`; tolerant of the
    NULLs and naive timestamps that databases of older versions hold."""
    (
        row_id,
        thread_id,
        user_id,
        project_id,
        title,
        copilot_mode,
        pinned,
        message_count,
        llm_calls_count,
        input_tokens,
        output_tokens,
        total_tokens,
        last_message_at,
        created_at,
        updated_at,
        metadata,
        stats,
    ) = row
    if copilot_mode not in _MODES:
        copilot_mode = CopilotMode.TEACHING_ASSISTANT.value
    created_at = created_at or _EPOCH
    # pydantic-core parses the ISO timestamps (faster than fromisoformat + kwargs).
    session = Session.model_validate(
        {
            "id": row_id,
            "thread_id": thread_id,
            "user_id": user_id,
            "project_id": project_id,
            "title": title or "",
            "copilot_mode": copilot_mode,
            "pinned": bool(pinned),
            "message_count": message_count or 0,
            "llm_calls_count": llm_calls_count or 0,
            "input_tokens": input_tokens or 0,
            "output_tokens": output_tokens or 0,
            "total_tokens": total_tokens or 0,
            "last_message_at": last_message_at,
            "created_at": created_at,
            "updated_at": updated_at or created_at,
            "metadata": _decode_json_object(metadata),
            "stats": _decode_json_object(stats),
        }
    )
    if (
        session.created_at.tzinfo is None
        or session.updated_at.tzinfo is None
        or (session.last_message_at is not None and session.last_message_at.tzinfo is None)
    ):  # written by an older version, without a timezone: UTC
        session = session.model_copy(
            update={
                "created_at": _as_utc(session.created_at),
                "updated_at": _as_utc(session.updated_at),
                "last_message_at": session.last_message_at and _as_utc(session.last_message_at),
            }
        )
    return session


def decode_messages(texts: Sequence[str]) -> list[Message]:
    """Decode stored message JSON texts, in order, in one pass of pydantic-core.

    Raises ``ValueError`` naming the first text that is not a message.
    """
    if not texts:
        return []
    try:
        return _MESSAGES.validate_json("[" + ",".join(texts) + "]")
    except ValidationError:
        pass
    messages: list[Message] = []
    for index, text in enumerate(texts):
        try:
            messages.append(Message.from_dict(json.loads(text)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"stored message #{index + 1} is not a message") from exc
    return messages
