"""A turn's question in a session that exists: asked again (Retry, edit: the session is
cut back to before the question it replaces) and asked in a mode the user switched the
chat to, each said in the question's ``metadata.mode_change``, so the history shows
where the mode changed."""

from __future__ import annotations

from copilot_core._history import HistoryWindows
from copilot_core._messages import Message
from copilot_core._session import CopilotMode, Session
from copilot_core._turns import TurnRequest
from copilot_core.errors import SessionNotFoundError
from copilot_core.ports import CheckpointStore

__all__ = ["question_in_session"]


async def question_in_session(
    store: CheckpointStore,
    windows: HistoryWindows,
    request: TurnRequest,
    session: Session,
    mode: CopilotMode,
    question: Message,
) -> tuple[Session, Message]:
    """Cut the session back for ``request.replace_from`` and switch its mode to ``mode``
    when the request asks to; the session as it is then, and the question to save."""
    project_id, session_id = request.project_id, session.thread_id
    carried: object = None  # the mode change of a question asked again
    if request.replace_from is not None:
        carried = await _mode_change_of(store, project_id, session_id, request.replace_from)
        await store.truncate(project_id, session_id, request.replace_from)
        windows.forget(project_id, session_id)
        found = await store.get_session(project_id, session_id)
        if found is None:
            raise SessionNotFoundError(session_id)
        session = found
    if request.copilot_mode is not None and mode is not session.copilot_mode:
        # The user switched the chat's mode: this turn and the next run in it, and the
        # question says where it changed.
        changed = await store.set_mode(project_id, session_id, mode)
        if changed is None:
            raise SessionNotFoundError(session_id)
        change = {"from": session.copilot_mode.value, "to": mode.value}
        return changed, _with_mode_change(question, change)
    if isinstance(carried, dict) and carried.get("to") == mode.value:
        # Asked again (Retry, edit) in the mode it switched to: still where it did.
        return session, _with_mode_change(question, carried)
    return session, question


async def _mode_change_of(
    store: CheckpointStore, project_id: str, session_id: str, message_id: str
) -> object:
    """The ``mode_change`` of the question ``message_id`` (the session's last: the one a
    turn asks again), if it is among the newest messages."""
    page = await store.history(project_id, session_id, limit=200)
    found = next((m for m in page.messages if m.id == message_id), None)
    return found.metadata.get("mode_change") if found is not None else None


def _with_mode_change(question: Message, change: object) -> Message:
    return question.model_copy(update={"metadata": {**question.metadata, "mode_change": change}})
