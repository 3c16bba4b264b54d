"""Turns over real HTTP against ``gns3-copilot serve`` processes: SQLite in one process,
PostgreSQL + Redis with one replica and with two, and two replicas with one SIGKILLed
half-way through.

Run: ``python -m tests.benchmarks.bench_replicas`` (``--quick`` for a smoke run,
``--json FILE`` to keep the figures). It needs the PostgreSQL and Redis servers of the
tests (``GNS3_COPILOT_TEST_POSTGRES_URL``, ``GNS3_COPILOT_TEST_REDIS_URL``): a database
of its own, dropped at the end, and a Redis key prefix of its own, deleted at the end.
It prints figures and asserts nothing about speed; it exits non-zero only when it broke.

Everything is a real process on 127.0.0.1: each replica is ``python -m entrypoints
serve``, GNS3 a real gns3-server (token validation, the project, the topology every turn
reads), the LLM the scripted OpenAI-compatible server in a process of its own (real wire
protocol, zero delay, a 300-token answer; a new session's first turn also asks it for a
title, answered in six words). The clients are this process (httpx, SSE). A turn is
``POST .../chat/stream`` read until ``done``; its time runs from the request to ``done``.

* (a) SQLite, one process (the default ``serve``); (b) PostgreSQL + Redis, one replica;
  (c) PostgreSQL + Redis, two replicas, requests spread round-robin over both (a
  session's turns alternate between them, as behind a load balancer without sticky
  sessions). A PostgreSQL variant has a schema of its own; its replicas share it and a
  Redis prefix; the turn lease is ``LEASE`` seconds.
* W1: one turn at a time, each in a new session, alternating between (a), (b) and (c)
  (every replica runs, so that the machine's load falls on all alike): the median turn.
* W4: 50 sessions x 5 turns at once: turns/s, p50/p99 turn time.
* (d) W4 on two fresh replicas, replica A SIGKILLed once half of the turns are done.
  A client whose request or stream breaks does what a browser behind a load balancer
  does: it re-attaches on the survivor with ``Last-Event-ID`` (a stream that broke), or
  sends the turn again there (a request that never got an answer), and sends the next
  turns there; a ``409`` (the dead replica's claim on the session, until its lease
  expires) is retried after a second. Each turn is then counted as completed (``done``
  without an error), ended with the clear error (``error`` code ``replica_lost``, then
  ``done``), hung (no ``done`` within ``HANG_BOUND`` seconds of the kill), or ended
  otherwise (a stream cut without ``done``, a ``204`` on re-attaching: neither is what
  a client is promised). Then every session's history is read: every turn a client saw
  ``done`` must be there (its user message, and the answer ``done`` named, complete),
  and every history must be a valid conversation (module ``check_history``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from cryptography.fernet import Fernet
from httpx_sse import EventSource

from tests.benchmarks.bench_postgres import bench_database
from tests.benchmarks.bench_turns import ANSWER_TOKENS, Row, percentile, print_table
from tests.fakes.copilot_service import ServedCopilot, serve_copilot
from tests.fakes.gns3_server import RealGns3Server
from tests.fakes.lifeline import die_with_parent
from tests.fakes.load import configure_llm
from tests.fakes.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer
from tests.real_redis import REDIS_URL

__all__ = ["main"]

API_KEY = "sk-bench-replicas"
ANSWER = "".join(ANSWER_TOKENS).strip()
TITLE = "OSPF stuck in EXSTART on R1"
#: The turn lease of the PostgreSQL + Redis replicas (seconds; 15 by default).
LEASE = 5.0
#: A turn with no ``done`` this long after the kill is counted as hung.
HANG_BOUND = 60.0
#: A turn refused with 409 (the dead replica's claim) is sent again this often...
BUSY_RETRY = 1.0
#: ...for at most this long.
BUSY_FOR = 60.0


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


@dataclass
class Settings:
    w1_turns: int
    warmup: int
    sessions: int
    turns_per_session: int


FULL = Settings(w1_turns=30, warmup=3, sessions=50, turns_per_session=5)
QUICK = Settings(w1_turns=5, warmup=1, sessions=10, turns_per_session=2)


# ======================================================================= client
class Replicas:
    """The replicas a client may use, round-robin, as a load balancer would; a replica
    whose connection broke is taken out (its health check would fail)."""

    def __init__(self, urls: Sequence[str]) -> None:
        self.urls = list(urls)
        self.alive = list(urls)
        self._next = 0

    def pick(self) -> str:
        if not self.alive:
            raise RuntimeError("no replica left")
        url = self.alive[self._next % len(self.alive)]
        self._next += 1
        return url

    def lost(self, url: str) -> None:
        if url in self.alive and len(self.alive) > 1:
            self.alive.remove(url)


@dataclass
class Turn:
    """One turn as its client saw it."""

    session: int
    number: int
    message: str
    outcome: str = "pending"  # completed, replica_lost, hung, cut, no_content, refused
    seconds: float | None = None
    message_id: str | None = None
    error_code: str | None = None
    re_attached: bool = False
    sent_again: bool = False


@dataclass
class Stream:
    """What one read of a turn's stream gave."""

    turn_id: str | None = None
    last_id: str | None = None
    done: dict[str, Any] | None = None
    error_code: str | None = None
    broke: bool = False


