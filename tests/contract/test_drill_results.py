"""The DrillResults contract (copilot_core.drills, issue 38) on every store: the in-memory
one, the real SQLite file and the real PostgreSQL database keep one active drill per
project (a second is refused, a restart still sees it), update it, finish it into its
user's history in one step, and answer the best score per fault."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.postgres import PostgresDatabase, PostgresDrillResults
from adapters.sqlite import SqliteDrillResults
from copilot_core.drills import ActiveDrill, DrillCheckpoint, DrillOutcome, InMemoryDrillResults
from copilot_core.errors import DrillActiveError, DrillNotFoundError
from tests.real_postgres import PostgresForTests

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
STATE: dict[str, Any] = {"nodes": {"R1": ["interface eth1", "ip address 10.0.12.1/30", "é ✓"]}}

Opener = Callable[[], Any]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "memory":
        kept = InMemoryDrillResults()

        @asynccontextmanager
        async def memory() -> AsyncIterator[Any]:
            yield kept

        return memory
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite() -> AsyncIterator[Any]:
            store = await SqliteDrillResults.open(tmp_path / "drills.sqlite3")
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
            yield PostgresDrillResults(database)

    return postgresql


def drill(project: str = "p1", drill_id: str = "d1", user: str = "alice") -> ActiveDrill:
    return ActiveDrill(drill_id, project, user, "ospf-hello-mismatch", T0)


def outcome(
    drill_id: str, fault: str, score: float | None, ended: int, user: str = "alice"
) -> DrillOutcome:
    return DrillOutcome(
        drill_id=drill_id,
        user_id=user,
        project_id="p1",
        fault_id=fault,
        topic="ospf",
        difficulty=2,
        score=score,
        started_at=T0,
        ended_at=T0 + timedelta(minutes=ended),
        time_s=61.5,
        hints_used=2,
        given_up=score is None,
        restored=True,
    )


async def test_one_active_drill_per_project_kept_across_a_reopen(opener: Opener) -> None:
    async with opener() as store:
        assert await store.active("p1") is None
        await store.begin(drill())
        with pytest.raises(DrillActiveError):
            await store.begin(drill(drill_id="d2", user="bob"))
        await store.begin(drill(project="p2", drill_id="d3"))  # another project is free
    async with opener() as store:
        assert await store.active("p1") == drill()
        assert (await store.active("p2")).id == "d3"


async def test_two_begins_at_once_keep_one(opener: Opener) -> None:
    async with opener() as store:
        done = await asyncio.gather(
            store.begin(drill(drill_id="a")),
            store.begin(drill(drill_id="b")),
            return_exceptions=True,
        )
        assert sum(isinstance(d, DrillActiveError) for d in done) == 1
        assert (await store.active("p1")).id in {"a", "b"}


async def test_an_active_drill_is_updated_whole_with_its_checkpoint(opener: Opener) -> None:
    point = DrillCheckpoint(T0 + timedelta(seconds=1), STATE)
    updated = ActiveDrill(
        "d1", "p1", "alice", "ospf-hello-mismatch", T0, point,
        T0 + timedelta(seconds=30), hints_used=2, grades=1, score=0.75,
    )  # fmt: skip
    async with opener() as store:
        await store.begin(drill())
        await store.update(updated)
        with pytest.raises(DrillNotFoundError):
            await store.update(drill(drill_id="other"))
    async with opener() as store:
        assert await store.active("p1") == updated


async def test_finishing_drops_the_drill_and_keeps_the_result_in_one_step(opener: Opener) -> None:
    async with opener() as store:
        await store.begin(drill())
        with pytest.raises(DrillNotFoundError):
            await store.finish("p1", "other", outcome("other", "f", 1.0, 1))
        assert await store.history("alice") == []  # nothing kept for the wrong drill
        await store.finish("p1", "d1", outcome("d1", "ospf-hello-mismatch", 0.5, 1))
        assert await store.active("p1") is None
        with pytest.raises(DrillNotFoundError):
            await store.finish("p1", "d1", None)
        await store.begin(drill(drill_id="d2"))
        await store.finish("p1", "d2", None)  # a drill that never started keeps nothing
    async with opener() as store:
        assert await store.history("alice") == [outcome("d1", "ospf-hello-mismatch", 0.5, 1)]
        assert await store.active("p1") is None


async def test_history_is_the_latest_first_and_the_best_score_per_fault(opener: Opener) -> None:
    async with opener() as store:
        kept = [
            outcome("a", "ospf-hello-mismatch", 0.5, 1),
            outcome("b", "ospf-hello-mismatch", 1.0, 3),
            outcome("c", "link-suspended", None, 2),
            outcome("d", "link-suspended", 0.25, 4),
            outcome("e", "ospf-hello-mismatch", 0.75, 5),
            outcome("f", "link-suspended", 1.0, 6, user="bob"),
        ]
        for n, result in enumerate(kept):
            await store.begin(drill(drill_id=result.drill_id, user=result.user_id))
            await store.finish("p1", result.drill_id, result)
            assert n >= 0
    async with opener() as store:
        history = await store.history("alice")
        assert [o.drill_id for o in history] == ["e", "d", "b", "c", "a"]
        assert [o.drill_id for o in await store.history("alice", limit=2)] == ["e", "d"]
        assert history[3] == kept[2]  # a give-up, never graded: its score is None
        assert await store.best_scores("alice") == {
            "ospf-hello-mismatch": 1.0,
            "link-suspended": 0.25,
        }
        assert await store.best_scores("bob") == {"link-suspended": 1.0}
        assert await store.best_scores("carol") == {} and await store.history("carol") == []
