"""The turn pipeline against the bare limit, measured in one run.

Run: ``python -m tests.benchmarks.bench_turns`` (``--quick`` for a smoke run,
``--json FILE`` to keep the figures, ``--profile W`` to profile one workload in
process with cProfile). It prints figures and a table of targets; it asserts nothing.

The product is the real pipeline: :class:`~copilot_core.ChatService` with the
:class:`~copilot_core.BuiltinAgent`, a :class:`~adapters.sqlite.SqliteCheckpointStore`
on a temporary directory, and, over HTTP, the Litestar service of ``adapters.web`` on
uvicorn in a child process on 127.0.0.1, read by an httpx + httpx-sse client. The
model is a :class:`~copilot_core.testing.ScriptedLanguageModel` streaming at zero delay.

The baseline is measured in the same run, on the same machine, with the same bytes:
the wire events the product sent for the same workload, yielded by a plain async
generator and written as SSE lines, with bare ``sqlite3`` appends of the same message
JSON at the same points (in process); the same generator behind a minimal Litestar
app on uvicorn in a child process (over HTTP).

Workloads (see ``docs/performance.md``):

* W1 turn: one streamed tool call (~200 characters of arguments in 40 fragments), a
  2 KB tool result, a 300-token answer; new session and sessions of 50 and 500 turns.
* W2 stream: one 20,000-token answer.
* W3 storage: bytes on disk per turn after 100 turns; loading a 500-turn history.
* W4 concurrency: 50 sessions x 5 turns at once.
* Abort: abort request to ``abort`` event, while the model streams and while a tool runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import gc
import io
import json
import os
import platform
import pstats
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource
from litestar import Litestar, post
from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.sqlite import SqliteCheckpointStore
from adapters.web import WebDependencies, WebSettings, copilot_event, create_web_app
from adapters.web.testing import (
    InMemoryLLMConfigRepository,
    StaticAuthenticator,
    StaticProjectGate,
)
from copilot_core import (
    BuiltinAgent,
    ChatService,
    ChatSettings,
    Message,
    ModelSelection,
    Role,
    Session,
    SessionKey,
    SystemClock,
    ToolContext,
    ToolSpec,
    TurnRequest,
    UuidIdFactory,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.ports import (
    CallOptions,
    CheckpointStore,
    FinishDelta,
    FunctionCall,
    ModelDelta,
    Principal,
    TextDelta,
    ToolCall,
    Usage,
    UsageDelta,
)
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    Hang,
    ScriptedLanguageModel,
    StaticModelProvider,
    text_reply,
    tool_reply,
)
from entrypoints.cli import settle_heap
from tests.benchmarks.bench_store import BareSqlite
from tests.benchmarks.loopback import (
    ServerProcess,
    announce_ready,
    serve,
    sse_until,
    wait_for_stop,
)

__all__ = ["main"]

PROJECT = str(uuid.UUID(int=9))
TOKEN = "bench-token"
USER_ID = "u-bench"
MODULE = "tests.benchmarks.bench_turns"

# ================================================================== the workload
TOOL_NAME = "run_show_commands"
TOOL_ARGUMENTS = json.dumps(
    {
        "project_id": PROJECT,
        "nodes": ["R1", "R2", "R3"],
        "commands": ["show ip ospf neighbor", "show ip interface brief", "show ip route ospf"],
        "timeout": 30,
    }
)
ARGUMENT_CHUNK = 5  # ~200 characters in ~40 fragments
_ROWS = [
    {
        "node": f"R{n % 3 + 1}",
        "command": "show ip interface brief",
        "output": f"GigabitEthernet0/{n} 10.0.{n}.1 YES manual up up",
    }
    for n in range(14)
]
TOOL_OUTPUT = json.dumps({"status": "success", "results": _ROWS}, indent=2)
_WORDS = [
    "the",
    "OSPF",
    "neighbour",
    "R3",
    "is",
    "stuck",
    "in",
    "EXSTART",
    "because",
    "its",
    "MTU",
    "differs",
    "from",
    "R1",
    "and",
]
ANSWER_TOKENS = [" " + _WORDS[n % len(_WORDS)] for n in range(300)]
LONG_TOKENS = [" " + _WORDS[n % len(_WORDS)] for n in range(20_000)]
TOPOLOGY = {
    "nodes": [{"name": f"R{n}", "status": "started", "console": 5000 + n} for n in range(1, 4)],
    "links": [{"a": "R1", "b": "R2"}, {"a": "R2", "b": "R3"}],
}

W1_QUERY = "Why can't R1 reach R3 over OSPF in area 0?"
W2_QUERY = "long: write the whole runbook"
ABORT_STREAM_QUERY = "abort-stream: explain slowly"
ABORT_TOOL_QUERY = "abort-tool: wait for the device"


def _answer(tokens: Sequence[str]) -> list[Any]:
    return [*(TextDelta(token) for token in tokens), FinishDelta("stop"), UsageDelta(900, 300)]


def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[Any]:
    """The scripted model: which reply a call gets, from the conversation so far."""
    if messages[-1].role is Role.TOOL:
        return _answer(ANSWER_TOKENS)
    # The user's question, after the lab's state the service puts before it (<lab>…</lab>).
    query = messages[-1].content.rpartition("</lab>\n\n")[2]
    if query.startswith(W2_QUERY):
        return _answer(LONG_TOKENS)
    if query.startswith(ABORT_STREAM_QUERY):
        slow: list[Any] = []
        for _ in range(5000):
            slow += [TextDelta(" slowly"), Hang(0.002)]
        return [*slow, FinishDelta("stop")]
    call_id = "call_" + uuid.uuid4().hex[:24]
    if query.startswith(ABORT_TOOL_QUERY):
        return tool_reply(("wait_for_device", {}), ids=[call_id])
    return tool_reply((TOOL_NAME, TOOL_ARGUMENTS), chunk=ARGUMENT_CHUNK, ids=[call_id])


class ForgetfulModel:
    """A :class:`ScriptedLanguageModel` that does not keep every call's prompt (a
    benchmark of thousands of calls over long histories would measure that memory)."""

    def __init__(self, inner: ScriptedLanguageModel) -> None:
        self.inner = inner

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: CallOptions
    ) -> AsyncGenerator[ModelDelta, None]:
        self.inner.calls.clear()
        return self.inner.stream(messages, tools, options)


async def _wait_forever(arguments: dict[str, Any], context: ToolContext) -> str:
    await asyncio.Event().wait()
    return "never"


# ================================================================== the product
@dataclass
class Product:
    store: SqliteCheckpointStore
    chat: ChatService
    models: StaticModelProvider
    #: The same service keeping no history window between turns (every turn reads it).
    cold_chat: ChatService


@contextlib.asynccontextmanager
async def open_product(data_dir: Path) -> AsyncIterator[Product]:
    tools = FakeToolExecutor()
    tools.add(
        TOOL_NAME,
        lambda arguments, context: TOOL_OUTPUT,
        description="Run show commands on devices' consoles.",
        parameters={
            "type": "object",
            "properties": {
                "project_id": {"type": "string"},
                "nodes": {"type": "array", "items": {"type": "string"}},
                "commands": {"type": "array", "items": {"type": "string"}},
                "timeout": {"type": "integer"},
            },
        },
    )
    tools.add("wait_for_device", _wait_forever)
    clock, ids = SystemClock(), UuidIdFactory()
    agent = BuiltinAgent(tools, FakeTopologySource(TOPOLOGY), clock=clock, ids=ids)
    model = ForgetfulModel(ScriptedLanguageModel(default=script))
    title = ForgetfulModel(ScriptedLanguageModel(default=text_reply("OSPF from R1 to R3")))
    models = StaticModelProvider(ModelSelection(model, title_model=title))
    async with SqliteCheckpointStore(data_dir) as store:
        chat = build_chat_service(store, {"copilot": agent}, models=models, clock=clock, ids=ids)
        cold = build_chat_service(
            store,
            {"copilot": agent},
            models=models,
            clock=clock,
            ids=ids,
            settings=ChatSettings(history_cache_sessions=0),
        )
        try:
            yield Product(store, chat, models, cold)
        finally:
            await chat.shutdown(grace=2)
            await cold.shutdown(grace=2)


def product_app(product: Product) -> Litestar:
    return create_web_app(
        WebDependencies(
            chat=product.chat,
            authenticator=StaticAuthenticator({TOKEN: Principal(USER_ID, "bench")}),
            projects=StaticProjectGate(opened={PROJECT}),
            llm_config=InMemoryLLMConfigRepository(),
            models=product.models,
        ),
        settings=WebSettings(),
    )


def stored_turn(t: int) -> list[list[Message]]:
    """The appends of one W1 turn as the product stores them (for pre-filled sessions)."""
    at = SystemClock().now()
    call = ToolCall(id=f"call_{t}", function=FunctionCall(name=TOOL_NAME, arguments=TOOL_ARGUMENTS))
    return [
        [Message.user(f"u{t}-{uuid.uuid4()}", W1_QUERY, at)],
        [
            Message.assistant(f"a{t}-{uuid.uuid4()}", "", at, tool_calls=(call,)),
            Message.tool(f"t{t}-{uuid.uuid4()}", call.id, TOOL_NAME, TOOL_OUTPUT, at),
        ],
        [Message.assistant(f"f{t}-{uuid.uuid4()}", "".join(ANSWER_TOKENS), at)],
    ]


async def prefill(store: CheckpointStore, turns: int) -> str:
    """A session holding ``turns`` W1 turns, written through the store's own API."""
    thread_id = str(uuid.uuid4())
    now = SystemClock().now()
    await store.create_session(
        Session(
            thread_id=thread_id,
            user_id=USER_ID,
            project_id=PROJECT,
            title="pre-filled",
            created_at=now,
            updated_at=now,
            metadata={"agent_id": "copilot"},
        )
    )
    usage = Usage(llm_calls=1, input_tokens=900, output_tokens=300)
    for t in range(turns):
        for n, messages in enumerate(stored_turn(t)):
            await store.append_messages(PROJECT, thread_id, messages, usage=usage if n else None)
        await store.record_turn(PROJECT, thread_id, now)
    return thread_id