async def read_stream(response: httpx.Response, into: Stream) -> None:
    try:
        async for sse in EventSource(response).aiter_sse():
            data = json.loads(sse.data)
            kind = data.get("type")
            if kind == "heartbeat":
                continue
            if sse.id:
                into.last_id = sse.id
            if kind == "error":
                into.error_code = str(data.get("code"))
            if kind == "done":
                into.done = data
                return
    except httpx.TransportError:
        into.broke = True
        return
    into.broke = True  # the body ended without ``done``


class Client:
    """A user's turns over HTTP (see the module doc for what it does when a replica dies)."""

    def __init__(self, http: httpx.AsyncClient, replicas: Replicas, token: str, project: str):
        self.http = http
        self.replicas = replicas
        self.headers = {"Authorization": f"Bearer {token}"}
        self.project = project
        self.killed_at: float | None = None

    def chat(self, url: str) -> str:
        return f"{url}/v3/copilot/projects/{self.project}/chat"

    async def turn(self, turn: Turn, session_id: str | None) -> str | None:
        """Run one turn; returns the session id (new when ``session_id`` is None)."""
        started = time.perf_counter()
        refused_since: float | None = None
        while True:
            url = self.replicas.pick()
            body: dict[str, Any] = {"message": turn.message}
            if session_id is not None:
                body["session_id"] = session_id
            stream = Stream()
            try:
                async with self.http.stream(
                    "POST", self.chat(url) + "/stream", json=body, headers=self.headers
                ) as response:
                    if response.status_code == 409 and session_id is not None:
                        await response.aread()
                        refused_since = refused_since or time.monotonic()
                        if time.monotonic() - refused_since > BUSY_FOR:
                            turn.outcome = "refused"
                            return session_id
                        await asyncio.sleep(BUSY_RETRY)
                        continue
                    if response.status_code != 200:
                        text = (await response.aread()).decode()
                        raise RuntimeError(f"{response.status_code} from {url}: {text}")
                    session_id = response.headers["x-session-id"]
                    stream.turn_id = response.headers["x-turn-id"]
                    await read_stream(response, stream)
            except httpx.TransportError:
                if stream.turn_id is None:
                    # No answer at all: the replica is gone. Send the turn again elsewhere.
                    self.replicas.lost(url)
                    turn.sent_again = True
                    continue
                stream.broke = True
            if stream.broke:
                # The turn started, then its stream broke: follow it elsewhere.
                self.replicas.lost(url)
                assert session_id is not None
                await self.re_attach(turn, session_id, stream)
            self.finish(turn, stream, time.perf_counter() - started)
            return session_id

    async def re_attach(self, turn: Turn, session_id: str, stream: Stream) -> None:
        """Follow the turn on another replica from the last event seen, until ``done``
        (or the hang bound)."""
        turn.re_attached = True
        bound = (self.killed_at or time.monotonic()) + HANG_BOUND
        while time.monotonic() < bound:
            url = self.replicas.pick()
            stream.broke = False
            try:
                async with asyncio.timeout(max(0.1, bound - time.monotonic())):
                    async with self.http.stream(
                        "GET",
                        f"{self.chat(url)}/sessions/{session_id}/stream",
                        headers={
                            **self.headers,
                            "Last-Event-ID": stream.last_id or f"{stream.turn_id}:0",
                        },
                    ) as response:
                        if response.status_code == 204:
                            stream.broke = True
                            return  # "nothing left to send", yet no ``done`` was seen
                        if response.status_code != 200:
                            text = (await response.aread()).decode()
                            raise RuntimeError(f"{response.status_code} from {url}: {text}")
                        if response.headers.get("x-turn-id") != stream.turn_id:
                            stream.broke = True
                            return  # another turn of the session: this one is gone
                        await read_stream(response, stream)
            except TimeoutError:
                stream.broke = True
                return
            except httpx.TransportError:
                self.replicas.lost(url)
                continue
            if not stream.broke:
                return
            self.replicas.lost(url)
        stream.broke = True

    def finish(self, turn: Turn, stream: Stream, seconds: float) -> None:
        turn.seconds = seconds
        turn.error_code = stream.error_code
        if stream.done is not None:
            turn.message_id = stream.done.get("message_id")
            if stream.error_code is None:
                turn.outcome = "completed"
            elif stream.error_code == "replica_lost":
                turn.outcome = "replica_lost"
            else:
                turn.outcome = f"error {stream.error_code}"
        elif self.killed_at is not None and time.monotonic() - self.killed_at >= HANG_BOUND:
            turn.outcome = "hung"
        else:
            turn.outcome = "cut"


