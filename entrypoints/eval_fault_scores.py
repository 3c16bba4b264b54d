"""``gns3-copilot eval --suite faults``: one case's record, the scores added up, the table
and the JSON file.

A :class:`CaseRun` is one fault (or healthy case) in one trial: the model's diagnosis as
read (or why it could not be, :attr:`CaseRun.malformed`), its scores from the core's
scorer (:func:`copilot_core.drills.score_diagnosis`: root-cause F1 over (resource, fault
type) as NIKA scores it, localisation as NetOpsBench does), the repair's grade with
``--fix`` (:class:`FixRun`: the drill's fixed-checks and constraints, partial credit),
whether the lab was restored exactly, the tool calls, tokens and seconds, and an error
when the case could not run (the fault did not take, the lab failed): such a case has no
diagnosis and is left out of the means, but counted and shown.

:func:`summarise` adds runs up (means over the diagnosed runs; a malformed diagnosis is
a diagnosed run scored 0), :func:`format_table` prints a row per case and the summary,
:func:`faults_json` is the JSON file's content. All pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CaseRun",
    "FixRun",
    "Summary",
    "faults_json",
    "format_table",
    "summarise",
    "write_faults_json",
]


@dataclass(frozen=True)
class FixRun:
    """The repair turn (lab-automation mode) and its grade: each fixed-check and each
    constraint a condition (``conditions``: kind, name, met, evidence), ``score`` the share
    met."""

    score: float
    fixed: bool
    checks_met: int
    checks: int
    constraints_held: int
    constraints: int
    tool_calls: int
    tokens: int
    #: The repair turn's seconds, and the grading's (the checks retried until they hold).
    seconds: float
    grade_s: float = 0.0
    conditions: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class CaseRun:
    """One case in one trial (see the module)."""

    fault: str
    topic: str
    difficulty: int
    healthy: bool
    trial: int = 1
    #: Whether the model was asked and answered (else ``error`` says why not).
    diagnosed: bool = False
    #: The diagnosis as read (``diagnosis_data``), ``None`` when none was read.
    diagnosis: dict[str, Any] | None = None
    #: Why the answer's diagnosis could not be read (``None``: it was).
    malformed: str | None = None
    root_cause_f1: float = 0.0
    precision: float = 0.0
    recall: float = 0.0
    localisation: float = 0.0
    verdict: bool = False
    tool_calls: int = 0
    tokens: int = 0
    first_token_s: float | None = None
    diagnose_s: float = 0.0
    #: The diagnosis turn's own error (the model's server failed, the step budget ran
    #: out): the answer is read all the same.
    turn_error: str | None = None
    inject_s: float = 0.0
    fix: FixRun | None = None
    restore_s: float = 0.0
    #: Whether the lab was put back exactly (``None``: nothing to put back).
    restored: bool | None = None
    differences: tuple[str, ...] = ()
    total_s: float = 0.0
    error: str | None = None

    @property
    def perfect(self) -> bool:
        return self.diagnosed and self.root_cause_f1 == 1.0 and self.localisation == 1.0

    @property
    def passed(self) -> bool:
        """A perfect diagnosis, the repair graded full when one was asked, the lab put
        back exactly, no error."""
        return (
            self.error is None
            and self.perfect
            and (self.fix is None or self.fix.fixed)
            and self.restored is not False
        )


@dataclass(frozen=True)
class Summary:
    """Runs added up. The means are over the diagnosed runs (``None``: there were none);
    ``healthy_right`` of ``healthy_runs`` healthy cases called healthy, ``detected`` of
    ``faulty_runs`` faults called faulty."""

    runs: int
    diagnosed: int
    errors: int
    malformed: int
    perfect: int
    passed: int
    root_cause_f1: float | None
    localisation: float | None
    verdict_accuracy: float | None
    healthy_runs: int
    healthy_right: int
    faulty_runs: int
    detected: int
    fixes: int
    fixed: int
    fix_score: float | None
    checks_met: int
    checks: int
    constraints_held: int
    constraints: int
    restores: int
    restored: int
    tool_calls: float | None
    tokens: float | None
    diagnose_s: float | None
    per_trial_f1: tuple[float, ...] = field(default=())


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def summarise(runs: Sequence[CaseRun]) -> Summary:
    """``runs`` added up (see :class:`Summary`)."""
    done = [r for r in runs if r.diagnosed]
    fixes = [r.fix for r in done if r.fix is not None]
    restores = [r for r in runs if r.restored is not None]
    trials = sorted({r.trial for r in done})
    return Summary(
        runs=len(runs),
        diagnosed=len(done),
        errors=sum(1 for r in runs if r.error is not None),
        malformed=sum(1 for r in done if r.malformed is not None),
        perfect=sum(1 for r in done if r.perfect),
        passed=sum(1 for r in runs if r.passed),
        root_cause_f1=_mean([r.root_cause_f1 for r in done]),
        localisation=_mean([r.localisation for r in done]),
        verdict_accuracy=_mean([float(r.verdict) for r in done]),
        healthy_runs=sum(1 for r in done if r.healthy),
        healthy_right=sum(1 for r in done if r.healthy and r.verdict),
        faulty_runs=sum(1 for r in done if not r.healthy),
        detected=sum(1 for r in done if not r.healthy and r.verdict),
        fixes=len(fixes),
        fixed=sum(1 for f in fixes if f.fixed),
        fix_score=_mean([f.score for f in fixes]),
        checks_met=sum(f.checks_met for f in fixes),
        checks=sum(f.checks for f in fixes),
        constraints_held=sum(f.constraints_held for f in fixes),
        constraints=sum(f.constraints for f in fixes),
        restores=len(restores),
        restored=sum(1 for r in restores if r.restored),
        tool_calls=_mean([r.tool_calls + (r.fix.tool_calls if r.fix else 0) for r in done]),
        tokens=_mean([r.tokens + (r.fix.tokens if r.fix else 0) for r in done]),
        diagnose_s=_mean([r.diagnose_s for r in done]),
        per_trial_f1=tuple(
            _mean([r.root_cause_f1 for r in done if r.trial == t]) or 0.0 for t in trials
        ),
    )


def _groups(runs: Sequence[CaseRun], key: Callable[[CaseRun], str]) -> dict[str, Summary]:
    keys = list(dict.fromkeys(key(r) for r in runs))
    return {k: summarise([r for r in runs if key(r) == k]) for k in keys}


def _num(value: float | None, form: str = "{:.2f}") -> str:
    return "-" if value is None else form.format(value)


def format_table(runs: Sequence[CaseRun]) -> str:
    """A row per case (over its trials: verdicts right of runs, mean F1 and localisation,
    malformed diagnoses, repairs graded full, mean calls, tokens and seconds), then the
    summary lines."""
    head = f"{'case':<30} {'topic':<20} {'verdict':>7} {'F1':>5} {'loc':>5} {'bad':>3} "
    head += f"{'fixed':>5} {'calls':>6} {'tokens':>8} {'diag s':>7}"
    rows = [head]
    for name, s in _groups(runs, lambda r: r.fault).items():
        mine = [r for r in runs if r.fault == name]
        errors = sorted({r.error for r in mine if r.error})
        malformed = sorted({r.malformed for r in mine if r.malformed})
        rows.append(
            f"{name:<30} {mine[0].topic:<20} {f'{s.detected + s.healthy_right}/{s.runs}':>7} "
            f"{_num(s.root_cause_f1):>5} {_num(s.localisation):>5} {s.malformed:>3} "
            f"{f'{s.fixed}/{s.fixes}' if s.fixes else '-':>5} {_num(s.tool_calls, '{:.1f}'):>6} "
            f"{_num(s.tokens, '{:.0f}'):>8} {_num(s.diagnose_s, '{:.1f}'):>7}"
            + (f"  (error: {'; '.join(errors)})" if errors else "")
            + (f"  (malformed: {'; '.join(malformed)})" if malformed else "")
        )
    s = summarise(runs)
    rows.append(
        f"root-cause F1 {_num(s.root_cause_f1)}, localisation {_num(s.localisation)}, "
        f"verdicts right {_num(s.verdict_accuracy)} over {s.diagnosed} diagnosed runs "
        f"({s.perfect} perfect, {s.malformed} malformed); faults detected "
        f"{s.detected}/{s.faulty_runs}, healthy cases called healthy "
        f"{s.healthy_right}/{s.healthy_runs}"
    )
    if s.fixes:
        rows.append(
            f"repairs graded full {s.fixed}/{s.fixes} (mean grade {_num(s.fix_score)}); "
            f"fixed-checks met {s.checks_met}/{s.checks}, constraints held "
            f"{s.constraints_held}/{s.constraints}"
        )
    if len(s.per_trial_f1) > 1:
        each = ", ".join(f"{v:.2f}" for v in s.per_trial_f1)
        rows.append(f"root-cause F1 per trial: {each}")
    rows.append(
        f"{s.passed}/{s.runs} case runs passed; {s.errors} could not run; labs restored "
        f"exactly {s.restored}/{s.restores}"
    )
    return "\n".join(rows)


def faults_json(runs: Sequence[CaseRun], about: dict[str, Any]) -> dict[str, Any]:
    """The JSON file's content: ``about`` (the model, the flags), every run, the summary
    and the same per topic and per case."""
    return {
        "suite": "faults",
        **about,
        "runs": [{**asdict(r), "perfect": r.perfect, "passed": r.passed} for r in runs],
        "summary": asdict(summarise(runs)),
        "per_topic": {k: asdict(v) for k, v in _groups(runs, lambda r: r.topic).items()},
        "per_case": {k: asdict(v) for k, v in _groups(runs, lambda r: r.fault).items()},
    }


def write_faults_json(path: Path, runs: Sequence[CaseRun], about: dict[str, Any]) -> None:
    path.write_text(json.dumps(faults_json(runs, about), indent=2) + "\n", encoding="utf-8")
