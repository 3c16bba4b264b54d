"""The core's ``Rollback`` over the lab's ``RestorePoints`` (the in-memory double): the
operator's policy, conflicts, the bounds of a call into the lab, what is recorded."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from copilot_core import CopilotMode, Message, Session, SessionKey
from copilot_core.bootstrap import InMemorySessionLeases
from copilot_core.errors import (
    Gns3Error,
    NotFoundError,
    PermissionDeniedError,
    RollbackConflictError,
)
from copilot_core.policy import UserLimits
from copilot_core.ports import (
    RestorePoint,
    RollbackResult,
    RollbackStatus,
    RolledBackItem,
)
from copilot_core.rollback import Rollback, RollbackRequest
from copilot_core.rules import CallBounds
from copilot_core.testing import (
    FakeRestorePoints,
    FakeRollback,
    InMemoryCheckpointStore,
    SequentialIds,
    SteppingClock,
)

PROJECT, SESSION, USER = "project-1", "session-1", "alice"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY = SessionKey(PROJECT, SESSION, USER)


@dataclass
class Rig:
    store: InMemoryCheckpointStore = field(default_factory=InMemoryCheckpointStore)
    leases: InMemorySessionLeases = field(default_factory=InMemorySessionLeases)
    clock: SteppingClock = field(default_factory=SteppingClock)
    ids: SequentialIds = field(default_factory=SequentialIds)
    bounds: CallBounds = field(default_factory=CallBounds)

    def __post_init__(self) -> None:
        self.restore = FakeRestorePoints(self.store, clock=self.clock, ids=self.ids)
        self.rollback = Rollback(
            self.store,
            self.store,
            self.restore,
            self.leases,
            clock=self.clock,
            ids=self.ids,
            bounds=self.bounds,
        )

    async def with_point(self) -> RestorePoint:
        session = Session(
            thread_id=SESSION, user_id=USER, project_id=PROJECT, created_at=T0, updated_at=T0
        )
        await self.store.create_session(session, [Message.user("m-1", "delete PC3", T0)])
        point = RestorePoint("p-1", PROJECT, SESSION, T0, "call-1", "delete_gns3_node", "PC3")
        await self.store.save_restore_point(point)
        return point

    async def history(self) -> list[Message]:
        return list((await self.store.history(PROJECT, SESSION)).messages)


async def test_a_user_kept_in_teaching_mode_is_refused_before_anything_is_read() -> None:
    rig = Rig()
    await rig.with_point()
    teaching = UserLimits(max_mode=CopilotMode.TEACHING_ASSISTANT, mode_rule="group students")

    with pytest.raises(PermissionDeniedError, match="Rolling back a change"):
        await rig.rollback(RollbackRequest(KEY, "no-such-point", limits=teaching))
    with pytest.raises(NotFoundError):  # allowed: the point is looked up (and missing)
        await rig.rollback(RollbackRequest(KEY, "no-such-point", limits=UserLimits()))
    assert rig.restore.rollbacks == []


async def test_a_conflicting_rollback_is_refused_and_nothing_is_recorded_or_kept() -> None:
    rig = Rig()
    point = await rig.with_point()
    rig.restore.conflicts[point.id] = ["a link to PC3 was made since"]
    before = await rig.history()

    with pytest.raises(RollbackConflictError, match="a link to PC3 was made since"):
        await rig.rollback(RollbackRequest(KEY, point.id))

    assert await rig.history() == before
    kept = await rig.store.restore_points(PROJECT, SESSION)
    assert kept == [point]  # no restore point taken, the point not marked
    assert await rig.leases.holder(PROJECT, SESSION) is None


async def test_force_goes_past_the_conflicts_and_the_result_says_so() -> None:
    rig = Rig()
    point = await rig.with_point()
    rig.restore.conflicts[point.id] = ["a link to PC3 was made since"]

    outcome = await rig.rollback(RollbackRequest(KEY, point.id, force=True))

    assert outcome.result.status is RollbackStatus.SUCCESS and outcome.result.forced
    output = json.loads(outcome.messages[1].content)
    assert output["forced"] == ["a link to PC3 was made since"]
    assert outcome.point.rolled_back is not None
    assert outcome.point.rolled_back.status is RollbackStatus.SUCCESS


async def test_the_rollback_is_recorded_as_the_ports_call_answered_by_its_json() -> None:
    rig = Rig()
    point = await rig.with_point()

    outcome = await rig.rollback(RollbackRequest(KEY, point.id, use_snapshot=True, by="Alice"))

    (asked,) = rig.restore.rollbacks
    assert asked.taken is not None
    call, answer = outcome.messages
    assert call.tool_calls is not None
    (tool_call,) = call.tool_calls
    assert tool_call.function == rig.restore.as_tool_call(point.id, asked.options)
    assert asked.tool_call_id == tool_call.id == answer.tool_call_id == asked.taken.tool_call_id
    assert json.loads(answer.content) == outcome.result.to_json()
    assert answer.metadata["approval"]["digest"] == asked.approval.digest is not None
    assert answer.metadata["restore_point_id"] == asked.taken.id
    assert "Alice rolled back restore point p-1" in call.content
    assert (await rig.history())[-2:] == list(outcome.messages)
    marked = await rig.store.restore_point(PROJECT, SESSION, point.id)
    assert marked is not None
    assert marked.rolled_back is not None
    assert marked.rolled_back.restore_point_id == asked.taken.id
    assert marked.rolled_back.tool_call_id == tool_call.id
    assert marked.rolled_back.by == KEY.user_id
    assert marked.rolled_back.at is not None
    assert marked.rolled_back.at.isoformat() == call.metadata["created_at"]


async def test_a_rollback_that_runs_past_the_time_limit_is_answered_with_an_error() -> None:
    rig = Rig(bounds=CallBounds(timeout=0.01))
    point = await rig.with_point()

    async def hang(asked: FakeRollback) -> RollbackResult:
        await asyncio.Event().wait()
        raise AssertionError("not reached")

    rig.restore.handler = hang
    outcome = await rig.rollback(RollbackRequest(KEY, point.id))

    assert outcome.result.status is RollbackStatus.ERROR
    assert outcome.result.error == "The rollback did not finish within 0.01 s."
    assert outcome.point.rolled_back is not None
    assert outcome.point.rolled_back.status is RollbackStatus.ERROR
    assert await rig.leases.holder(PROJECT, SESSION) is None


async def test_a_rollback_whose_claim_is_lost_is_aborted() -> None:
    rig = Rig()
    point = await rig.with_point()

    async def lose_the_claim(asked: FakeRollback) -> RollbackResult:
        asked.context.abort.abort("the lease could not be renewed")
        await asyncio.Event().wait()
        raise AssertionError("not reached")

    rig.restore.handler = lose_the_claim
    outcome = await rig.rollback(RollbackRequest(KEY, point.id))

    assert outcome.result.status is RollbackStatus.ABORTED
    assert json.loads(outcome.messages[1].content) == {"status": "aborted"}


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (Gns3Error("GNS3 is down"), "GNS3 is down"),
        (RuntimeError("a bug"), "The rollback failed with an internal error; see the server log."),
    ],
)
async def test_a_failing_lab_is_a_result_that_says_why(failure: Exception, said: str) -> None:
    rig = Rig()
    point = await rig.with_point()

    def fail(asked: FakeRollback) -> RollbackResult:
        raise failure

    rig.restore.handler = fail
    outcome = await rig.rollback(RollbackRequest(KEY, point.id))

    assert (outcome.result.status, outcome.result.error) == (RollbackStatus.ERROR, said)
    assert json.loads(outcome.messages[1].content)["error"] == said


async def test_a_long_result_is_cut_in_the_history_not_in_what_the_caller_gets() -> None:
    rig = Rig(bounds=CallBounds(max_result_chars=500))
    point = await rig.with_point()
    long = {"state": "as before the change", "actions": ["x" * 80] * 20}
    rig.restore.handler = lambda asked: RollbackResult(
        RollbackStatus.SUCCESS, (RolledBackItem("topology", RollbackStatus.SUCCESS, long),)
    )

    outcome = await rig.rollback(RollbackRequest(KEY, point.id))

    kept = json.loads(outcome.messages[1].content)
    assert kept["truncated"] is True and len(kept["output"]) == 500
    assert "only the first 500 are kept" in kept["note"]
    assert outcome.result.items[0].evidence == long


async def test_a_preview_the_lab_cannot_give_is_the_cards_one_line() -> None:
    rig = Rig()
    point = await rig.with_point()

    async def unreadable(*args: object) -> object:
        raise Gns3Error("GNS3 is down")

    rig.restore.preview = unreadable  # type: ignore[method-assign]
    preview = await rig.rollback.preview(RollbackRequest(KEY, point.id))

    assert preview.summary == "roll back to before delete_gns3_node (PC3)"
    assert (dict(preview.devices), list(preview.topology)) == ({}, [])