def sse_text(event_id: str, wire: dict[str, Any]) -> str:
    """One event as the SSE lines a server writes (the in-process consumers' work)."""
    data = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
    return f"id: {event_id}\ndata: {data}\n\n"


@dataclass
class Outcome:
    seconds: float
    events: int
    session_id: str
    wire: list[dict[str, Any]] = field(default_factory=list)
    messages: tuple[Message, ...] = ()


async def product_turn(
    chat: ChatService, query: str, session_id: str | None = None, keep: bool = False
) -> Outcome:
    """One turn in process, from the request to ``done``, its events written as SSE."""
    started = time.perf_counter()
    turn = await chat.start_turn(TurnRequest(PROJECT, USER_ID, query, session_id))
    written = 0
    wire: list[dict[str, Any]] = []
    last_seq = 0
    async for event in turn.subscribe():
        data = copilot_event(event)
        written += len(sse_text(f"{turn.turn_id}:{event.seq}", data))
        last_seq = event.seq
        if keep:
            wire.append(data)
    seconds = time.perf_counter() - started
    result = turn.result
    assert result is not None and result.error is None, result
    return Outcome(seconds, last_seq, turn.session_id, wire, result.messages)


def steps_of(messages: Sequence[Message]) -> list[list[Message]]:
    """The messages as the product saves them: each alone, tool results with their call."""
    units: list[list[Message]] = []
    for message in messages:
        if message.role is Role.TOOL and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


