"""What the in-memory turn log keeps of a long answer while the turn is retained."""

from __future__ import annotations

import gc

from copilot_core import InMemoryTurnLog, TurnEvent
from copilot_core.events import ContentEvent, DoneEvent
from copilot_core.ports import TurnControl, TurnInfo


async def test_a_retained_answer_keeps_its_tokens_as_text_not_as_event_objects() -> None:
    # Thousands of tokens stay for the retention after the turn: kept as event objects,
    # each would be one more object for the garbage collector to visit on every pass.
    def events_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, ContentEvent | TurnEvent))

    before = events_alive()  # (other tests' events may still be around)
    log = InMemoryTurnLog(retention=60)
    info = TurnInfo("t1", "p1", "s1", "alice")
    await log.open(info, TurnControl())
    for n in range(2000):
        log.append(info.turn_id, ContentEvent(f" token{n}"))
    log.append(info.turn_id, DoneEvent(None))
    await log.close(info.turn_id)

    assert events_alive() <= before
    replayed = [event async for event in log.subscribe(info.turn_id)]
    assert [e.event for e in replayed[:2]] == [ContentEvent(" token0"), ContentEvent(" token1")]
    assert (replayed[-1].seq, replayed[-1].event) == (2001, DoneEvent(None))
