"""History windows: the newest part of a session's history that a turn needs.

A turn gives its agent the newest part of the history that could still fit in the
model's context, not all of it: messages are read newest first, in pages, until they
hold ``chars_per_token`` x the model's ``context_limit`` characters (measured by
:func:`~copilot_core._tokens.message_chars`), or ``context_limit`` messages. Anything
older would be trimmed from the prompt anyway (no tokenizer packs 16 characters of
chat into one token on average).

After a turn the window (what was read plus what the turn added) is kept in memory
for the session's next turn. A kept window is used only while the stored session
still has the row id and ``message_count`` it had when the window was kept, so a
change made by anyone else (another process, another replica) is seen.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from copilot_core._messages import Message
from copilot_core._session import Session
from copilot_core._tokens import message_chars
from copilot_core.ports import CheckpointStore

__all__ = ["HistoryWindows"]


@dataclass(frozen=True, slots=True)
class _Window:
    row_id: int | None
    message_count: int
    messages: tuple[Message, ...]


class HistoryWindows:
    """Loads and keeps sessions' history windows (least recently used are forgotten).

    ``chars_per_token=None`` reads the whole history every turn; ``keep=0`` keeps no
    window between turns.
    """

    def __init__(
        self,
        store: CheckpointStore,
        *,
        chars_per_token: int | None = 16,
        page: int = 256,
        keep: int = 32,
    ) -> None:
        self._store = store
        self.chars_per_token = chars_per_token
        self.page = page
        self.keep_sessions = keep
        self._kept: OrderedDict[tuple[str, str], _Window] = OrderedDict()

    async def load(self, session: Session, context_limit: int | None) -> list[Message]:
        """The session's history window for a model with ``context_limit`` tokens
        (``None``: a backend that does not use the user's model: all of it)."""
        project_id, session_id = session.project_id, session.thread_id
        if context_limit is None or self.chars_per_token is None:
            return (await self._store.history(project_id, session_id)).messages
        key = (project_id, session_id)
        kept = self._kept.get(key)
        if (
            kept is not None
            and kept.row_id == session.id
            and kept.message_count == session.message_count
        ):
            self._kept.move_to_end(key)
            return list(kept.messages)
        wanted_chars = context_limit * self.chars_per_token
        pages: list[list[Message]] = []
        chars = count = 0
        before: int | None = None
        while True:
            page = await self._store.history(project_id, session_id, limit=self.page, before=before)
            pages.append(page.messages)
            count += len(page.messages)
            chars += sum(message_chars(message) for message in page.messages)
            if page.next_cursor is None or chars >= wanted_chars or count >= context_limit:
                break
            before = page.next_cursor
        # A step cut in two at the oldest end leaves tool results without their call;
        # the agent drops those (they would have been trimmed with the rest).
        return [message for page in reversed(pages) for message in page]

    def keep(
        self,
        session: Session,
        messages: Sequence[Message],
        message_count: int,
        context_limit: int | None,
    ) -> None:
        """Remember ``messages`` (the window plus what the turn added) as the session's
        window while its stored ``message_count`` is ``message_count``."""
        if context_limit is None or self.chars_per_token is None or self.keep_sessions < 1:
            return
        wanted_chars = context_limit * self.chars_per_token
        chars = sum(message_chars(message) for message in messages)
        start = 0
        # Forget the oldest messages that the window no longer needs.
        while len(messages) - start > context_limit or (
            start < len(messages) and chars - message_chars(messages[start]) >= wanted_chars
        ):
            chars -= message_chars(messages[start])
            start += 1
        key = (session.project_id, session.thread_id)
        self._kept[key] = _Window(session.id, message_count, tuple(messages[start:]))
        self._kept.move_to_end(key)
        while len(self._kept) > self.keep_sessions:
            self._kept.popitem(last=False)

    def forget(self, project_id: str, session_id: str | None = None) -> None:
        """Drop the kept window of one session, or of every session of a project."""
        if session_id is not None:
            self._kept.pop((project_id, session_id), None)
            return
        for key in [key for key in self._kept if key[0] == project_id]:
            del self._kept[key]
