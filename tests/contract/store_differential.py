"""Random operation sequences give the same answers from a real store and the in-memory one.

A Hypothesis state machine drives both stores with the same calls (creations with
clashing ids and tied timestamps, appends, paging, counters, renames, pins,
deletions) and compares every answer, and every exception type. Each real store's
tests subclass :class:`StoresAgree` with :meth:`StoresAgree.open_store` and
:meth:`StoresAgree.close_store` (``tests/adapters/sqlite/test_differential.py``,
``tests/adapters/postgres/test_differential.py``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from copilot_core import CopilotMode, Message, Session
from copilot_core.errors import CopilotError
from copilot_core.ports import CheckpointStore, HistoryPage, Usage
from copilot_core.testing import InMemoryCheckpointStore

__all__ = ["DIFFERENTIAL_SETTINGS", "StoresAgree"]

T = TypeVar("T")
T0 = datetime(2026, 3, 1, tzinfo=UTC)
PROJECTS = [str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]
# Few ids, so that operations mostly meet sessions that exist.
threads = st.sampled_from(["a", "b", "c"])
projects = st.sampled_from(PROJECTS)
users = st.sampled_from(["alice", "bob"])
moments = st.integers(0, 2).map(lambda s: T0 + timedelta(seconds=s))
modes = st.sampled_from(list(CopilotMode))
maybe = st.none() | st.integers(0, 9)


def anonymous(value: Any) -> Any:
    """Row ids differ between stores by design; everything else must not."""
    if isinstance(value, Session):
        return value.model_copy(update={"id": None})
    if isinstance(value, list):
        return [anonymous(item) for item in value]
    if isinstance(value, HistoryPage):
        return (value.messages, value.next_cursor)
    return value


class StoresAgree(RuleBasedStateMachine):
    """The machine; subclasses say which real store it compares with the in-memory one."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.memory = InMemoryCheckpointStore()
        self.real = self.loop.run_until_complete(self.open_store())
        self.counter = 0
        #: The ids appended to each session, so that a step can replace a real draft.
        self.appended: dict[tuple[str, str], list[str]] = {}

    async def open_store(self) -> CheckpointStore:
        """A new, empty, open real store (called in the machine's event loop)."""
        raise NotImplementedError

    async def close_store(self) -> None:
        """Close the real store and remove what it left."""
        raise NotImplementedError

    def teardown(self) -> None:
        try:
            self.loop.run_until_complete(self.close_store())
        finally:
            self.loop.close()

    def both(self, call: Callable[[CheckpointStore], Awaitable[T]]) -> T | None:
        outcomes = []
        for store in (self.memory, self.real):
            try:
                outcomes.append(("ok", anonymous(self.loop.run_until_complete(call(store)))))
            except (CopilotError, LookupError, ValueError) as exc:
                # The exception's type is part of the contract. Others (a TypeError of
                # a call that does not fit the port) are the machine's bugs: raised.
                outcomes.append(("raised", type(exc)))
        assert outcomes[0] == outcomes[1]
        kind, value = outcomes[1]
        return value if kind == "ok" else None

    @rule(
        project=projects,
        thread=threads,
        user=users,
        mode=modes,
        at=moments,
        opening=st.integers(0, 2),
    )
    def create(
        self, project: str, thread: str, user: str, mode: CopilotMode, at: datetime, opening: int
    ) -> None:
        """A session, sometimes with its first messages (a clash writes none of them)."""
        session = Session(
            thread_id=thread,
            user_id=user,
            project_id=project,
            copilot_mode=mode,
            created_at=at,
            updated_at=at,
            metadata={"n": self.counter},
        )
        self.counter += 1
        first = [Message.user(f"m{self.counter + n}", "opening", at) for n in range(opening)]
        self.counter += opening
        if self.both(lambda store: store.create_session(session, first)) is not None:
            self.appended[(project, thread)] = [message.id for message in first]

    @rule(
        project=projects,
        thread=threads,
        size=st.integers(0, 4),
        counts=st.none() | st.tuples(*[st.integers(0, 50)] * 3),
        replaces=st.sampled_from([None, None, "last", "older", "ghost"]),
    )
    def append(
        self,
        project: str,
        thread: str,
        size: int,
        counts: tuple[int, int, int] | None,
        replaces: str | None,
    ) -> None:
        """A step, counted with its usage; sometimes replacing a draft: the last message
        appended (then it goes), an older one or an unknown id (then nothing goes)."""
        first = self.counter
        self.counter += size
        messages = [Message.user(f"m{first + n}", f"text {first + n}", T0) for n in range(size)]
        appended = self.appended.setdefault((project, thread), [])
        target = {
            None: None,
            "last": appended[-1] if appended else "none-yet",
            "older": appended[0] if appended else "none-yet",
            "ghost": "ghost",
        }[replaces]
        usage = None if counts is None else Usage(*counts)
        self.both(
            lambda store: store.append_messages(
                project, thread, messages, usage=usage, replaces=target
            )
        )
        appended.extend(message.id for message in messages)

    @rule(project=projects, thread=threads, limit=maybe, before=maybe)
    def history(self, project: str, thread: str, limit: int | None, before: int | None) -> None:
        self.both(lambda store: store.history(project, thread, limit=limit, before=before))

    @rule(
        project=projects,
        thread=threads,
        counts=st.none() | st.tuples(*[st.integers(0, 50)] * 3),
        at=moments,
        title=st.none() | st.sampled_from(["OSPF", "BGP"]),
    )
    def record(
        self,
        project: str,
        thread: str,
        counts: tuple[int, int, int] | None,
        at: datetime,
        title: str | None,
    ) -> None:
        usage = None if counts is None else Usage(*counts)
        self.both(lambda store: store.record_turn(project, thread, at, usage=usage, title=title))

    @rule(project=projects, thread=threads, title=st.sampled_from(["x", "Lab ☃"]), at=moments)
    def rename(self, project: str, thread: str, title: str, at: datetime) -> None:
        self.both(lambda store: store.rename_session(project, thread, title, at))

    @rule(project=projects, thread=threads, pinned=st.booleans())
    def pin(self, project: str, thread: str, pinned: bool) -> None:
        self.both(lambda store: store.set_pinned(project, thread, pinned))

    @rule(project=projects, thread=threads)
    def delete(self, project: str, thread: str) -> None:
        self.both(lambda store: store.delete_session(project, thread))

    @rule(project=projects, draw=st.integers(0, 3))
    def delete_project(self, project: str, draw: int) -> None:
        # One time in four: emptying a project at every tenth step would leave the
        # machine few sessions old enough to have counters and pages worth comparing.
        if draw == 0:
            self.both(lambda store: store.delete_project_sessions(project))

    @rule(
        project=projects,
        user=users,
        limit=st.integers(1, 5),
        offset=st.integers(0, 4),
        mode=st.none() | modes,
    )
    def list_page(
        self, project: str, user: str, limit: int, offset: int, mode: CopilotMode | None
    ) -> None:
        self.both(
            lambda store: store.list_sessions(
                project, user, limit=limit, offset=offset, copilot_mode=mode
            )
        )

    @invariant()
    def every_session_and_history_agree(self) -> None:
        for project in PROJECTS:
            for user in ("alice", "bob"):
                listed = self.both(listing(project, user))
                for session in listed or []:
                    self.both(whole_history(project, session.thread_id))


def listing(project: str, user: str) -> Callable[[CheckpointStore], Awaitable[list[Session]]]:
    def call(store: CheckpointStore) -> Awaitable[list[Session]]:
        return store.list_sessions(project, user)

    return call


def whole_history(project: str, thread: str) -> Callable[[CheckpointStore], Awaitable[HistoryPage]]:
    def call(store: CheckpointStore) -> Awaitable[HistoryPage]:
        return store.history(project, thread)

    return call


DIFFERENTIAL_SETTINGS = settings(
    max_examples=20,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # No shrinking: a failure is reported as found (at most 30 steps), well within the
    # test timeout, instead of after minutes of replays.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
