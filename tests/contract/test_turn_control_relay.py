"""The TurnControlRelay contract: one set of assertions, run on the in-memory relay and
on Redis. Each runs as an owner, which attaches the turn, and a sender, which asks for
an abort or sends a decision: in memory both are the one relay; on Redis they are two
relays on one key prefix (two replicas) of the real server (127.0.0.1:6379,
``tests/real_redis.py``). Every assertion is also made with the owner as the sender.

To add a relay, add one entry to ``RELAYS``: a name and an async context manager
factory that yields the owner and the sender given the test's request. Every wait below
is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable

import pytest

from adapters.redis import RedisTurnControlRelay
from copilot_core.bootstrap import InMemoryTurnControlRelay
from copilot_core.ports import (
    ApprovalDecision,
    DecisionOutcome,
    TurnControl,
    TurnControlRelay,
    TurnInfo,
)
from tests.real_redis import RedisForTests

Pair = tuple[TurnControlRelay, TurnControlRelay]
Factory = Callable[[pytest.FixtureRequest], contextlib.AbstractAsyncContextManager[Pair]]

PROJECT = "project-1"
YES = ApprovalDecision(True, user_id="alice", comment="go")
NO = ApprovalDecision(False, user_id="alice")
_turn_ids = itertools.count(1)


@contextlib.asynccontextmanager
async def _in_memory(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    relay = InMemoryTurnControlRelay()
    yield relay, relay


@contextlib.asynccontextmanager
async def _redis(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    redis: RedisForTests = request.getfixturevalue("redis_server")
    prefix = redis.new_prefix()
    async with redis.client() as client:
        made = [RedisTurnControlRelay(client, prefix=prefix) for _ in range(2)]
        for relay in made:
            await relay.start()
        try:
            yield made[0], made[1]
        finally:
            for relay in made:
                await relay.stop()
            await redis.delete_prefix(client, prefix)


RELAYS: dict[str, Factory] = {"in_memory": _in_memory, "redis": _redis}


@pytest.fixture(params=sorted(RELAYS))
async def relays(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    async with RELAYS[request.param](request) as pair:
        yield pair


def turn(session: str = "s1", *, project: str = PROJECT) -> TurnInfo:
    return TurnInfo(f"turn-{next(_turn_ids)}", project, session, "alice")


async def settled(future: asyncio.Future[ApprovalDecision]) -> ApprovalDecision:
    return await asyncio.wait_for(asyncio.shield(future), 5)


async def test_request_abort_fires_the_attached_turns_token(relays: Pair) -> None:
    owner, sender = relays
    info, other = turn("s1"), turn("s2")
    control, other_control = TurnControl(), TurnControl()
    await owner.attach(info, control)
    await owner.attach(other, other_control)

    assert await sender.request_abort(PROJECT, "s1", "stopped by alice") is True

    async with asyncio.timeout(5):
        await control.abort.wait()
    assert control.abort.reason == "stopped by alice"
    assert not other_control.abort.is_aborted()
    assert await owner.request_abort(PROJECT, "s2", "stopped on the owner") is True
    assert other_control.abort.reason == "stopped on the owner"


async def test_request_abort_is_false_when_no_turn_is_attached(relays: Pair) -> None:
    owner, sender = relays
    assert await sender.request_abort(PROJECT, "s1", "stop") is False
    info, control = turn(), TurnControl()
    await owner.attach(info, control)
    await owner.detach(info)

    for relay in (owner, sender):
        assert await relay.request_abort(PROJECT, "s1", "stop") is False
    assert not control.abort.is_aborted()


async def test_a_decision_reaches_the_turn_that_expects_it_once(relays: Pair) -> None:
    owner, sender = relays
    info, control = turn(), TurnControl()
    await owner.attach(info, control)
    waiting = await owner.expect(info, "ap-1")

    assert await sender.send_decision(PROJECT, "s1", "nope", YES) is DecisionOutcome.UNKNOWN
    assert await sender.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ACCEPTED
    assert await settled(waiting) == YES
    for relay in (sender, owner):  # a second one, before the turn has resolved it
        assert await relay.send_decision(PROJECT, "s1", "ap-1", NO) is (
            DecisionOutcome.ALREADY_DECIDED
        )
    owner.resolved(info, "ap-1")
    for relay in (sender, owner):
        assert await relay.send_decision(PROJECT, "s1", "ap-1", NO) is (
            DecisionOutcome.ALREADY_DECIDED
        )

    await owner.detach(info)
    for relay in (sender, owner):
        assert await relay.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.UNKNOWN
    assert waiting.result() == YES


async def test_a_decision_on_the_owners_side_is_refused_on_the_senders(relays: Pair) -> None:
    owner, sender = relays
    info, control = turn(), TurnControl()
    await owner.attach(info, control)
    waiting = await owner.expect(info, "ap-1")

    assert await owner.send_decision(PROJECT, "s1", "ap-1", NO) is DecisionOutcome.ACCEPTED

    assert await sender.send_decision(PROJECT, "s1", "ap-1", YES) is (
        DecisionOutcome.ALREADY_DECIDED
    )
    assert waiting.result() == NO


async def test_a_decision_bound_to_other_arguments_decides_nothing(relays: Pair) -> None:
    """The call's digest travels with the approval: a decision bound to other arguments is
    refused where it is sent, on either replica, and the right one is still taken."""
    owner, sender = relays
    info, control = turn(), TurnControl()
    await owner.attach(info, control)
    control.expect("ap-1", digest="sha256:the-call")
    waiting = await owner.expect(info, "ap-1")
    other = ApprovalDecision(True, user_id="alice", digest="sha256:other")
    right = ApprovalDecision(True, user_id="alice", digest="sha256:the-call")

    for relay in (sender, owner):
        assert await relay.send_decision(PROJECT, "s1", "ap-1", other) is (
            DecisionOutcome.OTHER_ARGUMENTS
        )
    assert not waiting.done()
    assert await sender.send_decision(PROJECT, "s1", "ap-1", right) is DecisionOutcome.ACCEPTED
    assert await settled(waiting) == right


async def test_a_decision_after_the_turn_let_the_approval_lapse_is_already_decided(
    relays: Pair,
) -> None:
    owner, sender = relays
    info, control = turn(), TurnControl()
    await owner.attach(info, control)
    first = await owner.expect(info, "ap-1")
    second = await owner.expect(info, "ap-2")
    lapsed = ApprovalDecision(False, reason="timeout")

    # The race: the turn takes the lapse before it has said so.
    assert control.decide("ap-1", lapsed) is DecisionOutcome.ACCEPTED
    assert await sender.send_decision(PROJECT, "s1", "ap-1", YES) is (
        DecisionOutcome.ALREADY_DECIDED
    )
    # The plain case: the lapse is said before the late decision comes.
    aborted = ApprovalDecision(False, reason="aborted")
    assert control.decide("ap-2", aborted) is DecisionOutcome.ACCEPTED
    owner.resolved(info, "ap-2")
    assert await sender.send_decision(PROJECT, "s1", "ap-2", YES) is (
        DecisionOutcome.ALREADY_DECIDED
    )

    assert (first.result(), second.result()) == (lapsed, aborted)


async def test_a_decision_for_a_session_without_an_attached_turn_is_unknown(
    relays: Pair,
) -> None:
    owner, sender = relays
    assert await sender.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.UNKNOWN
    info = turn("s2")
    await owner.attach(info, TurnControl())
    await owner.expect(info, "ap-1")

    for relay in (sender, owner):
        assert await relay.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.UNKNOWN
        assert await relay.send_decision("project-2", "s2", "ap-1", YES) is (
            DecisionOutcome.UNKNOWN
        )


async def test_the_sessions_next_turn_does_not_get_what_was_meant_for_the_last(
    relays: Pair,
) -> None:
    owner, sender = relays
    first, second = turn(), turn()
    first_control, second_control = TurnControl(), TurnControl()
    await owner.attach(first, first_control)
    await owner.expect(first, "ap-1")
    await owner.detach(first)
    await owner.attach(second, second_control)

    assert await sender.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.UNKNOWN
    assert await sender.request_abort(PROJECT, "s1", "stop") is True
    async with asyncio.timeout(5):
        await second_control.abort.wait()
    assert not first_control.abort.is_aborted()
