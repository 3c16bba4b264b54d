"""Approvals across replicas on one Redis: a decision sent on a replica that does not run
the turn reaches the one that does, and is answered honestly from anywhere (accepted
once, already decided after, unknown when there is nothing to decide); a replica that
does not run the turn sees its pending approvals; a decision the owner missed still
arrives; the owner's lapse and a remote decision racing are settled by the owner."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from copilot_core.events import (
    ApprovalRequiredEvent,
    ApprovalResolvedEvent,
    ContentEvent,
    DoneEvent,
    TurnEvent,
)
from copilot_core.ports import ApprovalDecision, DecisionOutcome, TurnControl
from tests.adapters.redis.test_replicas import PROJECT, info, replicas
from tests.real_redis import RedisForTests

YES = ApprovalDecision(True, user_id="alice", comment="go")
NO = ApprovalDecision(False, user_id="alice", comment="no")


def asked(approval_id: str, device: str = "PC1") -> ApprovalRequiredEvent:
    return ApprovalRequiredEvent(
        approval_id,
        f"call-{approval_id}",
        "execute_multiple_device_config_commands",
        {"device_configs": [{"device_name": device, "config_commands": ["ip 10.0.0.1/24"]}]},
        {"summary": "configure", "devices": {device: ["ip 10.0.0.1/24"]}, "topology": []},
    )


def resolved(approval_id: str, decision: ApprovalDecision) -> ApprovalResolvedEvent:
    return ApprovalResolvedEvent(
        approval_id,
        f"call-{approval_id}",
        "approve" if decision.approve else "reject",
        decision.user_id,
        decision.comment,
        decision.reason,
    )


async def settled(future: asyncio.Future[Any]) -> Any:
    return await asyncio.wait_for(asyncio.shield(future), 5)


async def test_a_decision_sent_on_another_replica_reaches_the_turn_and_is_accepted_once(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        waiting = await a.expect(turn, "ap-1")
        a.append(turn.turn_id, asked("ap-1"))
        await a.flush(turn.turn_id)

        assert await b.send_decision(PROJECT, "s1", "no-such", YES) is DecisionOutcome.UNKNOWN
        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ACCEPTED
        assert await settled(waiting) == YES
        # A second decision, before the turn wrote its resolution: refused on both sides.
        assert await b.send_decision(PROJECT, "s1", "ap-1", NO) is DecisionOutcome.ALREADY_DECIDED
        assert await a.send_decision(PROJECT, "s1", "ap-1", NO) is DecisionOutcome.ALREADY_DECIDED
        a.append(turn.turn_id, resolved("ap-1", YES))
        await a.flush(turn.turn_id)
        assert await b.send_decision(PROJECT, "s1", "ap-1", NO) is DecisionOutcome.ALREADY_DECIDED
        assert await a.send_decision(PROJECT, "s1", "ap-1", NO) is DecisionOutcome.ALREADY_DECIDED
        assert await b.send_decision(PROJECT, "s2", "ap-1", YES) is DecisionOutcome.UNKNOWN

        a.append(turn.turn_id, DoneEvent(None, ""))
        await a.close(turn.turn_id)
        for replica in (a, b):  # no open turn any more
            assert (
                await replica.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.UNKNOWN
            )
        assert waiting.result() == YES


async def test_a_decision_the_owner_took_on_its_own_side_is_refused_on_the_other_replica(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        waiting = await a.expect(turn, "ap-1")
        a.append(turn.turn_id, asked("ap-1"))
        await a.flush(turn.turn_id)
        # The owner's client decided through A (Redis still says "waiting").
        assert control.decide("ap-1", NO) is DecisionOutcome.ACCEPTED

        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ALREADY_DECIDED
        assert waiting.result() == NO


async def test_an_approval_that_lapsed_refuses_a_late_decision_from_another_replica(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        first = await a.expect(turn, "ap-1")
        a.append(turn.turn_id, asked("ap-1"))
        await a.flush(turn.turn_id)
        # The race: the runner lets ap-1 lapse (its TurnControl takes the timeout) while
        # its approval_resolved is not in Redis yet; a decision sent on B meanwhile
        # finds "waiting" there, and the owner answers that it came too late.
        lapsed = ApprovalDecision(False, reason="timeout")
        assert control.decide("ap-1", lapsed) is DecisionOutcome.ACCEPTED
        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ALREADY_DECIDED
        assert first.result() == lapsed
        a.append(turn.turn_id, resolved("ap-1", lapsed))
        await a.flush(turn.turn_id)
        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ALREADY_DECIDED

        # The plain case: the lapse is in Redis before the late decision comes.
        second = await a.expect(turn, "ap-2")
        a.append(turn.turn_id, asked("ap-2"))
        aborted = ApprovalDecision(False, reason="aborted")
        assert control.decide("ap-2", aborted) is DecisionOutcome.ACCEPTED
        a.append(turn.turn_id, resolved("ap-2", aborted))
        await a.flush(turn.turn_id)
        assert await b.send_decision(PROJECT, "s1", "ap-2", YES) is DecisionOutcome.ALREADY_DECIDED
        assert second.result() == aborted


async def test_another_replica_sees_the_pending_approvals_until_they_are_resolved(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        state = await b.find(PROJECT, "s1")
        assert state is not None and state.pending == ()
        await a.expect(turn, "ap-1")
        await a.expect(turn, "ap-2")
        a.append(turn.turn_id, ContentEvent("I will address PC1 and PC2."))
        a.append(turn.turn_id, asked("ap-1", "PC1"))
        a.append(turn.turn_id, ContentEvent("and"))
        a.append(turn.turn_id, asked("ap-2", "PC2"))
        await a.flush(turn.turn_id)

        state = await b.find(PROJECT, "s1")
        assert state is not None
        assert (state.last_seq, state.finished) == (4, False)
        assert state.pending == (
            TurnEvent(2, "s1", asked("ap-1", "PC1")),
            TurnEvent(4, "s1", asked("ap-2", "PC2")),
        )
        assert state.pending == (await a.find(PROJECT, "s1")).pending  # type: ignore[union-attr]

        # Decided from B: still pending until the turn resolves it, as on A.
        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ACCEPTED
        state = await b.find(PROJECT, "s1")
        assert state is not None and [e.seq for e in state.pending] == [2, 4]
        a.append(turn.turn_id, resolved("ap-1", YES))
        await a.flush(turn.turn_id)
        state = await b.find(PROJECT, "s1")
        assert state is not None
        assert state.pending == (TurnEvent(4, "s1", asked("ap-2", "PC2")),)

        lapsed = ApprovalDecision(False, reason="timeout")
        control.decide("ap-2", lapsed)
        a.append(turn.turn_id, resolved("ap-2", lapsed))
        await a.flush(turn.turn_id)
        state = await b.find(PROJECT, "s1")
        assert state is not None and (state.last_seq, state.pending) == (6, ())

        a.append(turn.turn_id, asked("ap-3"))  # left waiting when the turn ends
        a.append(turn.turn_id, DoneEvent(None, ""))
        await a.close(turn.turn_id)
        state = await b.find(PROJECT, "s1")
        assert state is not None and (state.finished, state.pending) == (True, ())


async def test_a_decision_the_owner_did_not_hear_arrives_with_its_next_lease_renewal(
    redis_server: RedisForTests, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="adapters.redis._relay")
    async with replicas(redis_server, lease=0.6) as (_, (a, b)):
        # B waits for A's answer longer than the test may take: only A's renewal can
        # answer it in time (B giving up would answer ``accepted`` too, and say so).
        b.relay.decision_wait = 3600
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        waiting = await a.expect(turn, "ap-1")
        a.append(turn.turn_id, asked("ap-1"))
        await a.flush(turn.turn_id)
        assert a.relay._listener is not None
        a.relay._listener.cancel()  # A's listener is away (reconnecting): the message is lost

        outcome = await b.send_decision(PROJECT, "s1", "ap-1", YES)

        assert outcome is DecisionOutcome.ACCEPTED
        assert await settled(waiting) == YES
        # Answered by A, which read the decision at its renewal: B neither stopped waiting
        # nor failed to wait (either is logged).
        assert not [r.getMessage() for r in caplog.records if r.name == "adapters.redis._relay"]


async def test_a_replica_that_does_not_answer_has_the_decision_recorded_for_later(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        b.relay.decision_wait = 0.3
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        waiting = await a.expect(turn, "ap-1")
        a.append(turn.turn_id, asked("ap-1"))
        await a.flush(turn.turn_id)
        a.hang()  # it neither listens nor renews

        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ACCEPTED
        assert not waiting.done()
        assert await b.send_decision(PROJECT, "s1", "ap-1", NO) is DecisionOutcome.ALREADY_DECIDED

        await a.relay._catch_up()  # A's listener is back: it reads what it missed
        assert await settled(waiting) == YES


async def test_a_decision_for_a_turn_whose_replica_died_is_unknown_and_ends_the_turn(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server, lease=0.4) as (_, (a, b)):
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        await a.expect(turn, "ap-1")
        a.append(turn.turn_id, asked("ap-1"))
        await a.flush(turn.turn_id)
        a.hang()  # A dies: its lease, its turn's writer key and control hash run out
        keys = [
            f"{b.prefix}:lease:{PROJECT}:s1",
            f"{b.prefix}:control:{PROJECT}:s1",
            f"{b.prefix}:turn:{turn.turn_id}:writer",
        ]
        async with asyncio.timeout(5):
            while await b.client.exists(*keys):
                await asyncio.sleep(0.05)

        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.UNKNOWN

        state = await b.find(PROJECT, "s1")
        assert state is not None and (state.finished, state.pending) == (True, ())
        assert state.last_seq == 3  # approval_required, then replica_lost's error and done


async def test_the_owners_clients_see_an_approval_only_once_another_replica_can_decide_it(
    redis_server: RedisForTests,
) -> None:
    async with replicas(redis_server) as (_, (a, b)):
        turn = info()
        control = TurnControl()
        await a.open(turn, control)
        # Hold A's event writes to Redis back (the Redis behind them is the real one).
        gate = asyncio.Event()
        write = a.log._append_script

        async def held(*args: Any, **kwargs: Any) -> Any:
            await gate.wait()
            return await write(*args, **kwargs)

        a.log._append_script = held  # type: ignore[assignment]
        seen: list[TurnEvent] = []

        async def follow_on_a() -> None:
            async for event in a.subscribe(turn.turn_id):
                seen.append(event)

        follower = asyncio.create_task(follow_on_a())
        await a.expect(turn, "ap-1")
        a.append(turn.turn_id, ContentEvent("Setting PC1's address."))
        a.append(turn.turn_id, asked("ap-1"))
        found_on_a = asyncio.create_task(a.find(PROJECT, "s1"))
        await asyncio.sleep(0.2)

        assert seen == []  # nothing before it is in Redis (the approval no more than the rest)
        assert not found_on_a.done()
        on_b = await b.find(PROJECT, "s1")
        assert on_b is not None and on_b.pending == ()
        # The approval was decidable from anywhere before any client could see it.
        assert await b.send_decision(PROJECT, "s1", "ap-1", YES) is DecisionOutcome.ACCEPTED

        gate.set()
        async with asyncio.timeout(5):
            while len(seen) < 2:
                await asyncio.sleep(0.01)
        state = await found_on_a
        assert [e.seq for e in state.pending] == [2]  # type: ignore[union-attr]
        on_b = await b.find(PROJECT, "s1")
        assert on_b is not None and [e.seq for e in on_b.pending] == [2]
        assert await b.send_decision(PROJECT, "s1", "ap-1", NO) is (DecisionOutcome.ALREADY_DECIDED)
        a.append(turn.turn_id, resolved("ap-1", YES))
        a.append(turn.turn_id, DoneEvent(None, ""))
        await a.close(turn.turn_id)
        await asyncio.wait_for(follower, 5)
        assert [e.seq for e in seen] == [1, 2, 3, 4]
