"""Core values to PostgreSQL parameters and back: messages, sessions, text.

Messages are stored as the compact JSON text of :meth:`Message.to_dict` (a ``text``
column, not ``jsonb``: ``jsonb`` refuses ``\\u0000`` and reorders keys, and the log
must give back exactly what it was given). PostgreSQL text cannot hold NUL or a lone
surrogate: JSON escapes NUL, and a message holding a lone surrogate (``json.loads``
makes one of a ``"\\ud83d"`` escape) is stored as ASCII-escaped JSON, which decodes to
the same message. Plain text columns (titles, ids) get those two replaced by U+FFFD.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from copilot_core import CopilotMode, Message, Session

__all__ = [
    "SESSION_COLUMNS",
    "decode_session",
    "encode_json",
    "encode_message",
    "safe_text",
    "utc",
]

SESSION_COLUMNS = (
    "id, thread_id, user_id, project_id, title, copilot_mode, pinned, message_count, "
    "llm_calls_count, input_tokens, output_tokens, total_tokens, last_message_at, "
    "created_at, updated_at, metadata, stats, question_count"
)
"""The ``chat_sessions`` columns :func:`decode_session` reads, in its order."""

_MODES = {mode.value: mode for mode in CopilotMode}


def safe_text(value: str) -> str:
    """``value`` as PostgreSQL text can hold it (NUL and lone surrogates become U+FFFD)."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def utc(value: datetime) -> datetime:
    """An aware datetime (a naive one is taken as UTC)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def encode_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, separators=(",", ":"))  # escapes the lone surrogate
    return text


def encode_message(message: Message) -> str:
    return encode_json(message.to_dict())


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def decode_session(row: Sequence[Any]) -> Session:
    """A session from a row of :data:`SESSION_COLUMNS`."""
    (
        row_id,
        thread_id,
        user_id,
        project_id,
        title,
        mode,
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
        question_count,
    ) = row
    return Session(
        id=row_id,
        thread_id=thread_id,
        user_id=user_id,
        project_id=project_id,
        title=title,
        copilot_mode=_MODES.get(mode, CopilotMode.TEACHING_ASSISTANT),
        pinned=pinned,
        message_count=message_count,
        llm_calls_count=llm_calls_count,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total_tokens,
        last_message_at=None if last_message_at is None else last_message_at.astimezone(UTC),
        created_at=created_at.astimezone(UTC),
        updated_at=updated_at.astimezone(UTC),
        metadata=_json_object(metadata),
        stats=_json_object(stats),
        question_count=question_count,
    )
