"""Intent checks: checks as values, their verdicts, and waiting until they hold.

A service that imports the core uses this module to validate checks
(:data:`checks_adapter`), to run them through a :class:`CheckProbe` (the GNS3 adapter's
compiles them per platform) with :func:`verify_checks`, and to read the results
(:class:`IntentResult`), and to run a change as a transaction decided by checks
(:func:`verify_change`). A tool source gives the core its lab's checks as
:class:`CheckProbes` (a probe per caller, and the operator's :class:`ProbeLimits`);
:class:`StandingIntent` runs each user's standing checks on them and answers a
:class:`StandingRun`. See ``docs/intent.md``.
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
from copilot_core._standing import MAX_STANDING_CHECKS, RUNNING, StandingIntent, StandingRun
from copilot_core._verification import (
    CheckProbe,
    CheckProbes,
    MonotonicClock,
    ProbeLimits,
    WaitClock,
    verify_checks,
)
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
    "CheckProbes",
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
    "ProbeLimits",
    "ReachabilityCheck",
    "RouteCheck",
    "StandingIntent",
    "StandingRun",
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
