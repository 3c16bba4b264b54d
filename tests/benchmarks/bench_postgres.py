"""The turn pipeline on PostgreSQL against the same pipeline on SQLite, in one run.

Run: ``python -m tests.benchmarks.bench_postgres`` (``--quick`` for a smoke run,
``--json FILE`` to keep the figures). It needs the PostgreSQL server of the tests
(``GNS3_COPILOT_TEST_POSTGRES_URL``, default ``postgresql://postgres@127.0.0.1:5432/postgres``),
where it creates a database of its own and drops it at the end. It prints figures and
asserts nothing.

Both sides are the real pipeline of ``bench_turns`` (:class:`~copilot_core.ChatService`
with the :class:`~copilot_core.BuiltinAgent`, the scripted model at zero delay, the W1
workload: a streamed tool call, a 2 KB tool result, a 300-token answer) in process; only
the checkpoint store differs: :class:`~adapters.sqlite.SqliteCheckpointStore` on a
temporary directory, :class:`~adapters.postgres.PostgresCheckpointStore` on the local
server over TCP (127.0.0.1, a pool of 10), twice: with the server's default durability
(``synchronous_commit = on``: every commit waits for its WAL flush, an fsync) and with
``synchronous_commit = off`` set in the URL (the durability of the SQLite store's
default ``synchronous = NORMAL``: a crash of the database's machine can lose the last
commits, never corrupt). Turns alternate round-robin between the three so that the
machine's load falls on all alike.

* W1: one turn, new session, and sessions already holding 50 and 500 turns; also with
  the history read from the store every turn (no window kept between turns).
* W4: 50 sessions x 5 turns at once: turns/s and p50/p99 turn latency.
* Store operations alone: append one step, record a turn, read a 500-turn history,
  list a user's 100 sessions; and one bare committed ``UPDATE`` on each PostgreSQL
  connection, the machine's commit latency at that moment.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from adapters.postgres import PostgresCheckpointStore, PostgresDatabase
from adapters.redis import connect_redis
from adapters.sqlite import SqliteCheckpointStore
from copilot_core import (
    BuiltinAgent,
    ChatService,
    ChatSettings,
    ModelSelection,
    Session,
    SessionKey,
    SystemClock,
    TurnRequest,
    UuidIdFactory,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.ports import CheckpointStore, Usage
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    ScriptedLanguageModel,
    StaticModelProvider,
    text_reply,
)
from tests.adapters.redis.replica import Replica
from tests.benchmarks.bench_turns import (
    ABORT_STREAM_QUERY,
    PROJECT,
    TOOL_NAME,
    TOOL_OUTPUT,
    TOPOLOGY,
    USER_ID,
    W1_QUERY,
    ForgetfulModel,
    Row,
    percentile,
    prefill,
    print_table,
    product_turn,
    script,
    stored_turn,
)
from tests.real_postgres import MAINTENANCE_URL
from tests.real_redis import REDIS_URL

__all__ = ["main"]


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Side:
    """One store with the pipeline over it."""

    name: str
    store: CheckpointStore
    chat: ChatService
    cold_chat: ChatService


def pipeline(name: str, store: CheckpointStore, turn_log: Replica | None = None) -> Side:
    tools = FakeToolExecutor()
    tools.add(TOOL_NAME, lambda arguments, context: TOOL_OUTPUT)
    clock, ids = SystemClock(), UuidIdFactory()
    agent = BuiltinAgent(tools, FakeTopologySource(TOPOLOGY), clock=clock, ids=ids)
    model = ForgetfulModel(ScriptedLanguageModel(default=script))
    title = ForgetfulModel(ScriptedLanguageModel(default=text_reply("OSPF from R1 to R3")))
    models = StaticModelProvider(ModelSelection(model, title_model=title))
    ports: dict[str, Any] = {}
    if turn_log is not None:
        ports = {"turn_log": turn_log.log, "leases": turn_log.leases, "controls": turn_log.relay}
    chat = build_chat_service(
        store, {"copilot": agent}, models=models, clock=clock, ids=ids, **ports
    )
    cold = build_chat_service(
        store,
        {"copilot": agent},
        models=models,
        clock=clock,
        ids=ids,
        settings=ChatSettings(history_cache_sessions=0),
        **ports,
    )
    return Side(name, store, chat, cold)


@contextlib.contextmanager
def bench_database() -> Any:
    """A database of this run on the server, dropped at the end; yields its URL."""
    name = f"copilot_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(MAINTENANCE_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        version = conn.execute("SHOW server_version").fetchone()
    info = psycopg.conninfo.conninfo_to_dict(MAINTENANCE_URL)
    user = f"{info['user']}@" if info.get("user") else ""
    url = f"postgresql://{user}{info.get('host', '127.0.0.1')}:{info.get('port', '5432')}/{name}"
    try:
        yield url, (version[0] if version else "?")
    finally:
        with psycopg.connect(MAINTENANCE_URL, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@dataclass
class Settings:
    reps: int
    warmup: int
    sessions: int
    turns_per_session: int
    abort_tries: int
    depths: tuple[int, ...] = (0, 50, 500)


FULL = Settings(reps=30, warmup=3, sessions=50, turns_per_session=5, abort_tries=50)
QUICK = Settings(reps=3, warmup=1, sessions=10, turns_per_session=2, abort_tries=5, depths=(0, 50))


@dataclass
class Bench:
    settings: Settings
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        return row

    async def run(self, sides: list[Side]) -> None:
        await self.w1(sides)
        await self.store_operations(sides)
        await self.w4(sides)

    # ------------------------------------------------------------------------ W1
    async def w1(self, sides: list[Side]) -> None:
        s = self.settings
        sessions: dict[str, dict[int, str | None]] = {}
        cold: dict[str, str] = {}
        for side in sides:
            sessions[side.name] = {0: None}
            for depth in s.depths[1:]:
                sessions[side.name][depth] = await prefill(side.store, depth)
            cold[side.name] = await prefill(side.store, s.depths[-1])
            for _ in range(s.warmup):
                await product_turn(side.chat, W1_QUERY)
        say(f"pre-filled sessions of {list(s.depths[1:])} turns on every store")
        times: dict[tuple[str, int | str], list[float]] = {}
        for _ in range(s.reps):
            for depth in s.depths:
                for side in sides:
                    outcome = await product_turn(side.chat, W1_QUERY, sessions[side.name][depth])
                    times.setdefault((side.name, depth), []).append(outcome.seconds)
            for side in sides:
                outcome = await product_turn(side.cold_chat, W1_QUERY, cold[side.name])
                times.setdefault((side.name, "cold"), []).append(outcome.seconds)
        base = sides[0].name
        for side in sides[1:]:
            for depth in s.depths:
                label = "new session" if depth == 0 else f"{depth} prior turns"
                self.row(
                    f"W1 turn, {label}: {side.name}",
                    "ms",
                    statistics.median(times[(base, depth)]) * 1e3,
                    statistics.median(times[(side.name, depth)]) * 1e3,
                    "<= 1.5x SQLite" if depth == 0 else "",
                    1.5 if depth == 0 else None,
                )
            self.row(
                f"W1 turn, {s.depths[-1]} prior turns, history read every turn: {side.name}",
                "ms",
                statistics.median(times[(base, "cold")]) * 1e3,
                statistics.median(times[(side.name, "cold")]) * 1e3,
            )

    # ------------------------------------------------------------ store alone
    async def store_operations(self, sides: list[Side]) -> None:
        reps = self.settings.reps * 3
        now = SystemClock().now()
        usage = Usage(llm_calls=1, input_tokens=900, output_tokens=300)

        async def timed(call: Callable[[], Awaitable[object]]) -> float:
            started = time.perf_counter()
            await call()
            return time.perf_counter() - started

        figures: dict[tuple[str, str], list[float]] = {}
        targets: dict[str, tuple[str, str]] = {}
        for side in sides:
            store = side.store
            thread = str(uuid.uuid4())
            await store.create_session(
                Session(
                    thread_id=thread, user_id="lister", project_id=PROJECT,
                    created_at=now, updated_at=now,
                )
            )  # fmt: skip
            deep = await prefill(store, 500)
            for n in range(99):
                await store.create_session(
                    Session(
                        thread_id=f"list-{n}-{uuid.uuid4()}", user_id="lister",
                        project_id=PROJECT, created_at=now, updated_at=now,
                    )
                )  # fmt: skip
            targets[side.name] = (thread, deep)
        for rep in range(reps):
            for side in sides:
                store = side.store
                thread, deep = targets[side.name]
                step = stored_turn(rep)[1]
                figures.setdefault((side.name, "append"), []).append(
                    await timed(lambda s=store, t=thread, m=step: s.append_messages(PROJECT, t, m))
                )
                figures.setdefault((side.name, "record"), []).append(
                    await timed(
                        lambda s=store, t=thread: s.record_turn(PROJECT, t, now, usage=usage)
                    )
                )
                if rep % 3 == 0:
                    figures.setdefault((side.name, "history"), []).append(
                        await timed(lambda s=store, d=deep: s.history(PROJECT, d))
                    )
                figures.setdefault((side.name, "list"), []).append(
                    await timed(lambda s=store: s.list_sessions(PROJECT, "lister", limit=100))
                )
                if isinstance(store, PostgresCheckpointStore):
                    figures.setdefault((side.name, "commit"), []).append(
                        await timed(lambda s=store: bare_commit(s.database))
                    )
        base = sides[0].name
        for key, label in (
            ("append", "append one step (2 messages)"),
            ("record", "record a turn's counters"),
            ("history", "read a 500-turn history (2,000 messages)"),
            ("list", "list 100 sessions"),
        ):
            for side in sides[1:]:
                self.row(
                    f"store: {label}: {side.name}",
                    "ms",
                    statistics.median(figures[(base, key)]) * 1e3,
                    statistics.median(figures[(side.name, key)]) * 1e3,
                )
        for side in sides[1:]:
            self.row(
                f"one committed UPDATE (the commit latency): {side.name}",
                "ms",
                None,
                statistics.median(figures[(side.name, "commit")]) * 1e3,
            )

    # ------------------------------------------------------------------------ W4
    async def w4(self, sides: list[Side]) -> None:
        s = self.settings
        results = [await self.sessions_at_once(side.chat) for side in sides]
        (base_rate, base_lat), rest = results[0], results[1:]
        label = f"W4 {s.sessions}x{s.turns_per_session}"
        for side, (rate, latencies) in zip(sides[1:], rest, strict=True):
            self.row(f"{label}: turns/s: {side.name}", "turn/s", base_rate, rate)
            self.row(
                f"{label}: p50: {side.name}",
                "ms",
                percentile(base_lat, 50) * 1e3,
                percentile(latencies, 50) * 1e3,
            )
            self.row(
                f"{label}: p99: {side.name}",
                "ms",
                percentile(base_lat, 99) * 1e3,
                percentile(latencies, 99) * 1e3,
            )

    async def sessions_at_once(self, chat: ChatService) -> tuple[float, list[float]]:
        """Turns per second and each turn's latency, every session at once."""
        s = self.settings
        latencies: list[float] = []

        async def one_session() -> None:
            session_id: str | None = None
            for _ in range(s.turns_per_session):
                outcome = await product_turn(chat, W1_QUERY, session_id)
                session_id = outcome.session_id
                latencies.append(outcome.seconds)

        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for _ in range(s.sessions):
                group.create_task(one_session())
        return s.sessions * s.turns_per_session / (time.perf_counter() - started), latencies


