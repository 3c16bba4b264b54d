"""The IntentStore contract on every store: the in-memory fake, the real SQLite store and
the real PostgreSQL store keep each user's standing intent per project, replace it whole,
keep users and projects apart, survive a reopen, keep the last run of the checks it ran
(and only of those), and (PostgreSQL) lose it with the project's conversations."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.postgres import PostgresCheckpointStore, PostgresDatabase
from adapters.sqlite import SqliteCheckpointStore
from copilot_core.ports import IntentRun, StandingIntentRecord
from copilot_core.testing import InMemoryCheckpointStore
from tests.real_postgres import PostgresForTests

P1, P2 = str(uuid.UUID(int=11)), str(uuid.UUID(int=12))
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CHECKS: list[dict[str, Any]] = [
    {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2", "state": "full", "name": "é ✓"},
    {"kind": "reachability", "from": "PC1", "to": "PC2", "expect": "reachable", "count": 3},
]

#: A run's result as verify_intent gives it, with what console output may hold.
RESULT: dict[str, Any] = {
    "status": "error",
    "summary": {"pass": 0, "fail": 0, "error": 2},
    "waited_s": 0.5,
    "checks": [
        {
            "name": "é ✓",
            "status": "error",
            "observed": None,
            "evidence": [{"node": "R1", "command": "show", "lines": ["a\x00b", "\ud83d", "✓"]}],
            "attempts": 1,
            "waited_s": 0.5,
            "reason": "There is no node named R1 in the project.",
        }
    ],
}
RUN = IntentRun(T0.replace(minute=5, microsecond=123456), RESULT)

Opener = Callable[[], Any]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "memory":
        kept = InMemoryCheckpointStore()

        @asynccontextmanager
        async def memory() -> AsyncIterator[Any]:
            yield kept

        return memory
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite() -> AsyncIterator[Any]:
            store = SqliteCheckpointStore(tmp_path)
            await store.open()
            try:
                yield store
            finally:
                await store.close()

        return sqlite
    postgres: PostgresForTests = request.getfixturevalue("postgres")
    schema: str = request.getfixturevalue("postgres_schema")

    @asynccontextmanager
    async def postgresql() -> AsyncIterator[Any]:
        async with PostgresDatabase(postgres.url, schema=schema) as database:
            yield PostgresCheckpointStore(database)

    return postgresql


async def test_each_users_intent_per_project_is_kept_replaced_and_survives_a_reopen(
    opener: Opener,
) -> None:
    async with opener() as store:
        assert await store.standing_intent(P1, "alice") is None
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS, T0))
        await store.save_standing_intent(P1, "bob", StandingIntentRecord(CHECKS[1:], T0))
        await store.save_standing_intent(P2, "alice", StandingIntentRecord([], T0))
        later = T0.replace(hour=13)
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS[:1], later))
    async with opener() as store:
        alice = await store.standing_intent(P1, "alice")
        assert alice == StandingIntentRecord(CHECKS[:1], later)
        assert (await store.standing_intent(P1, "bob")).checks == CHECKS[1:]
        assert (await store.standing_intent(P2, "alice")).checks == []
        assert await store.standing_intent(P2, "bob") is None
        alice.checks.append({"kind": "mutated"})  # a copy: the store is not changed
        assert (await store.standing_intent(P1, "alice")).checks == CHECKS[:1]


async def test_a_run_is_kept_with_the_checks_it_ran_and_survives_a_reopen(
    opener: Opener,
) -> None:
    async with opener() as store:
        assert not await store.save_intent_run(P1, "alice", CHECKS, RUN)  # never set
        assert await store.standing_intent(P1, "alice") is None
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS, T0))
        await store.save_standing_intent(P1, "bob", StandingIntentRecord(CHECKS, T0))
        assert (await store.standing_intent(P1, "alice")).last_run is None
        assert await store.save_intent_run(P1, "alice", CHECKS, RUN)
    async with opener() as store:
        assert await store.standing_intent(P1, "alice") == StandingIntentRecord(CHECKS, T0, RUN)
        assert (await store.standing_intent(P1, "bob")).last_run is None  # Bob's own
        kept = await store.standing_intent(P1, "alice")
        kept.last_run.result["checks"].clear()  # a copy: the store is not changed
        assert (await store.standing_intent(P1, "alice")).last_run == RUN


async def test_a_run_of_checks_replaced_meanwhile_is_not_kept(opener: Opener) -> None:
    later = T0.replace(hour=13)
    async with opener() as store:
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS, T0, RUN))
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS[:1], later))
        # the run of the two checks ends after they were replaced by one
        newer = IntentRun(later.replace(minute=1), {**RESULT, "status": "pass"})
        assert not await store.save_intent_run(P1, "alice", CHECKS, newer)
        assert await store.standing_intent(P1, "alice") == StandingIntentRecord(CHECKS[:1], later)
        assert await store.save_intent_run(P1, "alice", CHECKS[:1], newer)
        assert (await store.standing_intent(P1, "alice")).last_run == newer
        # the record is written whole: its last run, or none
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS[:1], later))
        assert (await store.standing_intent(P1, "alice")).last_run is None
        assert not await store.save_intent_run(P2, "alice", CHECKS[:1], newer)  # other project
        assert await store.standing_intent(P2, "alice") is None


async def test_postgres_forgets_a_projects_intent_with_its_conversations(
    postgres: PostgresForTests, postgres_schema: str
) -> None:
    async with PostgresDatabase(postgres.url, schema=postgres_schema) as database:
        store = PostgresCheckpointStore(database)
        await store.save_standing_intent(P1, "alice", StandingIntentRecord(CHECKS, T0))
        await store.save_standing_intent(P2, "alice", StandingIntentRecord(CHECKS, T0))
        await store.delete_project_sessions(P1)
        assert await store.standing_intent(P1, "alice") is None
        assert await store.standing_intent(P2, "alice") is not None
