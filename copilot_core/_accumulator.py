"""Streamed tool-call fragments in, growing ``tool_call`` events and parsed calls out."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from copilot_core._deltas import ToolCallDelta
from copilot_core._guards import ArgumentLimits, ArgumentMeter
from copilot_core._tools import ParsedToolCall
from copilot_core.events import ToolCallEvent

__all__ = ["Coalescing", "StoppedCall", "ToolCallAccumulator"]


@dataclass(frozen=True, slots=True)
class Coalescing:
    """How often a growing call is reported: at least ``interval`` seconds after its last
    report, and only once its arguments grew by ``growth`` of what was reported (at
    least one character), so a long argument streams in linear size: every report
    carries the whole text, and there are about log(size) of them after the first
    ``interval``-spaced ones. ``Coalescing()`` with zeros reports every fragment."""

    interval: float = 0.0
    growth: float = 0.0


@dataclass(frozen=True, slots=True)
class StoppedCall:
    """A call whose arguments passed their limit while the model wrote them."""

    id: str
    name: str
    reason: str


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    #: The id the model gave (``None``: it gave none); a new id at the same index starts
    #: a new call.
    given_id: str | None
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    reported: int = 0
    reported_at: float = 0.0
    meter: ArgumentMeter | None = None

    @property
    def arguments(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


class ToolCallAccumulator:
    """Merges fragments of (possibly interleaved) tool calls by index.

    For each call it yields: one event with empty arguments when the call first
    appears, events as its arguments grow (every fragment, or as ``coalescing``
    allows), and exactly one final event marked ``complete`` from :meth:`finish`.
    Then :meth:`calls` parses them: invalid JSON becomes a call carrying an
    ``error``, never an exception. Synchronous and I/O free.

    Every call gets an id of its own: ``new_id`` supplies one for a call whose
    fragments carry none, and for one whose id another call of this reply (or one of
    ``taken``, the ids used earlier in the turn) already has: some servers give
    parallel calls one id, or start every call at index 0 with a new id. With
    ``limits``, a call whose arguments pass its tool's limit is stopped:
    :attr:`stopped` says which and why, and the caller stops reading the model.
    With ``max_calls``, a reply that holds one call more than that is over once the
    calls within the bound are whole: the calls past it are not run anyway, and a small
    model writing dozens of them would otherwise be read to its token limit (36 calls,
    10.5 minutes; issue 40). :attr:`halted` tells the caller to stop reading, for
    either reason.
    """

    __slots__ = (
        "_calls",
        "_clock",
        "_coalescing",
        "_finished",
        "_generation",
        "_limits",
        "_max_calls",
        "_new_id",
        "_serial",
        "_taken",
        "_unfinished",
        "stopped",
    )

    def __init__(
        self,
        new_id: Callable[[], str] | None = None,
        *,
        limits: ArgumentLimits | None = None,
        coalescing: Coalescing | None = None,
        taken: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
        max_calls: int | None = None,
    ) -> None:
        self._calls: dict[tuple[int, int], _Call] = {}
        self._generation: dict[int, int] = {}  # index -> the generation receiving fragments
        self._finished = False
        self._new_id = new_id
        self._limits = limits
        self._coalescing = coalescing or Coalescing()
        self._taken = set(taken)
        self._serial = 0
        self._clock = clock
        self._max_calls = max_calls
        #: Once the reply holds a call past ``max_calls``: the calls within the bound
        #: whose arguments are not whole yet (``None`` before).
        self._unfinished: set[tuple[int, int]] | None = None
        #: The call that passed its argument limit, once one did.
        self.stopped: StoppedCall | None = None

    def add(self, delta: ToolCallDelta) -> list[ToolCallEvent]:
        """Take one fragment; return the events it causes (zero, one or two)."""
        if self._finished:
            raise RuntimeError("fragments after finish(); start a new accumulator per LLM call")
        events: list[ToolCallEvent] = []
        given = delta.id or None
        generation = self._generation.get(delta.index)
        call = None if generation is None else self._calls[(delta.index, generation)]
        if call is not None and given is not None and given != call.given_id and delta.name:
            call = None  # the same index, a new id and a name: the next call
        if call is None:
            generation = 0 if generation is None else generation + 1
            self._generation[delta.index] = generation
            call = _Call(self._unique_id(given, delta.index), delta.name or "", given)
            if self._limits is not None:
                call.meter = ArgumentMeter(self._limits.of(call.name))
            call.reported_at = self._clock()
            self._calls[(delta.index, generation)] = call
            events.append(ToolCallEvent(call.id, call.name, ""))
            bound = self._max_calls
            if self._unfinished is None and bound is not None and len(self._calls) > bound:
                within = sorted(self._calls.items())[:bound]
                self._unfinished = {key for key, c in within if not _whole(c.arguments)}
        elif delta.name and not call.name:
            call.name = delta.name
            if self._limits is not None and call.chars == 0:
                call.meter = ArgumentMeter(self._limits.of(call.name))
        if delta.arguments:
            call.parts.append(delta.arguments)
            call.chars += len(delta.arguments)
            if self._unfinished and delta.arguments.rstrip().endswith("}"):
                key = (delta.index, self._generation[delta.index])
                if key in self._unfinished and _whole(call.arguments):
                    self._unfinished.discard(key)
            if call.meter is not None and self.stopped is None:
                reason = call.meter.feed(delta.arguments)
                if reason is not None:
                    self.stopped = StoppedCall(call.id, call.name, reason)
                    return events
            if self._due(call):
                events.append(ToolCallEvent(call.id, call.name, call.arguments))
        return events

    def _due(self, call: _Call) -> bool:
        coalescing = self._coalescing
        if coalescing.interval <= 0 and coalescing.growth <= 0:
            call.reported = call.chars
            return True
        now = self._clock()
        if now - call.reported_at < coalescing.interval:
            return False
        if call.chars - call.reported < max(1, int(call.reported * coalescing.growth)):
            return False
        call.reported = call.chars
        call.reported_at = now
        return True

    def finish(self, reason: str | None = None) -> list[ToolCallEvent]:
        """The model stopped (for any ``reason``): one ``complete`` event per call, by index."""
        if self._finished:
            return []
        self._finished = True
        return [
            ToolCallEvent(call.id, call.name, call.arguments, complete=True)
            for _, call in sorted(self._calls.items())
        ]

    def calls(self) -> list[ParsedToolCall]:
        """The parsed calls in index order (only after :meth:`finish`)."""
        if not self._finished:
            raise RuntimeError("calls() before finish()")
        return [
            ParsedToolCall.parse(call.id, call.name, call.arguments)
            for _, call in sorted(self._calls.items())
        ]

    @property
    def has_calls(self) -> bool:
        return bool(self._calls)

    @property
    def halted(self) -> bool:
        """Whether to stop reading the model: a call passed its argument limit
        (:attr:`stopped`), or the reply holds a call past ``max_calls`` and the calls
        within the bound are whole (the first past it is kept, to be answered)."""
        return self.stopped is not None or self._unfinished == set()

    def _unique_id(self, given: str | None, index: int) -> str:
        call_id = given or self._fallback_id(index)
        while call_id in self._taken:
            call_id = f"{given or 'call'}_{self._fallback_id(index)}"
        self._taken.add(call_id)
        return call_id

    def _fallback_id(self, index: int) -> str:
        self._serial += 1
        suffix = self._new_id() if self._new_id is not None else str(self._serial)
        return f"call_{index}_{suffix}"


def _whole(arguments: str) -> bool:
    """Whether a call's argument text is complete JSON (an object; empty counts, as a
    call with no arguments)."""
    text = arguments.strip()
    if not text:
        return True
    if not text.endswith("}"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