# ====================================================================== history
def check_history(messages: Sequence[dict[str, Any]]) -> str | None:
    """Why a session's history is not a valid conversation, or None: every assistant
    tool call answered by its tool message before anything else, no tool message
    otherwise, no two user or assistant messages in a row but a user's message after an
    unanswered turn, every answer the scripted one or, when marked partial, its start."""
    open_calls: list[str] = []
    previous: str | None = None
    for message in messages:
        role = message["role"]
        if role == "tool":
            if not open_calls or message.get("tool_call_id") != open_calls[0]:
                return f"tool message {message.get('id')} answers no open call"
            open_calls.pop(0)
            previous = role
            continue
        if open_calls:
            return f"{role} message {message.get('id')} leaves calls unanswered"
        if role == "assistant":
            if previous == "assistant":
                return f"two assistant messages in a row ({message.get('id')})"
            content = message.get("content") or ""
            partial = bool((message.get("metadata") or {}).get("partial"))
            if content != ANSWER and not (partial and ANSWER.startswith(content)):
                return f"assistant message {message.get('id')} is not the answer: {content[:60]!r}"
            open_calls = [call["id"] for call in message.get("tool_calls") or []]
        previous = role
    return None


# ===================================================================== workloads
@dataclass
class Figures:
    w1: list[float] = field(default_factory=list)
    w4_rate: float = 0.0
    w4: list[float] = field(default_factory=list)


async def w1(client: Client, settings: Settings) -> list[float]:
    for n in range(settings.warmup):
        await client.turn(Turn(0, n, f"warm-up {n}: {uuid.uuid4().hex[:6]}"), None)
    times: list[float] = []
    for n in range(settings.w1_turns):
        turn = Turn(0, n, f"W1 {n} {uuid.uuid4().hex[:6]}: why is OSPF stuck in EXSTART?")
        await client.turn(turn, None)
        if turn.outcome != "completed":
            raise RuntimeError(f"a W1 turn ended {turn.outcome}")
        assert turn.seconds is not None
        times.append(turn.seconds)
    return times


