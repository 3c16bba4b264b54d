"""Approval decisions across replicas on the Redis turn log: how long a decision sent on
replica B takes to reach a turn that replica A runs, against the same decision sent on A.

Run: ``python -m tests.benchmarks.bench_redis`` (``--quick`` for a smoke run,
``--json FILE`` to keep the figures). It needs the Redis server of the tests
(``GNS3_COPILOT_TEST_REDIS_URL``, default ``redis://127.0.0.1:6379/0``), where it works
under a key prefix of its own and deletes its keys at the end. It prints figures and
asserts nothing.

Two replicas in one process (each a :class:`~adapters.redis.RedisTurnLog`,
:class:`~adapters.redis.RedisSessionLeases` and :class:`~adapters.redis.RedisTurnControlRelay`),
each with its own Redis client (so each has its own connections, as two processes would):

* The turn ports alone: A's turn asks for an approval (``approval_required`` written to
  Redis), then B sends the decision (``send_decision``): *delivered* is the time from
  the call to A's ``TurnControl`` holding it, *answered* the time until B has A's answer
  (what the HTTP request waits for). Also a late decision (already resolved: one script,
  no answer to wait for) and ``find`` on B with a pending approval.
* The whole pipeline: two :class:`~copilot_core.ChatService`\\ s (the built-in agent, the
  scripted model at zero delay, a tool whose calls wait for approval, one SQLite store)
  on A and B; a turn on A asks, the decision is sent through ``ChatService.decide`` on A
  (baseline) or on B (product), alternately; from the decision to ``approval_resolved``
  in A's stream, and to ``decide`` returning.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import platform
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

from adapters.redis import connect_redis
from adapters.sqlite import SqliteCheckpointStore
from copilot_core import (
    BuiltinAgent,
    ChatService,
    Message,
    ModelSelection,
    Role,
    SystemClock,
    TurnRequest,
    UuidIdFactory,
)
from copilot_core.bootstrap import build_chat_service
from copilot_core.events import ApprovalRequiredEvent, ApprovalResolvedEvent, DoneEvent
from copilot_core.ports import (
    ApprovalDecision,
    ChangePreview,
    DecisionOutcome,
    ToolSpec,
    TurnControl,
    TurnInfo,
)
from copilot_core.testing import (
    FakeToolExecutor,
    FakeTopologySource,
    ScriptedLanguageModel,
    StaticModelProvider,
    text_reply,
    tool_reply,
)
from tests.adapters.redis.replica import Replica
from tests.benchmarks.bench_turns import (
    PROJECT,
    TOPOLOGY,
    USER_ID,
    ForgetfulModel,
    Row,
    percentile,
    print_table,
)
from tests.real_redis import REDIS_URL

__all__ = ["main"]

TOOL = "configure_pc1"
PREVIEW = ChangePreview("configure PC1", devices={"PC1": ["ip 10.0.0.1/24"]})


@dataclass(frozen=True)
class Settings:
    decisions: int
    turns: int
    warmup: int


FULL = Settings(decisions=200, turns=200, warmup=20)
QUICK = Settings(decisions=40, turns=40, warmup=5)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def stamp(into: list[float], _: object) -> None:
    into.append(time.perf_counter())


def ms(seconds: float) -> float:
    return seconds * 1e3


def latency_rows(
    name: str, product: Sequence[float], baseline: Sequence[float] | None = None
) -> list[Row]:
    rows = []
    for q in (50, 99):
        base = ms(percentile(baseline, q)) if baseline else None
        rows.append(Row(f"{name}, p{q}", "ms", base, ms(percentile(product, q))))
    return rows


@contextlib.asynccontextmanager
async def replica(prefix: str, name: str) -> AsyncIterator[Replica]:
    client = await connect_redis(REDIS_URL)
    log = Replica.on(client, prefix=prefix, name=name)
    await log.start()
    try:
        yield log
    finally:
        await log.stop()
        await client.aclose()


async def delete_prefix(prefix: str) -> None:
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


# ==================================================================== the turn log
async def turn_log_part(settings: Settings, a: Replica, b: Replica) -> list[Row]:
    """Decisions sent on B to approvals of a turn A runs (one turn, many approvals)."""
    turn = TurnInfo(f"bench-{uuid.uuid4().hex[:8]}", PROJECT, "bench-log", USER_ID)
    control = TurnControl()
    await a.open(turn, control)
    delivered: list[float] = []
    answered: list[float] = []
    late: list[float] = []
    found: list[float] = []
    local: list[float] = []
    yes = ApprovalDecision(True, user_id=USER_ID)
    total = settings.warmup + settings.decisions
    for n in range(total):
        approval_id = f"ap-{n}"
        waiting = await a.expect(turn, approval_id)
        a.append(
            turn.turn_id,
            ApprovalRequiredEvent(approval_id, f"call-{n}", TOOL, {}, PREVIEW.to_dict()),
        )
        await a.flush(turn.turn_id)
        measured = n >= settings.warmup
        started = time.perf_counter()
        state = await b.find(PROJECT, turn.session_id)
        if measured:
            found.append(time.perf_counter() - started)
        assert state is not None and len(state.pending) == 1
        got: list[float] = []
        waiting.add_done_callback(functools.partial(stamp, got))
        started = time.perf_counter()
        outcome = await b.send_decision(PROJECT, turn.session_id, approval_id, yes)
        done = time.perf_counter()
        await asyncio.wait_for(asyncio.shield(waiting), 5)
        assert outcome is DecisionOutcome.ACCEPTED, outcome
        a.append(
            turn.turn_id,
            ApprovalResolvedEvent(approval_id, f"call-{n}", "approve", USER_ID),
        )
        await a.flush(turn.turn_id)
        again = time.perf_counter()
        refused = await b.send_decision(PROJECT, turn.session_id, approval_id, yes)
        refused_at = time.perf_counter()
        assert refused is DecisionOutcome.ALREADY_DECIDED, refused
        # The same decision sent on the replica running the turn (a fresh approval).
        await a.expect(turn, f"{approval_id}-local")
        a.append(
            turn.turn_id,
            ApprovalRequiredEvent(f"{approval_id}-local", f"call-{n}", TOOL, {}, PREVIEW.to_dict()),
        )
        local_started = time.perf_counter()
        mine = await a.send_decision(PROJECT, turn.session_id, f"{approval_id}-local", yes)
        local_done = time.perf_counter()
        assert mine is DecisionOutcome.ACCEPTED
        a.append(
            turn.turn_id,
            ApprovalResolvedEvent(f"{approval_id}-local", f"call-{n}", "approve", USER_ID),
        )
        if measured:
            delivered.append(got[0] - started)
            answered.append(done - started)
            late.append(refused_at - again)
            local.append(local_done - local_started)
    a.append(turn.turn_id, DoneEvent(None, ""))
    await a.close(turn.turn_id)
    return [
        *latency_rows("turn log: decision on B reaches A's turn (delivered)", delivered, local),
        *latency_rows("turn log: decision on B answered (accepted)", answered, local),
        *latency_rows("turn log: late decision on B (already decided)", late),
        *latency_rows("turn log: find on B with a pending approval", found),
    ]


# =================================================================== the pipeline
def model_script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[Any]:
    if messages[-1].role is Role.TOOL:
        return text_reply("PC1 now has 10.0.0.1/24.", chunk=8)
    return tool_reply((TOOL, {}), ids=["call_" + uuid.uuid4().hex[:24]])


def chat_service(store: SqliteCheckpointStore, log: Replica) -> ChatService:
    tools = FakeToolExecutor()
    tools.add(TOOL, lambda arguments, context: "ok", changes=lambda arguments: PREVIEW)
    clock, ids = SystemClock(), UuidIdFactory()
    agent = BuiltinAgent(tools, FakeTopologySource(TOPOLOGY), clock=clock, ids=ids)
    model = ForgetfulModel(ScriptedLanguageModel(default=model_script))
    title = ForgetfulModel(ScriptedLanguageModel(default=text_reply("PC1 address")))
    models = StaticModelProvider(ModelSelection(model, title_model=title))
    return build_chat_service(
        store,
        {"copilot": agent},
        models=models,
        clock=clock,
        ids=ids,
        turn_log=log.log,
        leases=log.leases,
        controls=log.relay,
    )


async def pipeline_part(settings: Settings, a: Replica, b: Replica) -> list[Row]:
    """Turns on A that ask for approval, decided through ChatService on A or on B."""
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        async with SqliteCheckpointStore(Path(tmp)) as store:
            on_a, on_b = chat_service(store, a), chat_service(store, b)
            resolved: dict[str, list[float]] = {"A": [], "B": []}
            answered: dict[str, list[float]] = {"A": [], "B": []}
            session_id: str | None = None
            total = settings.warmup + 2 * settings.turns
            try:
                for n in range(total):
                    where, decider = ("B", on_b) if n % 2 else ("A", on_a)
                    turn = await on_a.start_turn(
                        TurnRequest(PROJECT, USER_ID, "address PC1", session_id)
                    )
                    session_id = turn.session_id
                    asked = 0.0
                    deciding: asyncio.Task[None] | None = None
                    answer: list[float] = []
                    end = 0.0
                    async for event in turn.subscribe():
                        if isinstance(event.event, ApprovalRequiredEvent):
                            asked = time.perf_counter()
                            deciding = asyncio.create_task(
                                decider.decide(
                                    PROJECT,
                                    session_id,
                                    USER_ID,
                                    event.event.approval_id,
                                    approve=True,
                                )
                            )
                            deciding.add_done_callback(functools.partial(stamp, answer))
                        elif isinstance(event.event, ApprovalResolvedEvent):
                            end = time.perf_counter()
                    result = await turn.wait()
                    assert deciding is not None and result.error is None, result
                    await deciding
                    if n >= settings.warmup:
                        resolved[where].append(end - asked)
                        answered[where].append(answer[0] - asked)
            finally:
                await on_a.shutdown(grace=2)
                await on_b.shutdown(grace=2)
    return [
        *latency_rows(
            "pipeline: decide on B -> approval_resolved on A", resolved["B"], resolved["A"]
        ),
        *latency_rows("pipeline: decide on B -> request answered", answered["B"], answered["A"]),
    ]


async def run(settings: Settings) -> list[Row]:
    prefix = f"copilot-bench-{uuid.uuid4().hex[:8]}"
    try:
        async with replica(prefix, "a") as a, replica(prefix, "b") as b:
            say("turn log: decisions from replica B to replica A's turn…")
            rows = await turn_log_part(settings, a, b)
            say("pipeline: approvals decided on A and on B…")
            rows += await pipeline_part(settings, a, b)
    finally:
        await delete_prefix(prefix)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few repetitions")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    started = time.perf_counter()
    rows = asyncio.run(run(settings))
    server = redis.Redis.from_url(REDIS_URL).info("server")
    print(
        f"bench_redis: Python {platform.python_version()}, Redis {server['redis_version']} "
        f"on {REDIS_URL.split('@')[-1]}, redis-py {redis.__version__}; "
        f"{settings.decisions} decisions on the turn log and {settings.turns} turns per side "
        f"after {settings.warmup} warm-up; baseline = the same decision sent on the replica "
        f"running the turn, product = sent on the other replica; "
        f"run took {time.perf_counter() - started:.0f} s"
    )
    print()
    print_table(rows)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": [r.to_json() for r in rows]}, indent=2))


if __name__ == "__main__":
    main()
