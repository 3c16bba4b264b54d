"""How the Redis turn ports write what they share (events, decisions) and read it back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from copilot_core.events import (
    ContentEvent,
    TurnEvent,
    WireEvent,
    event_from_record,
    event_to_record,
)
from copilot_core.ports import ApprovalDecision, TurnInfo

__all__ = [
    "REPLICA_LOST",
    "REPLICA_LOST_MESSAGE",
    "Pending",
    "batch_args",
    "decode",
    "decode_decision",
    "encode",
    "encode_decision",
    "turn_fields",
    "waiting_events",
]

REPLICA_LOST = "replica_lost"
"""The ``code`` of the ``error`` that ends a turn whose replica stopped responding."""

REPLICA_LOST_MESSAGE = (
    "The copilot replica running this turn stopped responding, so the turn was ended. "
    "What it had saved is kept; send your message again."
)

#: An event not yet in Redis: its sequence number, the event and the changes it brings
#: to the turn's waiting approvals, as flat pairs (the append script's arguments).
Pending = tuple[int, WireEvent, tuple[str, ...]]

_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))
_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii


def encode(event: WireEvent) -> str:
    """The event's record as JSON. A streamed token (most of a turn's events) is
    written out directly, the same text that encoding its record gives."""
    if type(event) is ContentEvent:
        tail = ',"from_answer":true}' if event.from_answer else ',"from_answer":false}'
        return '{"type":"content","content":' + _quote(event.content) + tail
    return _ENCODER.encode(event_to_record(event))


def decode(values: dict[Any, Any]) -> list[WireEvent]:
    """The events of one stream entry."""
    raw = values.get(b"e", values.get("e"))
    return [event_from_record(record) for record in json.loads(_text(raw))]


def batch_args(batch: list[Pending]) -> list[str]:
    """Pending events as the append (and close) script takes them: the entry's id (its
    last event's sequence number), the entry (a JSON array), the approval changes."""
    if not batch:
        return []
    entry = "[" + ",".join([encode(event) for _, event, _ in batch]) + "]"
    return [f"{batch[-1][0]}-0", entry, *(part for _, _, changes in batch for part in changes)]


def turn_fields(turn_id: str, fields: dict[Any, Any]) -> tuple[TurnInfo, bool]:
    """A turn's hash: who and where it runs, and whether it closed."""
    data = {_text(k): _text(v) for k, v in fields.items()}
    return TurnInfo(turn_id, data["project"], data["session"], data["user"]), (
        data.get("closed") == "1"
    )


def waiting_events(session_id: str, waiting: dict[Any, Any]) -> tuple[TurnEvent, ...]:
    """A remote turn's ``approval_required`` events not yet resolved (its ``waiting``
    hash), oldest first."""
    found: list[TurnEvent] = []
    for raw in waiting.values():
        seq, _, record = _text(raw).partition("|")
        found.append(TurnEvent(int(seq), session_id, event_from_record(json.loads(record))))
    return tuple(sorted(found, key=lambda stamped: stamped.seq))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def encode_decision(decision: ApprovalDecision) -> str:
    """A decision as it travels between replicas (JSON)."""
    return json.dumps(
        {
            "approve": decision.approve,
            "user_id": decision.user_id,
            "comment": decision.comment,
            "reason": decision.reason,
            "digest": decision.digest,
        }
    )


def decode_decision(raw: str | bytes) -> ApprovalDecision:
    """A decision from another replica (what :func:`encode_decision` wrote), still bound
    to the digest it was sent with: the gate runs the call only with those arguments."""
    record: dict[str, Any] = json.loads(raw)
    user_id = record.get("user_id")
    digest = record.get("digest")
    return ApprovalDecision(
        approve=record["approve"] is True,
        user_id=str(user_id) if user_id is not None else None,
        comment=str(record.get("comment") or ""),
        reason=str(record.get("reason") or "decided"),
        digest=str(digest) if digest is not None else None,
    )