async def w4(
    client: Client, settings: Settings, kill: Callable[[], None] | None = None
) -> tuple[float, list[Turn], dict[int, str]]:
    """Every session at once; ``kill`` (a callable) runs once half the turns are done."""
    total = settings.sessions * settings.turns_per_session
    turns: list[Turn] = []
    sessions: dict[int, str] = {}
    finished = 0
    half = asyncio.Event()
    tag = uuid.uuid4().hex[:6]

    async def one_session(n: int) -> None:
        nonlocal finished
        session_id: str | None = None
        for k in range(settings.turns_per_session):
            turn = Turn(n, k, f"W4 {tag} session {n} turn {k}: why is OSPF stuck in EXSTART?")
            turns.append(turn)
            session_id = await client.turn(turn, session_id)
            if session_id is not None:
                sessions[n] = session_id
            finished += 1
            if finished >= total // 2:
                half.set()

    async def killer(kill: Callable[[], None]) -> None:
        await half.wait()
        kill()
        client.killed_at = time.monotonic()
        say(f"  SIGKILLed replica A after {finished} of {total} turns")

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        if kill is not None:
            group.create_task(killer(kill))
        for n in range(settings.sessions):
            group.create_task(one_session(n))
    return total / (time.perf_counter() - started), turns, sessions


def http_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(120, connect=10),
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=200),
    )


async def measure(
    variants: dict[str, Sequence[str]], token: str, project: str, settings: Settings
) -> dict[str, Figures]:
    """W1 on every variant, turns alternating between them (so that the machine's load
    falls on all alike), then W4 on one variant after the other."""
    figures = {name: Figures() for name in variants}
    async with http_client() as http:
        clients = {
            name: Client(http, Replicas(urls), token, project) for name, urls in variants.items()
        }
        say(f"W1, warm-up ({load()})")
        for name, client in clients.items():
            await w1(client, Settings(0, settings.warmup * len(variants[name]), 0, 0))
        say(f"W1 ({load()})")
        one = Settings(1, 0, 0, 0)
        for _ in range(settings.w1_turns):
            for name, client in clients.items():
                figures[name].w1.extend(await w1(client, one))
        for name, client in clients.items():
            say(f"{name}: W4 ({load()})")
            figures[name].w4_rate, turns, _ = await w4(client, settings)
            broken = [t for t in turns if t.outcome != "completed"]
            if broken:
                raise RuntimeError(f"{name}: {len(broken)} W4 turns did not complete: {broken[:3]}")
            figures[name].w4 = [t.seconds for t in turns if t.seconds is not None]
    say(f"done ({load()})")
    return figures


@dataclass
class KillFigures:
    turns: list[Turn]
    rate: float
    lost: list[str]
    invalid: list[str]
    sessions: int


async def measure_kill(
    a: ServedCopilot, b: ServedCopilot, token: str, project: str, settings: Settings
) -> KillFigures:
    async with http_client() as http:
        client = Client(http, Replicas([a.url, b.url]), token, project)
        say(f"W4 with a SIGKILL: warm-up ({load()})")
        for n in range(2 * settings.warmup):  # both replicas
            await client.turn(Turn(0, n, f"warm-up {n}: {uuid.uuid4().hex[:6]}"), None)
        say(f"W4 with a SIGKILL ({load()})")
        rate, turns, sessions = await w4(client, settings, kill=a.process.kill)
        lost: list[str] = []
        invalid: list[str] = []
        chat = client.chat(b.url)
        for n, session_id in sessions.items():
            page = await http.get(
                f"{chat}/sessions/{session_id}/history",
                params={"limit": 200},
                headers=client.headers,
            )
            page.raise_for_status()
            messages = page.json()["messages"]
            problem = check_history(messages)
            if problem is not None:
                invalid.append(f"session {n}: {problem}")
            by_id = {m["id"]: m for m in messages}
            users = [m["content"] for m in messages if m["role"] == "user"]
            for turn in turns:
                if turn.session != n or turn.outcome != "completed":
                    continue
                answer = by_id.get(turn.message_id or "")
                if (
                    turn.message not in users
                    or answer is None
                    or answer["content"] != ANSWER
                    or (answer.get("metadata") or {}).get("partial")
                ):
                    lost.append(f"session {n} turn {turn.number}")
    say(f"W4 with a SIGKILL: done ({load()})")
    return KillFigures(turns, rate, lost, invalid, len(sessions))


