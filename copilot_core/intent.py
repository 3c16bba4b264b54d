"""Intent checks: checks as values, their verdicts, and waiting until they hold.

A service that imports the core uses this module to validate checks
(:data:`checks_adapter`), to run them through a :class:`CheckProbe` (the GNS3 adapter's
compiles them per platform) with :func:`verify_checks`, and to read the results
(:class:`IntentResult`). See ``docs/intent.md``.
"""

from copilot_core._checks import (
    BgpSessionCheck,
    Check,
    CheckResult,
    CheckStatus,
    ConfigLineCheck,
    Evidence,
    IntentResult,
    InterfaceCheck,
    Observation,
    OspfNeighborCheck,
    ReachabilityCheck,
    RouteCheck,
    check_label,
    check_node,
    checks_adapter,
    dump_check,
)
from copilot_core._standing import MAX_STANDING_CHECKS, StandingIntent
from copilot_core._verification import CheckProbe, MonotonicClock, WaitClock, verify_checks

__all__ = [
    "MAX_STANDING_CHECKS",
    "BgpSessionCheck",
    "Check",
    "CheckProbe",
    "CheckResult",
    "CheckStatus",
    "ConfigLineCheck",
    "Evidence",
    "IntentResult",
    "InterfaceCheck",
    "MonotonicClock",
    "Observation",
    "OspfNeighborCheck",
    "ReachabilityCheck",
    "RouteCheck",
    "StandingIntent",
    "WaitClock",
    "check_label",
    "check_node",
    "checks_adapter",
    "dump_check",
    "verify_checks",
]
