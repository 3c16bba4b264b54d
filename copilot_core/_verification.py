"""Waiting until checks hold: rounds of observation on a clock, bounded by ``wait_s``.

:func:`verify_checks` asks a :class:`CheckProbe` to observe every check that is not
decided yet (one round: the probe may share a command's output between checks on the
same node), then sleeps ``interval`` seconds on the :class:`WaitClock` and asks again,
until each check has passed or errored for good, or the wait runs out. A round starts only
before the bound: a check that never holds is ``fail`` (with its last observation) after
the round that reached ``wait_s``, never later. ``wait_s = 0`` is one round.

:class:`CheckProbes` is what a use case of the core is handed to reach a lab: for each
caller (a :class:`~copilot_core._tools.ToolContext`: the project, the caller's
credentials, whether a person waits) it gives the :class:`CheckProbe` that observes
checks there under the operator's policy, and the operator's :class:`ProbeLimits` on a
run. The tool source's own ``verify_intent`` uses the same probes, so a check is answered
one way whoever asks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from copilot_core._checks import (
    Check,
    CheckResult,
    CheckStatus,
    IntentResult,
    Observation,
    check_label,
)
from copilot_core._tools import ToolContext

__all__ = [
    "CheckProbe",
    "CheckProbes",
    "MonotonicClock",
    "ProbeLimits",
    "WaitClock",
    "verify_checks",
]


class WaitClock(Protocol):
    """Time as waiting sees it: a monotonic reading in seconds, and a sleep."""

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class CheckProbe(Protocol):
    """Observes checks on a lab: one observation per check, in order (never raises for a
    check it cannot answer: that is an ``error`` observation)."""

    async def observe(self, checks: Sequence[Check]) -> list[Observation]: ...


@dataclass(frozen=True, slots=True)
class ProbeLimits:
    """The operator's bounds on one run of checks on a lab: at most ``max_checks`` checks,
    retried for at most ``max_wait_s`` seconds, ``interval`` seconds between rounds."""

    max_checks: int
    max_wait_s: float
    interval: float


class CheckProbes(Protocol):
    """A lab's checks for each caller: :meth:`probe` gives the :class:`CheckProbe` of
    ``context``'s project, reached with its credentials, under the operator's policy,
    waiting for what it shares with a person's work (a device console) as background
    work when ``context.background``; it reports what it does to ``context``'s progress
    and stops when ``context.abort`` fires or its task is cancelled."""

    @property
    def limits(self) -> ProbeLimits:
        """The operator's bounds on a run of checks."""
        ...

    def probe(self, context: ToolContext) -> CheckProbe:
        """The probe of one caller's run (no credentials: an
        :class:`~copilot_core.errors.AuthenticationError`)."""
        ...


class MonotonicClock:
    """The event loop's clock (``time.monotonic``) and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def verify_checks(
    checks: Sequence[Check],
    probe: CheckProbe,
    clock: WaitClock,
    *,
    wait_s: float,
    interval: float = 2.0,
    progress: Callable[[str], None] | None = None,
) -> IntentResult:
    """Observe ``checks`` until each is decided or ``wait_s`` has passed (see the module)."""
    start = clock.monotonic()
    deadline = start + max(0.0, wait_s)
    last: list[Observation | None] = [None] * len(checks)
    attempts = [0] * len(checks)
    decided_at = [0.0] * len(checks)
    pending = list(range(len(checks)))
    while True:
        observed = await probe.observe([checks[i] for i in pending])
        now = clock.monotonic()
        still: list[int] = []
        for index, observation in zip(pending, observed, strict=True):
            attempts[index] += 1
            last[index] = observation
            decided_at[index] = now - start
            if not observation.final:
                still.append(index)
        pending = still
        remaining = deadline - now
        if not pending or remaining <= 0:
            break
        if progress is not None:
            waiting = ", ".join(check_label(checks[i]) for i in pending)
            progress(
                f"{len(pending)} of {len(checks)} check(s) not holding yet ({waiting}); "
                f"trying again, {remaining:.0f} s left\n"
            )
        await clock.sleep(min(interval, remaining))
    results = []
    for index, check in enumerate(checks):
        seen = last[index]
        assert seen is not None
        status = seen.status
        reason = seen.reason
        if status is CheckStatus.FAIL and wait_s > 0:
            reason = f"{reason} (still so after {decided_at[index]:.0f} s)"
        results.append(
            CheckResult(
                check,
                status,
                seen.observed,
                seen.evidence,
                attempts[index],
                decided_at[index],
                reason,
            )
        )
    return IntentResult(tuple(results), clock.monotonic() - start)
