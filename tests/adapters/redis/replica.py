"""A replica of the service as the Redis tests see it: the turn log, the session leases
and the turn control relay on one client and one prefix, and the steps the turn runner
takes with them (claim, open, attach; detach, release, close)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from adapters.redis import RedisSessionLeases, RedisTurnControlRelay, RedisTurnLog
from copilot_core.events import ApprovalResolvedEvent, TurnEvent, WireEvent
from copilot_core.ports import (
    ApprovalDecision,
    DecisionOutcome,
    SessionClaim,
    TurnControl,
    TurnInfo,
    TurnState,
)

__all__ = ["Replica"]


@dataclass(eq=False)
class Replica:
    log: RedisTurnLog
    leases: RedisSessionLeases
    relay: RedisTurnControlRelay
    turns: dict[str, tuple[TurnInfo, SessionClaim]] = field(default_factory=dict)

    @classmethod
    def on(
        cls, client: aioredis.Redis, *, prefix: str, lease: float = 15.0, name: str | None = None
    ) -> Replica:
        return cls(
            RedisTurnLog(client, prefix=prefix, lease=lease, replica=name),
            RedisSessionLeases(client, prefix=prefix, lease=lease, replica=name),
            RedisTurnControlRelay(client, prefix=prefix, lease=lease, replica=name),
        )

    @property
    def prefix(self) -> str:
        return self.log.prefix

    @property
    def client(self) -> aioredis.Redis:
        return self.log.client

    async def start(self) -> None:
        for part in (self.log, self.leases, self.relay):
            await part.start()

    async def stop(self) -> None:
        for part in (self.relay, self.leases, self.log):
            await part.stop()

    def hang(self) -> None:
        """As if the replica hung: no more renewals, no more listening."""
        tasks = [self.log._renewals.task, self.leases._renewals.task, self.relay._renewals.task]
        for task in [*tasks, self.relay._listener]:
            if task is not None:
                task.cancel()

    # ----------------------------------------------------- the runner's steps
    async def open(self, turn: TurnInfo, control: TurnControl) -> None:
        claim = await self.leases.claim(turn.project_id, turn.session_id, turn.turn_id)

        def lost() -> None:
            control.abort.abort(claim.lost.reason or "lost")

        claim.lost.on_abort(lost)
        await self.log.open(turn, control.abort)
        await self.relay.attach(turn, control)
        self.turns[turn.turn_id] = (turn, claim)

    async def expect(self, turn: TurnInfo, approval_id: str) -> asyncio.Future[ApprovalDecision]:
        return await self.relay.expect(turn, approval_id)

    def append(self, turn_id: str, event: WireEvent) -> TurnEvent:
        if isinstance(event, ApprovalResolvedEvent):
            self.relay.resolved(self.turns[turn_id][0], event.approval_id)
        return self.log.append(turn_id, event)

    async def let_go(self, turn_id: str) -> None:
        """The turn's work is saved: detach it and release its session."""
        turn, claim = self.turns.pop(turn_id)
        await self.relay.detach(turn)
        await self.leases.release(claim)

    async def close(self, turn_id: str) -> None:
        """End the turn (its ``done`` appended), letting go first if it has not."""
        if turn_id in self.turns:
            await self.let_go(turn_id)
        await self.log.close(turn_id)

    # ----------------------------------------------------------- any replica
    def subscribe(self, turn_id: str, after: int = 0) -> AsyncIterator[TurnEvent]:
        return self.log.subscribe(turn_id, after=after)

    async def find(self, project_id: str, session_id: str) -> TurnState | None:
        return await self.log.find(project_id, session_id)

    async def flush(self, turn_id: str) -> None:
        await self.log.flush(turn_id)

    async def request_abort(self, project_id: str, session_id: str, reason: str) -> bool:
        return await self.relay.request_abort(project_id, session_id, reason)

    async def send_decision(
        self, project_id: str, session_id: str, approval_id: str, decision: ApprovalDecision
    ) -> DecisionOutcome:
        return await self.relay.send_decision(project_id, session_id, approval_id, decision)


@contextlib.asynccontextmanager
async def started(replica: Replica) -> AsyncIterator[Replica]:
    await replica.start()
    try:
        yield replica
    finally:
        await replica.stop()
