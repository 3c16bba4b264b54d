"""Intent checks: checks as values, their verdicts, and waiting until they hold.

A service that imports the core uses this module to validate checks
(:data:`checks_adapter`), to run them through a :class:`CheckProbe` (the GNS3 adapter's
compiles them per platform) with :func:`verify_checks`, and to read the results
(:class:`IntentResult`), and to run a change as a transaction decided by checks
(:func:`verify_change`). See ``docs/intent.md``.
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
    is_plain_address,
    is_safe_word,
)
from copilot_core._standing import MAX_STANDING_CHECKS, RUNNING, StandingIntent
from copilot_core._verification import CheckProbe, MonotonicClock, WaitClock, verify_checks
from copilot_core._verified_change import (
    ChangeSteps,
    OnFail,
    VerificationPlan,
    VerifiedChange,
    verify_change,
)

__all__ = [
    "MAX_STANDING_CHECKS",
    "RUNNING",
    "BgpSessionCheck",
    "ChangeSteps",
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
    "OnFail",
    "OspfNeighborCheck",
    "ReachabilityCheck",
    "RouteCheck",
    "StandingIntent",
    "VerificationPlan",
    "VerifiedChange",
    "WaitClock",
    "check_label",
    "check_node",
    "checks_adapter",
    "dump_check",
    "is_plain_address",
    "is_safe_word",
    "verify_change",
    "verify_checks",
]
