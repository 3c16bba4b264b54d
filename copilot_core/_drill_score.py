"""Scoring: a diagnosis against a fault's ground truth, and a student's fix, per condition.

Two scores, pure and deterministic, used alike by a student's drill and by
``eval --suite faults`` (a model's diagnosis):

* :func:`score_diagnosis` grades a :class:`Diagnosis` (the suspected causes, each a node,
  interface or link and a :class:`~copilot_core.faults.FaultType`; none: "nothing is
  broken") against a :class:`~copilot_core.faults.GroundTruth`, two ways the research
  benchmarks use, so that our figures compare with theirs:

  - **root-cause F1** as NIKA scores it: the diagnosis and the truth are sets of
    (resource, fault type) pairs; precision is the share of the diagnosis's pairs that are
    true, recall the share of the truth's found, F1 their harmonic mean. A healthy truth is
    the empty set: a diagnosis of "healthy" is perfect (1), any cause named scores 0.
  - **localisation** as NetOpsBench scores it: zero on a wrong verdict (a fault called
    healthy, or a healthy lab called faulty); otherwise half for the device and half for
    the interface (a truth with no interface: the device counts whole). A link's fault is
    found by naming the link, or one of its ends (the end's node gives the device half,
    the end's interface the other).

  The resource of a pair is the truth's link when it names one, else its node: the
  interface is localisation's business, not the root cause's (NIKA's resource is the
  device or link). Names compare case-insensitively.

* :func:`grade_fix` grades a student's fix: each fixed-check and each constraint is a
  :class:`Condition` (met or not, with its evidence); the score is the share met (partial
  credit), reported with the time taken and the hints used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from copilot_core._checks import CheckResult, CheckStatus, check_label
from copilot_core._drill_ports import ConstraintResult
from copilot_core.faults import FaultType, GroundTruth

__all__ = [
    "Cause",
    "Condition",
    "Diagnosis",
    "DiagnosisScore",
    "Grade",
    "constraint_label",
    "grade_fix",
    "score_diagnosis",
]


@dataclass(frozen=True, slots=True)
class Cause:
    """One suspected cause: where (a node and maybe its interface, or a link given as its
    two ``node:interface`` ends) and what (a fault type other than ``none``)."""

    fault_type: FaultType
    node: str | None = None
    interface: str | None = None
    link: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.fault_type is FaultType.NONE:
            raise ValueError("a cause names a fault type; a healthy diagnosis names no cause")
        if self.node is None and self.link is None:
            raise ValueError("a cause names its node or its link")
        if self.interface is not None and self.node is None:
            raise ValueError("an interface needs its node")


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What a student or a model says is wrong: its causes, the most likely first (none:
    the lab is healthy)."""

    causes: tuple[Cause, ...] = ()

    @property
    def healthy(self) -> bool:
        return not self.causes

    @classmethod
    def of(
        cls,
        fault_type: FaultType,
        node: str | None = None,
        interface: str | None = None,
        link: tuple[str, str] | None = None,
    ) -> Diagnosis:
        """One cause, or healthy when ``fault_type`` is ``none``."""
        if fault_type is FaultType.NONE:
            return cls()
        return cls((Cause(fault_type, node, interface, link),))

    @classmethod
    def from_truth(cls, truth: GroundTruth) -> Diagnosis:
        """The diagnosis that names exactly ``truth`` (a perfect one)."""
        link = (truth.link[0], truth.link[1]) if truth.link is not None else None
        return cls.of(truth.fault_type, truth.node, truth.interface, link)


@dataclass(frozen=True, slots=True)
class DiagnosisScore:
    """A diagnosis's scores, each in [0, 1]; ``verdict`` is whether it said rightly that
    something is (or nothing is) broken."""

    root_cause_f1: float
    precision: float
    recall: float
    localisation: float
    verdict: bool

    @property
    def perfect(self) -> bool:
        return self.root_cause_f1 == 1.0 and self.localisation == 1.0


def _fold(name: str | None) -> str | None:
    return None if name is None else name.strip().lower()


def _link_key(link: tuple[str, str]) -> tuple[str, ...]:
    return tuple(sorted(e.strip().lower() for e in link))


def _ends(link: tuple[str, str]) -> list[tuple[str, str]]:
    return [(n.lower(), i.lower()) for n, _, i in (e.strip().partition(":") for e in link)]


def _truth_resource(truth: GroundTruth) -> tuple[str, ...]:
    if truth.link is not None:
        return ("link", *_link_key((truth.link[0], truth.link[1])))
    return ("node", _fold(truth.node) or "")


