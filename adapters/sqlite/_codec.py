"""Rows to core types and back: sessions, messages and timestamps.

Timestamps are stored as fixed-width UTC ISO 8601 text
(``2026-01-01T00:00:00.000000+00:00``) so that SQL orders them as time orders them.
A naive datetime is taken as UTC. Messages are stored as the compact JSON of
:meth:`Message.to_dict`, the OpenAI shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter

from copilot_core import CopilotMode, Message, Session

__all__ = [
    "SESSION_JSON",
    "decode_sessions",
    "decode_state",
    "decode_time",
    "encode_json",
    "encode_message",
    "encode_state",
    "encode_time",
]


def _json_object_or_empty(column: str) -> str:
    return (
        f"json(CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}) = 'object' "
        f"THEN {column} ELSE '{{}}' END ELSE '{{}}' END)"
    )


_EPOCH = "1970-01-01T00:00:00+00:00"
_MODES = ", ".join(f"'{mode.value}'" for mode in CopilotMode)

# A chat_sessions row as the JSON of a Session, built by SQLite, so that a page of
# sessions is decoded in one pass of pydantic-core. The NULLs, unknown modes and
# malformed JSON that databases of older versions may hold get the defaults.
SESSION_JSON = (
    "json_object("
    "'id', id, 'thread_id', thread_id, 'user_id', user_id, 'project_id', project_id, "
    "'title', COALESCE(title, ''), "
    f"'copilot_mode', CASE WHEN copilot_mode IN ({_MODES}) THEN copilot_mode "
    f"ELSE '{CopilotMode.TEACHING_ASSISTANT.value}' END, "
    "'pinned', json(CASE WHEN pinned THEN 'true' ELSE 'false' END), "
    "'message_count', COALESCE(message_count, 0), "
    "'question_count', COALESCE(question_count, 0), "
    "'llm_calls_count', COALESCE(llm_calls_count, 0), "
    "'input_tokens', COALESCE(input_tokens, 0), "
    "'output_tokens', COALESCE(output_tokens, 0), "
    "'total_tokens', COALESCE(total_tokens, 0), "
    "'last_message_at', last_message_at, "
    f"'created_at', COALESCE(created_at, '{_EPOCH}'), "
    f"'updated_at', COALESCE(updated_at, created_at, '{_EPOCH}'), "
    f"'metadata', {_json_object_or_empty('metadata')}, "
    f"'stats', {_json_object_or_empty('stats')})"
)

_SESSIONS: TypeAdapter[list[Session]] = TypeAdapter(list[Session])


def encode_time(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def decode_time(text: str) -> datetime:
    """A stored timestamp (naive ones, from older writers, are UTC)."""
    return _as_utc(datetime.fromisoformat(text))


def _as_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def encode_json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_message(message: Message) -> str:
    data = message.to_dict()
    text = encode_json(data)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (json.loads makes one of a "\ud83d" escape) cannot be
        # stored as UTF-8 text; the escaped JSON keeps it exactly.
        text = json.dumps(data, separators=(",", ":"))
    return text


def decode_sessions(texts: Sequence[str]) -> list[Session]:
    """Sessions from their :data:`SESSION_JSON` texts, in order."""
    if not texts:
        return []
    sessions = _SESSIONS.validate_json("[" + ",".join(texts) + "]")
    return [_with_utc_times(session) for session in sessions]


def _with_utc_times(session: Session) -> Session:
    last = session.last_message_at
    if (
        session.created_at.tzinfo is not None
        and session.updated_at.tzinfo is not None
        and (last is None or last.tzinfo is not None)
    ):
        return session
    # Written by an older version, without a timezone: UTC.
    return session.model_copy(
        update={
            "created_at": _as_utc(session.created_at),
            "updated_at": _as_utc(session.updated_at),
            "last_message_at": None if last is None else _as_utc(last),
        }
    )


def encode_state(state: Mapping[str, Any]) -> str:
    """A restore point's state as JSON text SQLite can hold (a lone surrogate escaped)."""
    data = dict(state)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, separators=(",", ":"))
    return text


def decode_state(text: str) -> dict[str, Any]:
    """A restore point's state; ``ValueError`` when the text is not a JSON object."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("the stored state is not a JSON object")
    return value