async def bare_commit(database: PostgresDatabase) -> None:
    async with database.connection() as conn:
        await conn.execute("UPDATE chat_sessions SET pinned = pinned WHERE id = 1")


@contextlib.asynccontextmanager
async def open_sides(root: Path, url: str) -> AsyncIterator[list[Side]]:
    asynchronous = url + "?options=-c%20synchronous_commit%3Doff"
    prefix = f"copilot-bench-{uuid.uuid4().hex[:8]}"
    async with (
        SqliteCheckpointStore(root / "sqlite") as sqlite_store,
        PostgresDatabase(url, max_size=10) as database,
        PostgresDatabase(asynchronous, schema="relaxed", max_size=10) as relaxed,
        redis_turn_log(prefix) as turn_log,
    ):
        sides = [
            pipeline("SQLite", sqlite_store),
            pipeline("PostgreSQL", PostgresCheckpointStore(database)),
            pipeline("PostgreSQL, synchronous_commit off", PostgresCheckpointStore(relaxed)),
            pipeline(
                "PostgreSQL + Redis turn log",
                PostgresCheckpointStore(database),
                turn_log,
            ),
        ]
        try:
            yield sides
        finally:
            for side in sides:
                await side.chat.shutdown(grace=2)
                await side.cold_chat.shutdown(grace=2)