# ======================================================================= set-up
def scripted_reply(request: RecordedRequest) -> Reply:
    """The answer, or a title when the request asks for one."""
    if any("Write a title" in str(m.get("content")) for m in request.messages):
        return Reply(text=TITLE, chunk=6)
    return Reply(text=ANSWER, chunk=6)


def serve_llm() -> None:
    """The child: the scripted LLM server, until SIGTERM (prints ``READY <base_url>``)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ScriptedOpenAIServer(api_key=API_KEY, default=scripted_reply) as llm:
        print(f"READY {llm.base_url}", flush=True)
        stop.wait()


@contextlib.contextmanager
def llm_process() -> Iterator[str]:
    """The scripted LLM server in a child process (it would otherwise take CPU from this
    process's clients); yields its base URL."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.bench_replicas", "--serve-llm"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=die_with_parent(signal.SIGKILL),
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the scripted LLM server did not start: {line!r}")
        yield line.split(" ", 1)[1].strip()
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def pg_env(url: str, schema: str, prefix: str, key: str) -> dict[str, str]:
    return {
        "COPILOT_DATABASE_URL": url,
        "COPILOT_DATABASE_SCHEMA": schema,
        "COPILOT_REDIS_URL": REDIS_URL,
        "COPILOT_REDIS_PREFIX": prefix,
        "COPILOT_SECRET_KEY": key,
        "COPILOT_TURN_LEASE": str(LEASE),
        "COPILOT_LOG_LEVEL": "warning",
    }


def replicas(
    stack: contextlib.ExitStack, gns3: RealGns3Server, root: Path, env: dict[str, str], count: int
) -> list[ServedCopilot]:
    """``count`` replicas started one after the other, stopped when ``stack`` closes."""
    served = []
    for n in range(count):
        where = root / f"replica-{n}"
        where.mkdir(parents=True)
        served.append(stack.enter_context(serve_copilot(gns3.url, where, env=env)))
    return served


def delete_prefix(prefix: str) -> None:
    with redis.Redis.from_url(REDIS_URL) as client:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=500))
        if keys:
            client.delete(*keys)


