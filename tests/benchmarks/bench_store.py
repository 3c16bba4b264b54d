"""Benchmark of the SQLite checkpoint store against bare ``sqlite3`` in the same run.

Run: ``python -m tests.benchmarks.bench_store`` (``--quick`` for a smoke run).

Prints, for the store and for a bare ``sqlite3`` baseline that writes the same JSON
bytes with the same pragmas and transactions (a table ``(id INTEGER PRIMARY KEY,
session INTEGER, seq INTEGER, message TEXT)`` with a ``(session, seq)`` index):

* bytes on disk per turn after 100 and 1000 turns, against the JSON bytes of a turn
  (the baseline uses the store's 2 KiB pages; SQLite's default 4 KiB is shown too);
* the time to append a turn (user message, one tool step, the answer, the counters)
  at 0, 500 and 5000 prior turns;
* the time to load a 500-turn history (baseline: fetch the rows and ``json.loads``);
* the time to list 1000 sessions (baseline: fetch the same rows as tuples).

It asserts nothing: figures go to ``docs/sqlite-store.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adapters.sqlite import SqliteCheckpointStore
from copilot_core import Message, Session
from copilot_core.ports import FunctionCall, ToolCall, Usage

__all__ = ["main"]

PROJECT = str(uuid.UUID(int=7))
T0 = datetime(2026, 3, 1, tzinfo=UTC)
TOOL_OUTPUT = json.dumps(
    {
        "nodes": [
            {"name": f"R{n}", "status": "started", "console": 5000 + n, "ports": [0, 1, 2, 3]}
            for n in range(12)
        ]
    },
    indent=2,
)


def turn_appends(t: int) -> list[list[Message]]:
    """One realistic turn: a question, a tool step (call + result), the answer."""
    at = T0 + timedelta(seconds=t)
    call = ToolCall(
        id=f"call_{t}", function=FunctionCall(name="get_topology", arguments='{"detail": true}')
    )
    return [
        [Message.user(f"u{t}", f"Why can't R1 reach R3 over OSPF in area 0? (turn {t})", at)],
        [
            Message.assistant(f"a{t}", "Let me look at the topology.", at, tool_calls=(call,)),
            Message.tool(f"t{t}", call.id, "get_topology", TOOL_OUTPUT, at),
        ],
        [
            Message.assistant(
                f"f{t}",
                "R3's Gi0/1 is shut down and the OSPF hello timers differ. " * 6,
                at,
            )
        ],
    ]


def json_texts(t: int) -> list[list[str]]:
    return [
        [json.dumps(m.to_dict(), ensure_ascii=False, separators=(",", ":")) for m in append]
        for append in turn_appends(t)
    ]


STEP_USAGE = Usage(llm_calls=1, input_tokens=450, output_tokens=60)


def session(thread_id: str, n: int = 0) -> Session:
    at = T0 + timedelta(seconds=n)
    return Session(
        thread_id=thread_id, user_id="alice", project_id=PROJECT, created_at=at, updated_at=at
    )


def db_file(data_dir: Path) -> Path:
    return data_dir / "projects" / PROJECT / "gns3-copilot" / "copilot_checkpoints.db"


def size_on_disk(path: Path) -> int:
    files = [path, path.with_name(path.name + "-wal")]
    return sum(f.stat().st_size for f in files if f.exists())


# ================================================================== baseline
class BareSqlite:
    """The same bytes through bare sqlite3: the floor the store is compared with."""

    def __init__(self, path: Path, page_size: int = 2048) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute(f"PRAGMA page_size = {page_size}")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, session INTEGER, "
            "seq INTEGER, message TEXT)"
        )
        self.conn.execute("CREATE INDEX IF NOT EXISTS log_seq ON log(session, seq)")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS sessions (id INTEGER PRIMARY KEY, user TEXT, "
            "pinned INTEGER, updated_at TEXT, title TEXT, counters INTEGER)"
        )
        self.seq = 0

    def append(self, texts: list[str]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(
            "INSERT INTO log (session, seq, message) VALUES (1, ?, ?)",
            [(self.seq + n, text) for n, text in enumerate(texts, start=1)],
        )
        self.conn.execute("COMMIT")
        self.seq += len(texts)

    def turn(self, t: int) -> None:
        for texts in json_texts(t):
            self.append(texts)
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("UPDATE sessions SET counters = counters + 4 WHERE id = 1")
        self.conn.execute("COMMIT")

    def load(self) -> list[dict[str, object]]:
        rows = self.conn.execute(
            "SELECT message FROM log WHERE session = 1 ORDER BY seq"
        ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def fetch(self) -> list[tuple[str]]:
        return self.conn.execute(
            "SELECT message FROM log WHERE session = 1 ORDER BY seq"
        ).fetchall()

    def close(self) -> None:
        self.conn.close()


# ================================================================== measures
async def store_turn(store: SqliteCheckpointStore, thread_id: str, t: int) -> None:
    for n, messages in enumerate(turn_appends(t)):
        await store.append_messages(PROJECT, thread_id, messages, usage=STEP_USAGE if n else None)
    await store.record_turn(PROJECT, thread_id, T0 + timedelta(seconds=t))


def prefill(path: Path, thread_id: str, turns: int) -> None:
    """Write ``turns`` turns' rows straight into the store's tables (fast set-up)."""
    conn = sqlite3.connect(path)
    (session_id,) = conn.execute(
        "SELECT id FROM chat_sessions WHERE thread_id = ?", (thread_id,)
    ).fetchone()

    def rows() -> Iterator[tuple[int, int, str]]:
        seq = 0
        for t in range(turns):
            for append in json_texts(t):
                for text in append:
                    seq += 1
                    yield session_id, seq, text

    conn.executemany(
        "INSERT INTO chat_messages (session_id, seq, message) VALUES (?, ?, ?)", rows()
    )
    conn.execute(
        "UPDATE chat_sessions SET message_count = message_count + ? WHERE id = ?",
        (4 * turns, session_id),
    )
    conn.commit()
    conn.close()


def row(name: str, ours: float, bare: float, unit: str, scale: float) -> str:
    return (
        f"  {name:<34} {ours * scale:>10.3f} {bare * scale:>10.3f} {unit:<4} {ours / bare:>6.2f}x"
    )


async def bench(root: Path, quick: bool) -> None:
    big = 200 if quick else 1000
    deep = 500 if quick else 5000
    samples = 10 if quick else 60
    turn_json = sum(len(text.encode()) for append in json_texts(0) for text in append)
    print(f"SQLite {sqlite3.sqlite_version}; synchronous=NORMAL, WAL; a turn = 4 messages,")
    print(f"{turn_json} bytes of JSON. Times are medians of {samples} runs.\n")
    print(f"  {'':<34} {'store':>10} {'bare':>10} {'':<4} {'ratio':>7}")

    # ---------------------------------------------------------------- bytes
    data = root / "bytes"
    bare = BareSqlite(root / "bare-bytes.db")
    bare_4k = BareSqlite(root / "bare-bytes-4k.db", page_size=4096)
    sizes: dict[int, tuple[int, int]] = {}
    async with SqliteCheckpointStore(data) as store:
        await store.create_session(session("s"))
        for t in range(big):
            await store_turn(store, "s", t)
            bare.turn(t)
            bare_4k.turn(t)
            if t + 1 in (100, big):
                await store.close_project(PROJECT)  # checkpoints and removes the WAL
                bare.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                sizes[t + 1] = (size_on_disk(db_file(data)), size_on_disk(bare.path))
                ours, base = (size / (t + 1) for size in sizes[t + 1])
                print(row(f"bytes/turn after {t + 1} turns", ours, base, "B", 1))
                print(f"  {'':<34} {ours / turn_json:>10.2f} {base / turn_json:>10.2f} x JSON")
                bare_4k.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                base_4k = size_on_disk(bare_4k.path) / (t + 1)
                label = "  (bare with 4 KiB pages)"
                print(f"  {label:<34} {'':>10} {base_4k / turn_json:>10.2f} x JSON")
    bare_4k.close()
    ours, base = ((sizes[big][i] - sizes[100][i]) / (big - 100) for i in (0, 1))
    print(row(f"bytes/turn from turn 100 to {big}", ours, base, "B", 1))
    print(f"  {'':<34} {ours / turn_json:>10.2f} {base / turn_json:>10.2f} x JSON")
    bare.close()

    # --------------------------------------------------------------- append
    # All depths are prepared first, then measured round-robin, one turn of each
    # per round, so that the machine's load affects them alike.
    depths = sorted({0, 500, deep})
    stores: dict[int, SqliteCheckpointStore] = {}
    bares: dict[int, BareSqlite] = {}
    for prior in depths:
        data = root / f"append-{prior}"
        stores[prior] = store = SqliteCheckpointStore(data)
        await store.open()
        await store.create_session(session("s"))
        await store.close_project(PROJECT)
        prefill(db_file(data), "s", prior)
        bares[prior] = bare = BareSqlite(root / f"bare-append-{prior}.db")
        for t in range(prior):
            bare.append([text for append in json_texts(t) for text in append])
        await store_turn(store, "s", prior)  # warm: open the database
        bare.turn(prior)
    ours_times: dict[int, list[float]] = {prior: [] for prior in depths}
    bare_times: dict[int, list[float]] = {prior: [] for prior in depths}
    for n in range(1, samples + 1):
        for prior in depths:
            start = time.perf_counter()
            await store_turn(stores[prior], "s", prior + n)
            ours_times[prior].append(time.perf_counter() - start)
            start = time.perf_counter()
            bares[prior].turn(prior + n)
            bare_times[prior].append(time.perf_counter() - start)
    for prior in depths:
        ours, base = statistics.median(ours_times[prior]), statistics.median(bare_times[prior])
        print(row(f"append a turn at {prior} prior turns", ours, base, "ms", 1e3))
        await stores[prior].close()
        bares[prior].close()
    at_deep = statistics.median(ours_times[deep]) / statistics.median(ours_times[0])
    print(f"  {'':<34} store at {deep} / at 0 prior turns: {at_deep:.2f}x")

    # ----------------------------------------------------------------- load
    data = root / "load"
    bare = BareSqlite(root / "bare-load.db")
    async with SqliteCheckpointStore(data) as store:
        await store.create_session(session("s"))
        await store.close_project(PROJECT)
        prefill(db_file(data), "s", 500)
        for t in range(500):
            bare.append([text for append in json_texts(t) for text in append])
        page = await store.history(PROJECT, "s")
        assert len(page.messages) == 2000 == len(bare.load())
        loads: tuple[list[float], list[float], list[float]] = ([], [], [])
        for _ in range(samples):
            for times, run in zip(loads, (None, bare.load, bare.fetch), strict=True):
                start = time.perf_counter()
                if run is None:
                    await store.history(PROJECT, "s")
                else:
                    run()
                times.append(time.perf_counter() - start)
        ours, base, fetch = (statistics.median(times) for times in loads)
        print(row("load a 500-turn history", ours, base, "ms", 1e3))
        print(row("  (bare: rows only, no json.loads)", ours, fetch, "ms", 1e3))
    bare.close()

    # ----------------------------------------------------------------- list
    data = root / "list"
    bare = BareSqlite(root / "bare-list.db")
    async with SqliteCheckpointStore(data) as store:
        for n in range(1000):
            await store.create_session(session(f"s{n}", n))
        bare.conn.executemany(
            "INSERT INTO sessions (user, pinned, updated_at, title, counters) "
            "VALUES ('alice', 0, ?, 'a title', 0)",
            [(f"2026-03-01T00:{n // 60:02d}:{n % 60:02d}",) for n in range(1000)],
        )
        listed = await store.list_sessions(PROJECT, "alice", limit=1000)
        assert len(listed) == 1000
        lists: tuple[list[float], list[float]] = ([], [])
        for _ in range(samples):
            start = time.perf_counter()
            await store.list_sessions(PROJECT, "alice", limit=1000)
            lists[0].append(time.perf_counter() - start)
            start = time.perf_counter()
            bare.conn.execute(
                "SELECT * FROM sessions WHERE user = 'alice' "
                "ORDER BY pinned DESC, updated_at DESC LIMIT 1000"
            ).fetchall()
            lists[1].append(time.perf_counter() - start)
        ours, base = statistics.median(lists[0]), statistics.median(lists[1])
        print(row("list 1000 sessions", ours, base, "ms", 1e3))
    bare.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer samples")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-store-") as root:
        asyncio.run(bench(Path(root), args.quick))


if __name__ == "__main__":
    main()