# ================================================================= the baseline
@dataclass
class Plan:
    """A turn's wire events, with its appends and counter update where the product
    makes them: what the bare generator replays."""

    steps: list[tuple[str, Any]]
    events: int
    message_bytes: int

    @classmethod
    def record(cls, outcome: Outcome) -> Plan:
        groups = [
            [json.dumps(m.to_dict(), ensure_ascii=False, separators=(",", ":")) for m in unit]
            for unit in steps_of(outcome.messages)
        ]
        steps: list[tuple[str, Any]] = [("append", groups[0])]
        pending = iter(groups[1:])
        wire = outcome.wire
        for n, event in enumerate(wire):
            if event["type"] == "done":
                steps += [("append", rest) for rest in pending]
                steps.append(("counters", None))
            steps.append(("event", event))
            following = wire[n + 1]["type"] if n + 1 < len(wire) else None
            if event["type"] == "tool_end" and following != "tool_end":
                steps.append(("append", next(pending)))
        size = sum(len(text.encode()) for unit in groups for text in unit)
        return cls(steps, len(wire), size)

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "events": self.events, "message_bytes": self.message_bytes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        steps = [(kind, value) for kind, value in data["steps"]]
        return cls(steps, data["events"], data["message_bytes"])


class BareLog(BareSqlite):
    """Bare sqlite3 appends (bench_store's baseline) plus the per-turn counter update."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.conn.execute("INSERT INTO sessions (user, pinned, counters) VALUES ('bench', 0, 0)")

    def count(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("UPDATE sessions SET counters = counters + 4 WHERE id = 1")
        self.conn.execute("COMMIT")


async def bare_events(plan: Plan, log: BareLog | None) -> AsyncIterator[dict[str, Any]]:
    """The plain async generator: the plan's events, its appends done inline."""
    for kind, value in plan.steps:
        if kind == "event":
            yield value
        elif log is not None:
            if kind == "append":
                log.append(value)
            else:
                log.count()


async def bare_turn(plan: Plan, log: BareLog | None) -> Outcome:
    started = time.perf_counter()
    written = 0
    events = 0
    async for data in bare_events(plan, log):
        events += 1
        written += len(sse_text(f"bare:{events}", data))
    return Outcome(time.perf_counter() - started, events, "bare")