def _cause_resource(cause: Cause, truth: GroundTruth) -> tuple[str, ...]:
    """The cause's resource, in the truth's terms: a cause naming one end of the truth's
    link (node and interface) names that link."""
    if cause.link is not None:
        return ("link", *_link_key(cause.link))
    node, interface = _fold(cause.node) or "", _fold(cause.interface)
    if truth.link is not None and (node, interface) in _ends((truth.link[0], truth.link[1])):
        return ("link", *_link_key((truth.link[0], truth.link[1])))
    return ("node", node)


def _localise(cause: Cause, truth: GroundTruth) -> float:
    if truth.link is not None:
        ends = _ends((truth.link[0], truth.link[1]))
        if cause.link is not None:
            return (
                1.0 if _link_key(cause.link) == _link_key((truth.link[0], truth.link[1])) else 0.0
            )
        end = (_fold(cause.node), _fold(cause.interface))
        device = any(end[0] == n for n, _ in ends)
        return (0.5 if device else 0.0) + (0.5 if end in ends else 0.0)
    if cause.link is not None:  # a link named for a node's fault: an end may be the node
        named = _ends(cause.link)
        at_end = any(n == _fold(truth.node) for n, _ in named)
        on_end = (_fold(truth.node), _fold(truth.interface)) in named
        return (0.5 if at_end else 0.0) + (0.5 if on_end else 0.0)
    if _fold(cause.node) != _fold(truth.node):
        return 0.0
    if truth.interface is None:
        return 1.0
    return 1.0 if _fold(cause.interface) == _fold(truth.interface) else 0.5


def score_diagnosis(diagnosis: Diagnosis, truth: GroundTruth) -> DiagnosisScore:
    """``diagnosis`` scored against ``truth`` (see the module)."""
    healthy_truth = truth.fault_type is FaultType.NONE
    verdict = diagnosis.healthy == healthy_truth
    if healthy_truth:
        score = 1.0 if verdict else 0.0
        return DiagnosisScore(score, score, score, score, verdict)
    if not verdict:
        return DiagnosisScore(0.0, 0.0, 0.0, 0.0, verdict)
    wanted = (*_truth_resource(truth), truth.fault_type.value)
    named = {(*_cause_resource(c, truth), c.fault_type.value) for c in diagnosis.causes}
    hits = 1 if wanted in named else 0
    precision = hits / len(named)
    recall = float(hits)
    f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
    return DiagnosisScore(f1, precision, recall, _localise(diagnosis.causes[0], truth), verdict)


# ------------------------------------------------------------------ the student's fix
@dataclass(frozen=True, slots=True)
class Condition:
    """One condition of a fix: a fixed-check (``kind`` ``check``) or a constraint
    (``constraint``), whether it is met, and the evidence that says so."""

    kind: str
    name: str
    met: bool
    evidence: str


@dataclass(frozen=True, slots=True)
class Grade:
    """A fix graded: each condition, the share met (``score``, partial credit), the
    seconds since the drill was handed over and the hints used."""

    conditions: tuple[Condition, ...]
    time_s: float
    hints_used: int
    score: float = field(init=False)

    def __post_init__(self) -> None:
        met = sum(1 for c in self.conditions if c.met)
        object.__setattr__(self, "score", met / len(self.conditions) if self.conditions else 0.0)

    @property
    def fixed(self) -> bool:
        """Every condition is met."""
        return bool(self.conditions) and all(c.met for c in self.conditions)


def constraint_label(result: ConstraintResult) -> str:
    """A constraint in words ("no static route added on R1")."""
    constraint = result.constraint
    node = getattr(constraint, "node", "")
    return {
        "no_new_static_route": f"no static route added on {node}",
        "addresses_unchanged": f"{node}'s addresses unchanged",
        "config_unchanged": f"{node}'s configuration unchanged",
        "topology_unchanged": "no node or link added or removed",
    }[constraint.kind]


def _check_evidence(result: CheckResult) -> str:
    if result.status is CheckStatus.PASS:
        seen = [line for e in result.evidence for line in e.lines]
        return "holds" + (f": {seen[0]}" if seen else "")
    return result.reason or ("does not hold" if result.status is CheckStatus.FAIL else "error")


def grade_fix(
    checks: Sequence[CheckResult],
    constraints: Sequence[ConstraintResult],
    *,
    time_s: float,
    hints_used: int,
) -> Grade:
    """The grade of a fix from its fixed-checks' results and its constraints' verdicts."""
    conditions = [
        Condition("check", check_label(r.check), r.status is CheckStatus.PASS, _check_evidence(r))
        for r in checks
    ]
    conditions += [
        Condition("constraint", constraint_label(r), r.held, r.evidence) for r in constraints
    ]
    return Grade(tuple(conditions), time_s, hints_used)