@contextlib.asynccontextmanager
async def redis_turn_log(prefix: str, replica: str = "bench") -> AsyncIterator[Replica]:
    """The turn log, session leases and turn control relay of one replica on Redis."""
    client = await connect_redis(REDIS_URL)
    log = Replica.on(client, prefix=prefix, name=replica)
    await log.start()
    try:
        yield log
    finally:
        await log.stop()
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=500)]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def aborts_across_replicas(bench: Bench, database: PostgresDatabase) -> None:
    """Abort asked on replica B of a turn replica A runs (two chat services, two Redis
    turn logs, one database): from the request to the ``abort`` event on A."""
    prefix = f"copilot-bench-{uuid.uuid4().hex[:8]}"
    store = PostgresCheckpointStore(database)
    async with redis_turn_log(prefix, "a") as log_a, redis_turn_log(prefix, "b") as log_b:
        a = pipeline("A", store, log_a)
        b = pipeline("B", store, log_b)
        latencies: list[float] = []
        session_id: str | None = None
        for _ in range(bench.settings.abort_tries):
            turn = await a.chat.start_turn(
                TurnRequest(PROJECT, USER_ID, ABORT_STREAM_QUERY, session_id)
            )
            session_id = turn.session_id
            asked = 0.0
            async for event in turn.subscribe():
                if event.type == "content" and not asked:
                    asked = time.perf_counter()
                    assert await b.chat.abort(SessionKey(PROJECT, session_id, USER_ID))
                elif event.type == "abort":
                    latencies.append(time.perf_counter() - asked)
            await turn.wait()
        for side in (a, b):
            await side.chat.shutdown(grace=2)
            await side.cold_chat.shutdown(grace=2)
    bench.row(
        "abort asked on another replica (Redis), p50", "ms", None, percentile(latencies, 50) * 1e3
    )
    bench.row(
        "abort asked on another replica (Redis), p99",
        "ms",
        None,
        percentile(latencies, 99) * 1e3,
        "< 100 ms",
        100,
        False,
        True,
    )


async def run(settings: Settings) -> tuple[Bench, str]:
    bench = Bench(settings)
    with (
        tempfile.TemporaryDirectory(prefix="bench-postgres-") as tmp,
        bench_database() as (
            url,
            version,
        ),
    ):
        async with open_sides(Path(tmp), url) as sides:
            await bench.run(sides)
        async with PostgresDatabase(url, schema="aborts", max_size=4) as database:
            await aborts_across_replicas(bench, database)
    return bench, version


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    started = time.perf_counter()
    bench, version = asyncio.run(run(settings))
    print(
        f"bench_postgres: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"PostgreSQL {version} on 127.0.0.1 (TCP), psycopg {psycopg.__version__}, "
        f"{os.cpu_count()} CPUs; W1 medians of {settings.reps} turns "
        f"after {settings.warmup} warm-up turns; baseline = SQLite (synchronous NORMAL), "
        "product = PostgreSQL; "
        f"run took {time.perf_counter() - started:.0f} s"
    )
    for note in bench.notes:
        print(note)
    print()
    print_table(bench.rows)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": [r.to_json() for r in bench.rows]}, indent=2))


if __name__ == "__main__":
    main()