def make_project(gns3: RealGns3Server, token: str) -> str:
    return gns3.new_project("bench-replicas", token)


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    prefix = f"copilot-bench-{uuid.uuid4().hex[:8]}"
    key = Fernet.generate_key().decode()
    with (
        tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp,
        RealGns3Server(console_ports=(28400, 28499), udp_ports=(28500, 28599)) as gns3,
        llm_process() as llm_url,
        bench_database() as (database, version),
    ):
        root = Path(tmp)
        token = gns3.token()
        project = make_project(gns3, token)
        notes.append(f"PostgreSQL {version}; {load()} at the start")
        try:
            variants = (
                ("SQLite, one process", None, 1),
                ("PostgreSQL + Redis, one replica", "one", 1),
                ("PostgreSQL + Redis, two replicas", "two", 2),
            )
            with contextlib.ExitStack() as stack:
                urls: dict[str, Sequence[str]] = {}
                for name, schema, count in variants:
                    env = (
                        {"COPILOT_LOG_LEVEL": "warning"}
                        if schema is None
                        else pg_env(database, schema, f"{prefix}-{schema}", key)
                    )
                    served = replicas(stack, gns3, root / (schema or "sqlite"), env, count)
                    configure_llm(served[0].url, token, llm_url, API_KEY)
                    urls[name] = [s.url for s in served]
                figures = asyncio.run(measure(urls, token, project, settings))
            env = pg_env(database, "killed", f"{prefix}-killed", key)
            with contextlib.ExitStack() as stack:
                a, b = replicas(stack, gns3, root / "killed", env, 2)
                configure_llm(b.url, token, llm_url, API_KEY)
                killed = asyncio.run(measure_kill(a, b, token, project, settings))
        finally:
            for schema in ("one", "two", "killed"):
                delete_prefix(f"{prefix}-{schema}")
        notes.append(f"{load()} at the end")
    sqlite, one, two = (figures[name] for name, _, _ in variants)
    label = f"W4 {settings.sessions}x{settings.turns_per_session}"
    for name, side in (("one replica", one), ("two replicas", two)):
        rows.append(
            Row(
                f"W1 turn (new session), p50: PostgreSQL + Redis, {name}",
                "ms",
                statistics.median(sqlite.w1) * 1e3,
                statistics.median(side.w1) * 1e3,
                "<= 1.5x SQLite",
                1.5,
            )
        )
    for name, side in (("one replica", one), ("two replicas", two)):
        rows.append(Row(f"{label}: turns/s: {name}", "turn/s", sqlite.w4_rate, side.w4_rate))
        for q in (50, 99):
            rows.append(
                Row(
                    f"{label}: p{q}: {name}",
                    "ms",
                    percentile(sqlite.w4, q) * 1e3,
                    percentile(side.w4, q) * 1e3,
                )
            )
    rows.append(
        Row(
            f"{label}: p99, two replicas against one (baseline: one replica)",
            "ms",
            percentile(one.w4, 99) * 1e3,
            percentile(two.w4, 99) * 1e3,
            "<= one replica",
            1.0,
        )
    )
    outcomes: dict[str, int] = {}
    for turn in killed.turns:
        outcomes[turn.outcome] = outcomes.get(turn.outcome, 0) + 1
    total = len(killed.turns)
    completed = [t.seconds for t in killed.turns if t.outcome == "completed" and t.seconds]
    kill_label = f"{label}, replica A SIGKILLed half-way"
    rows.append(Row(f"{kill_label}: turns/s", "turn/s", None, killed.rate))
    for q in (50, 99):
        rows.append(
            Row(f"{kill_label}: completed turns, p{q}", "ms", None, percentile(completed, q) * 1e3)
        )
    rows.append(Row(f"{kill_label}: completed", "turns", None, outcomes.get("completed", 0)))
    rows.append(
        Row(
            f"{kill_label}: ended with error replica_lost, then done",
            "turns",
            None,
            outcomes.get("replica_lost", 0),
        )
    )
    others = total - outcomes.get("completed", 0) - outcomes.get("replica_lost", 0)
    rows.append(
        Row(
            f"{kill_label}: hung, cut or otherwise (of {total})",
            "turns",
            None,
            others,
            "0",
            0,
            absolute=True,
        )
    )
    rows.append(
        Row(
            f"{kill_label}: done turns missing from the history",
            "turns",
            None,
            len(killed.lost),
            "0",
            0,
            absolute=True,
        )
    )
    rows.append(
        Row(
            f"{kill_label}: invalid histories (of {killed.sessions})",
            "sessions",
            None,
            len(killed.invalid),
            "0",
            0,
            absolute=True,
        )
    )
    re_attached = sum(t.re_attached for t in killed.turns)
    sent_again = sum(t.sent_again for t in killed.turns)
    notes.append(
        f"SIGKILL run: outcomes {dict(sorted(outcomes.items()))}; {re_attached} turns "
        f"re-attached on the survivor, {sent_again} sent again there"
    )
    notes.extend(killed.lost[:10])
    notes.extend(killed.invalid[:10])
    notes.extend(
        f"turn {t.session}/{t.number}: {t.outcome} (error {t.error_code})"
        for t in killed.turns
        if t.outcome not in ("completed", "replica_lost")
    )
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few turns")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--serve-llm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_llm:
        serve_llm()
        return 0
    settings = QUICK if args.quick else FULL
    started = time.perf_counter()
    rows, notes = run(settings)
    print(
        f"bench_replicas: Python {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"serve subprocesses, a real gns3-server, the scripted LLM (zero delay), "
        f"turn lease {LEASE:g} s; W1: medians of {settings.w1_turns} turns after "
        f"{settings.warmup} warm-up turns; baseline = SQLite in one process; "
        f"run took {time.perf_counter() - started:.0f} s"
    )
    for note in notes:
        print(note)
    print()
    print_table(rows)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": [r.to_json() for r in rows]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