def bare_app(plans: dict[str, Plan], log: BareLog) -> Litestar:
    """The minimal Litestar app: the same events from the same generator, as SSE."""

    @post("/stream", status_code=200)
    async def stream(data: dict[str, Any]) -> ServerSentEvent:
        plan = plans[data["workload"]]

        async def messages() -> AsyncIterator[ServerSentEventMessage]:
            seq = 0
            async for event in bare_events(plan, log):
                seq += 1
                text = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
                yield ServerSentEventMessage(data=text, id=f"bare:{seq}")

        return ServerSentEvent(messages())

    return Litestar([stream], logging_config=None)


# ===================================================================== HTTP side
@dataclass
class HttpTarget:
    """Where a client sends a turn: the product's route or the bare app's."""

    client: httpx.AsyncClient
    product: bool

    async def turn(
        self,
        query: str,
        workload: str,
        session_id: str | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> Outcome:
        if self.product:
            url = f"/v3/copilot/projects/{PROJECT}/chat/stream"
            body: dict[str, Any] = {"message": query, "session_id": session_id}
        else:
            url, body = "/stream", {"workload": workload}
        seen: list[str] = []

        def look(event: dict[str, Any]) -> None:
            if not seen:
                seen.append(str(event.get("session_id", "bare")))
            if on_event is not None:
                on_event(event)

        started = time.perf_counter()
        async with self.client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            events = await sse_until(response, on_event=look)
        return Outcome(time.perf_counter() - started, events, seen[0] if seen else "")


def http_client(base_url: str, connections: int = 16) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=httpx.Timeout(60.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


# ======================================================================= figures
def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


@dataclass
class Row:
    measure: str
    unit: str
    baseline: float | None
    product: float
    target: str = ""
    #: ``ratio <= limit`` (or ``>=`` when ``higher_is_better``), or an absolute bound.
    limit: float | None = None
    higher_is_better: bool = False
    absolute: bool = False

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        assert self.baseline is not None
        return self.product / self.baseline

    @property
    def met(self) -> bool | None:
        if self.limit is None:
            return None
        value = self.product if self.absolute else self.ratio
        if value is None:
            return None
        return value >= self.limit if self.higher_is_better else value <= self.limit

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "unit": self.unit,
            "baseline": self.baseline,
            "product": self.product,
            "ratio": self.ratio,
            "target": self.target,
            "met": self.met,
        }


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def print_table(rows: Sequence[Row]) -> None:
    header = ("measure", "unit", "baseline", "product", "ratio", "target", "met?")
    cells = [header] + [
        (
            row.measure,
            row.unit,
            _number(row.baseline),
            _number(row.product),
            "-" if row.ratio is None else f"{row.ratio:.2f}x",
            row.target or "",
            {True: "yes", False: "NO", None: ""}[row.met],
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    for n, line in enumerate(cells):
        print(
            "  ".join(
                cell.ljust(widths[i]) if i in (0, 1, 5, 6) else cell.rjust(widths[i])
                for i, cell in enumerate(line)
            )
        )
        if n == 0:
            print("  ".join("-" * width for width in widths))


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ===================================================================== workloads
@dataclass
class Settings:
    reps: int
    warmup: int
    stream_reps: int
    abort_tries: int
    sessions: int
    turns_per_session: int
    depths: tuple[int, ...] = (0, 50, 500)


FULL = Settings(reps=30, warmup=3, stream_reps=3, abort_tries=50, sessions=50, turns_per_session=5)
QUICK = Settings(reps=3, warmup=1, stream_reps=1, abort_tries=5, sessions=10, turns_per_session=2)


@dataclass
class Bench:
    root: Path
    settings: Settings
    rows: list[Row] = field(default_factory=list)
    plans: dict[str, Plan] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def row(self, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        return row

    # --------------------------------------------------------------- in process
    async def in_process(self) -> dict[int, str]:
        s = self.settings
        async with open_product(self.root / "in-process") as product:
            chat = product.chat
            sessions = {depth: await prefill(product.store, depth) for depth in s.depths if depth}
            # Its own session: a turn of the other service would change the first one's
            # message count, and so (rightly) invalidate the window it keeps.
            cold_session = await prefill(product.store, s.depths[-1])
            say(f"pre-filled sessions of {sorted(sessions)} turns")
            # Warm up and record the plans the baseline replays.
            for _ in range(s.warmup):
                w1 = await product_turn(chat, W1_QUERY, keep=True)
            self.plans["w1"] = Plan.record(w1)
            w2 = await product_turn(chat, W2_QUERY, keep=True)
            self.plans["w2"] = Plan.record(w2)
            log = BareLog(self.root / "bare-in-process.db")
            for _ in range(s.warmup):
                await bare_turn(self.plans["w1"], log)

            # ---- W1: one turn of each kind per round, product and baseline, in an order
            # shuffled every round: in a fixed order the garbage collector's periodic
            # passes (every so many allocations, and a round allocates about the same
            # each time) land on the same kind of turn round after round, and its median
            # carries them while the others' do not.
            deepest = s.depths[-1]
            plan = self.plans["w1"]
            kinds: dict[str, Callable[[], Awaitable[Outcome]]] = {
                **{
                    f"product-{depth}": functools.partial(
                        product_turn, chat, W1_QUERY, sessions.get(depth)
                    )
                    for depth in s.depths
                },
                "cold": functools.partial(product_turn, product.cold_chat, W1_QUERY, cold_session),
                "bare": functools.partial(bare_turn, plan, log),
                "generator": functools.partial(bare_turn, plan, None),
            }
            times: dict[str, list[float]] = {kind: [] for kind in kinds}
            order = random.Random(12)
            for _ in range(s.reps):
                for kind in order.sample(list(kinds), len(kinds)):
                    times[kind].append((await kinds[kind]()).seconds)
            product_times = {depth: times[f"product-{depth}"] for depth in s.depths}
            bare_times, gen_times, cold_times = times["bare"], times["generator"], times["cold"]
            base = statistics.median(bare_times)
            self.notes.append(
                f"W1: {plan.events} events a turn, {plan.message_bytes} bytes of messages; "
                f"bare generator alone {statistics.median(gen_times) * 1e3:.2f} ms, "
                f"with sqlite3 appends {base * 1e3:.2f} ms"
            )
            fresh = statistics.median(product_times[0])
            self.row(
                "W1 turn in process, new session",
                "ms",
                base * 1e3,
                fresh * 1e3,
                "<= 3x bare",
                3.0,
            )
            for depth in s.depths[1:]:
                self.row(
                    f"W1 turn in process, {depth} prior turns",
                    "ms",
                    base * 1e3,
                    statistics.median(product_times[depth]) * 1e3,
                )
            self.row(
                f"W1 turn in process, {deepest} prior turns, history read every turn",
                "ms",
                base * 1e3,
                statistics.median(cold_times) * 1e3,
            )
            self.row(
                f"W1 in process: {deepest} prior / new session",
                "ms",
                fresh * 1e3,
                statistics.median(product_times[deepest]) * 1e3,
                "<= 1.5x new",
                1.5,
            )
            self.row(
                "W1 events/s in process, new session",
                "ev/s",
                plan.events / base,
                plan.events / fresh,
            )

            # ---- W2
            p_times, b_times = [], []
            for _ in range(s.stream_reps):
                p_times.append((await product_turn(chat, W2_QUERY)).seconds)
                b_times.append((await bare_turn(self.plans["w2"], log)).seconds)
            tokens = len(LONG_TOKENS)
            self.row(
                "W2 stream in process",
                "tok/s",
                tokens / statistics.median(b_times),
                tokens / statistics.median(p_times),
            )

            # ---- abort
            await self.aborts_in_process(chat)
            log.close()
        return sessions

    async def aborts_in_process(self, chat: ChatService) -> None:
        for query, trigger, label in (
            (ABORT_STREAM_QUERY, "content", "while the model streams"),
            (ABORT_TOOL_QUERY, "tool_start", "while a tool runs"),
        ):
            latencies: list[float] = []
            session_id: str | None = None
            for _ in range(self.settings.abort_tries):
                turn = await chat.start_turn(TurnRequest(PROJECT, USER_ID, query, session_id))
                session_id = turn.session_id
                asked = 0.0
                async for event in turn.subscribe():
                    if event.type == trigger and not asked:
                        asked = time.perf_counter()
                        await chat.abort(SessionKey(PROJECT, session_id, USER_ID))
                    elif event.type == "abort":
                        latencies.append(time.perf_counter() - asked)
                await turn.wait()
            self.abort_rows(f"abort in process, {label}", latencies)

    def abort_rows(self, label: str, latencies: list[float]) -> None:
        self.row(f"{label}, p50", "ms", None, percentile(latencies, 50) * 1e3)
        self.row(
            f"{label}, p99",
            "ms",
            None,
            percentile(latencies, 99) * 1e3,
            "< 100 ms",
            100,
            False,
            True,
        )

    # ------------------------------------------------------------------- storage
    async def storage(self) -> None:
        turns = 100
        data = self.root / "storage"
        async with open_product(data) as product:
            session_id: str | None = None
            for _ in range(turns):
                outcome = await product_turn(product.chat, W1_QUERY, session_id)
                session_id = outcome.session_id
            path = await product.store.database_path(PROJECT)
            await product.store.close_project(PROJECT)  # checkpoints the WAL
            ours = _size_on_disk(path) / turns
        plan = self.plans["w1"]
        bare = BareLog(self.root / "bare-storage.db")
        for _ in range(turns):
            await bare_turn(plan, bare)
        bare.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        bare_size = _size_on_disk(bare.path) / turns
        bare.close()
        self.row(
            f"W3 bytes on disk per turn after {turns} turns",
            "B",
            plan.message_bytes,
            ours,
            "<= 1.5x message bytes",
            1.5,
        )
        self.row(
            f"W3 bare sqlite3 bytes per turn after {turns} turns",
            "B",
            plan.message_bytes,
            bare_size,
        )

        # Loading a 500-turn history: the store against fetch + json.loads.
        async with open_product(self.root / "load") as product:
            session_id = await prefill(product.store, 500)
            path = await product.store.database_path(PROJECT)
            conn = sqlite3.connect(path)
            (row_id,) = conn.execute(
                "SELECT id FROM chat_sessions WHERE thread_id = ?", (session_id,)
            ).fetchone()
            ours_times, bare_times = [], []
            for _ in range(self.settings.warmup + self.settings.reps):
                started = time.perf_counter()
                page = await product.store.history(PROJECT, session_id)
                ours_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                rows = conn.execute(
                    "SELECT message FROM chat_messages WHERE session_id = ? ORDER BY seq",
                    (row_id,),
                ).fetchall()
                loaded = [json.loads(text) for (text,) in rows]
                bare_times.append(time.perf_counter() - started)
            assert len(page.messages) == len(loaded) == 2000
            conn.close()
        skip = self.settings.warmup
        self.row(
            "W3 load a 500-turn history",
            "ms",
            statistics.median(bare_times[skip:]) * 1e3,
            statistics.median(ours_times[skip:]) * 1e3,
        )

    # ----------------------------------------------------------------- HTTP
    async def over_http(self) -> None:
        s = self.settings
        plans_file = self.root / "plans.json"
        plans_file.write_text(json.dumps({k: v.to_json() for k, v in self.plans.items()}))
        depths = ",".join(str(d) for d in s.depths if d)
        async with (
            ServerProcess(MODULE, "--serve", "product", "--data", str(self.root / "http"),
                          "--prefill", depths) as server,
            ServerProcess(MODULE, "--serve", "bare", "--data", str(self.root / "http-bare"),
                          "--plans", str(plans_file)) as bare_server,
            http_client(server.base_url) as client,
            http_client(bare_server.base_url) as bare_client,
        ):  # fmt: skip
            product = HttpTarget(client, product=True)
            bare = HttpTarget(bare_client, product=False)
            sessions: dict[int, str | None] = {0: None}
            sessions.update({int(k): v for k, v in server.info["sessions"].items()})
            for _ in range(s.warmup):
                await product.turn(W1_QUERY, "w1")
                await bare.turn(W1_QUERY, "w1")
            product_times: dict[int, list[float]] = {depth: [] for depth in s.depths}
            bare_times: list[float] = []
            for _ in range(s.reps):
                for depth in s.depths:
                    outcome = await product.turn(W1_QUERY, "w1", sessions[depth])
                    product_times[depth].append(outcome.seconds)
                bare_times.append((await bare.turn(W1_QUERY, "w1")).seconds)
            base = statistics.median(bare_times)
            fresh = statistics.median(product_times[0])
            self.row("W1 turn over HTTP, new session", "ms", base * 1e3, fresh * 1e3)
            for depth in s.depths[1:]:
                self.row(
                    f"W1 turn over HTTP, {depth} prior turns",
                    "ms",
                    base * 1e3,
                    statistics.median(product_times[depth]) * 1e3,
                )
            deepest = s.depths[-1]
            self.row(
                f"W1 over HTTP: {deepest} prior / new session",
                "ms",
                fresh * 1e3,
                statistics.median(product_times[deepest]) * 1e3,
                "<= 1.5x new",
                1.5,
            )
            events = self.plans["w1"].events
            self.row("W1 events/s over HTTP, new session", "ev/s", events / base, events / fresh)

            p_times, b_times = [], []
            await product.turn(W2_QUERY, "w2")
            await bare.turn(W2_QUERY, "w2")
            for _ in range(s.stream_reps):
                p_times.append((await product.turn(W2_QUERY, "w2")).seconds)
                b_times.append((await bare.turn(W2_QUERY, "w2")).seconds)
            tokens = len(LONG_TOKENS)
            self.row(
                "W2 stream over HTTP",
                "tok/s",
                tokens / statistics.median(b_times),
                tokens / statistics.median(p_times),
                ">= 0.5x bare Litestar",
                0.5,
                True,
            )
            await self.aborts_over_http(client)

    async def aborts_over_http(self, client: httpx.AsyncClient) -> None:
        url = f"/v3/copilot/projects/{PROJECT}/chat"
        for query, trigger, label in (
            (ABORT_STREAM_QUERY, "content", "while the model streams"),
            (ABORT_TOOL_QUERY, "tool_start", "while a tool runs"),
        ):
            latencies: list[float] = []
            session_id: str | None = None
            for _ in range(self.settings.abort_tries):
                asked = 0.0
                request: asyncio.Task[httpx.Response] | None = None
                body = {"message": query, "session_id": session_id}
                async with client.stream("POST", url + "/stream", json=body) as response:
                    response.raise_for_status()
                    async for sse in EventSource(response).aiter_sse():
                        event = json.loads(sse.data)
                        session_id = event["session_id"]
                        if event["type"] == trigger and request is None:
                            asked = time.perf_counter()
                            request = asyncio.create_task(
                                client.post(f"{url}/sessions/{session_id}/abort")
                            )
                        elif event["type"] == "abort":
                            latencies.append(time.perf_counter() - asked)
                        elif event["type"] == "done":
                            break
                assert request is not None
                (await request).raise_for_status()
            self.abort_rows(f"abort over HTTP, {label}", latencies)

    # ------------------------------------------------------------ concurrency
    async def concurrency(self) -> None:
        s = self.settings
        count = s.sessions * s.turns_per_session

        async def sessions_at_once(
            turn: Callable[[str | None], Awaitable[Outcome]],
        ) -> tuple[float, list[float]]:
            latencies: list[float] = []

            async def one_session() -> None:
                session_id: str | None = None
                for _ in range(s.turns_per_session):
                    outcome = await turn(session_id)
                    session_id = outcome.session_id
                    latencies.append(outcome.seconds)

            started = time.perf_counter()
            async with asyncio.TaskGroup() as group:
                for _ in range(s.sessions):
                    group.create_task(one_session())
            return time.perf_counter() - started, latencies

        # In process.
        async with open_product(self.root / "w4") as product:
            await product_turn(product.chat, W1_QUERY)
            log = BareLog(self.root / "bare-w4.db")
            plan = self.plans["w1"]
            p_total, p_lat = await sessions_at_once(
                lambda sid: product_turn(product.chat, W1_QUERY, sid)
            )
            b_total, b_lat = await sessions_at_once(lambda sid: bare_turn(plan, log))
            log.close()
        label = f"W4 {s.sessions}x{s.turns_per_session} in process"
        self.row(f"{label}: turns/s", "turn/s", count / b_total, count / p_total)
        self.row(f"{label}: p50", "ms", percentile(b_lat, 50) * 1e3, percentile(p_lat, 50) * 1e3)
        self.row(f"{label}: p99", "ms", percentile(b_lat, 99) * 1e3, percentile(p_lat, 99) * 1e3)

        # Over HTTP, each server a fresh process (so its peak RSS is this workload's).
        plans_file = self.root / "plans.json"
        async with (
            ServerProcess(MODULE, "--serve", "product", "--data", str(self.root / "w4-http"))
            as server,
            ServerProcess(MODULE, "--serve", "bare", "--data", str(self.root / "w4-http-bare"),
                          "--plans", str(plans_file)) as bare_server,
            http_client(server.base_url, s.sessions) as client,
            http_client(bare_server.base_url, s.sessions) as bare_client,
        ):  # fmt: skip
            product_http = HttpTarget(client, product=True)
            bare_http = HttpTarget(bare_client, product=False)
            for _ in range(s.warmup):
                await product_http.turn(W1_QUERY, "w1")
                await bare_http.turn(W1_QUERY, "w1")
            p_total, p_lat = await sessions_at_once(
                lambda sid: product_http.turn(W1_QUERY, "w1", sid)
            )
            b_total, b_lat = await sessions_at_once(lambda sid: bare_http.turn(W1_QUERY, "w1"))
            p_rss, b_rss = server.peak_rss_kib(), bare_server.peak_rss_kib()
        label = f"W4 {s.sessions}x{s.turns_per_session} over HTTP"
        self.row(f"{label}: turns/s", "turn/s", count / b_total, count / p_total)
        self.row(f"{label}: p50", "ms", percentile(b_lat, 50) * 1e3, percentile(p_lat, 50) * 1e3)
        self.row(
            f"{label}: p99",
            "ms",
            percentile(b_lat, 99) * 1e3,
            percentile(p_lat, 99) * 1e3,
            "<= 2x bare Litestar",
            2.0,
        )
        self.row(f"{label}: server peak RSS", "MiB", b_rss / 1024, p_rss / 1024, "stated")


def _size_on_disk(path: Path) -> int:
    files = [path, path.with_name(path.name + "-wal")]
    return sum(f.stat().st_size for f in files if f.exists())


# ========================================================================= runs
SECTIONS = ("process", "storage", "http", "concurrency")


async def run(root: Path, settings: Settings, sections: Sequence[str] = SECTIONS) -> dict[str, Any]:
    bench = Bench(root, settings)
    started = time.perf_counter()
    if "process" in sections or {"storage", "http", "concurrency"} & set(sections):
        # The other sections replay the plans recorded here.
        say("in process: W1, W2, abort ...")
        await bench.in_process()
    # This process keeps what the in-process section built (hundreds of thousands of
    # objects): a full collection of them took 200-270 ms, and one landing inside a timed
    # window of the client (an abort over HTTP) was counted as the server's. Frozen
    # objects are never scanned again.
    gc.collect()
    gc.freeze()
    if "storage" in sections:
        say("storage: W3 ...")
        await bench.storage()
    if "http" in sections:
        say("over HTTP: W1, W2, abort ...")
        await bench.over_http()
    if "concurrency" in sections:
        say("concurrency: W4 ...")
        await bench.concurrency()
    elapsed = time.perf_counter() - started
    print(
        f"\nbench_turns: Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs; medians of {settings.reps} turns "
        f"({settings.stream_reps} for W2) after {settings.warmup} warm-up turns; "
        f"run took {elapsed:.0f} s"
    )
    for note in bench.notes:
        print(note)
    print()
    print_table(bench.rows)
    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "cpus": os.cpu_count(),
        "seconds": elapsed,
        "notes": bench.notes,
        "rows": [row.to_json() for row in bench.rows],
    }


async def profile(root: Path, workload: str, turns: int) -> None:
    """cProfile of ``turns`` in-process turns of one workload, top functions printed."""
    async with open_product(root / "profile") as product:
        depth = {"w1": 0, "w1-50": 50, "w1-500": 500}.get(workload, 0)
        session_id = await prefill(product.store, depth) if depth else None
        query = W2_QUERY if workload == "w2" else W1_QUERY
        await product_turn(product.chat, query, session_id)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(turns):
            await product_turn(product.chat, query, session_id)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)
    print(out.getvalue())


async def serve_child(kind: str, data: Path, prefills: str, plans: dict[str, Plan] | None) -> None:
    """A child server: the product service or the minimal Litestar app."""
    from entrypoints.observability import configure_logging

    configure_logging("warning")  # as a production service at warning level
    if kind == "product":
        async with open_product(data) as product:
            depths = [int(d) for d in prefills.split(",") if d]
            sessions = {str(d): await prefill(product.store, d) for d in depths}
            async with serve(product_app(product)) as port:
                settle_heap()  # as `gns3-copilot serve` does once started
                announce_ready({"port": port, "sessions": sessions})
                await wait_for_stop()
    else:
        assert plans is not None
        log = BareLog(data / "bare.db")
        async with serve(bare_app(plans, log)) as port:
            announce_ready({"port": port})
            await wait_for_stop()
        log.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--profile", choices=["w1", "w1-50", "w1-500", "w2"], help="profile one workload"
    )
    parser.add_argument("--turns", type=int, default=30, help="turns to profile")
    parser.add_argument(
        "--only",
        action="append",
        choices=SECTIONS,
        help="run only these sections (repeatable; 'process' always runs: it records "
        "the baseline's events)",
    )
    parser.add_argument("--serve", choices=["product", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prefill", default="", help=argparse.SUPPRESS)
    parser.add_argument("--plans", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        plans = None
        if args.plans:
            raw = json.loads(Path(args.plans).read_text())
            plans = {name: Plan.from_json(value) for name, value in raw.items()}
        args.data.mkdir(parents=True, exist_ok=True)
        asyncio.run(serve_child(args.serve, args.data, args.prefill, plans))
        return
    from entrypoints.observability import configure_logging

    configure_logging("warning")
    with tempfile.TemporaryDirectory(prefix="bench-turns-") as root:
        if args.profile:
            asyncio.run(profile(Path(root), args.profile, args.turns))
        else:
            settings = QUICK if args.quick else FULL
            report = asyncio.run(run(Path(root), settings, args.only or SECTIONS))
            if args.json is not None:
                args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
