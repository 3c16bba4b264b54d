"""What a turn that did not end well leaves in the history: ``metadata.incomplete`` on its
last saved message (why, and the error's code and message), so that the history shows it
after a reload and the user can try again."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from copilot_core._live import LiveTurn
from copilot_core._messages import Message
from copilot_core._stats import Usage
from copilot_core.ports import CheckpointStore

__all__ = ["mark_incomplete"]


def incomplete_mark(turn: LiveTurn) -> dict[str, Any] | None:
    """The mark of a turn that failed or was aborted; ``None`` for one that ended well."""
    if turn.error is not None:
        return {"reason": "error", "code": turn.error_code or "error", "message": turn.error}
    if turn.abort.is_aborted():
        return {"reason": "aborted", "message": turn.abort.reason or "aborted"}
    return None


async def mark_incomplete(store: CheckpointStore, turn: LiveTurn, now: datetime) -> None:
    """Mark the last saved message of a turn that failed or was aborted (nothing else).

    The last message is the question when nothing was answered, the cut-off answer, or the
    last tool result. A draft that no step replaced is saved with the whole streamed text,
    as the answer, with the mark. The marked copy takes the message's place carrying the
    usage it carried: the session's counters do not change.
    """
    mark = incomplete_mark(turn)
    if mark is None:
        return
    draft = turn.draft
    if draft.id is not None:
        last = Message.assistant(draft.id, "".join(draft.parts), now)
    elif turn.added:
        last = turn.added[-1]
    else:
        return
    marked = last.model_copy(update={"metadata": {**last.metadata, "incomplete": mark}})
    info = turn.info
    await store.append_messages(
        info.project_id,
        info.session_id,
        [marked],
        usage=Usage.of(last.metadata) or None,
        replaces=last.id,
    )
    if draft.id is not None:
        turn.added.append(marked)
        draft.reset(time.monotonic())
    else:
        turn.added[-1] = marked
