"""The drills' scorer (copilot_core.drills, issue 38): a diagnosis against a ground truth,
root-cause F1 as NIKA scores it and localisation as NetOpsBench does, and a fix graded per
condition with partial credit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.gns3 import load_fault_catalog
from copilot_core.drills import (
    Cause,
    ConstraintResult,
    Diagnosis,
    grade_fix,
    score_diagnosis,
)
from copilot_core.faults import (
    FaultType,
    GroundTruth,
    NoNewStaticRoute,
    TopologyUnchanged,
)
from copilot_core.intent import CheckResult, CheckStatus, Evidence, ReachabilityCheck

TRUTHS = [f.ground_truth for f in load_fault_catalog()]
FAULTY = [t for t in TRUTHS if t.fault_type is not FaultType.NONE]
HEALTHY = GroundTruth(fault_type=FaultType.NONE)
HELLO = GroundTruth(fault_type=FaultType.OSPF_HELLO_MISMATCH, node="R2", interface="eth1")
ROUTE = GroundTruth(fault_type=FaultType.MISSING_STATIC_ROUTE, node="R1", resource="ip route")
LOSS = GroundTruth(fault_type=FaultType.LINK_LOSS, link=("R1:eth1", "R2:eth1"))
TYPES = [t for t in FaultType if t is not FaultType.NONE]


def causes() -> st.SearchStrategy[Cause]:
    names = st.sampled_from(["R1", "R2", "PC1", "PC2", "r2"])
    interfaces = st.none() | st.sampled_from(["eth0", "eth1"])
    on_node = st.builds(Cause, st.sampled_from(TYPES), names, interfaces)
    ends = st.sampled_from(["R1:eth1", "R2:eth1", "PC1:eth0", "R1:eth0"])
    on_link = st.builds(lambda t, a, b: Cause(t, link=(a, b)), st.sampled_from(TYPES), ends, ends)
    return on_node | on_link


diagnoses = st.lists(causes(), max_size=3).map(lambda c: Diagnosis(tuple(c)))


@given(st.sampled_from(TRUTHS))
def test_a_perfect_diagnosis_scores_one_on_every_fault_of_the_catalog(truth: GroundTruth) -> None:
    score = score_diagnosis(Diagnosis.from_truth(truth), truth)
    assert score.perfect and score.verdict and score.precision == score.recall == 1.0


@given(st.sampled_from(FAULTY))
def test_calling_a_faulty_lab_healthy_scores_zero(truth: GroundTruth) -> None:
    score = score_diagnosis(Diagnosis(), truth)
    assert (score.root_cause_f1, score.localisation, score.verdict) == (0.0, 0.0, False)


@given(st.lists(causes(), min_size=1, max_size=3))
def test_calling_a_healthy_lab_faulty_scores_zero(named: list[Cause]) -> None:
    score = score_diagnosis(Diagnosis(tuple(named)), HEALTHY)
    assert (score.root_cause_f1, score.localisation, score.verdict) == (0.0, 0.0, False)


def test_a_healthy_lab_called_healthy_scores_one() -> None:
    assert score_diagnosis(Diagnosis(), HEALTHY).perfect


@given(diagnoses, st.sampled_from([*TRUTHS, HELLO, ROUTE, LOSS]))
def test_every_score_is_between_zero_and_one_and_f1_is_the_harmonic_mean(
    diagnosis: Diagnosis, truth: GroundTruth
) -> None:
    score = score_diagnosis(diagnosis, truth)
    for value in (score.root_cause_f1, score.precision, score.recall, score.localisation):
        assert 0.0 <= value <= 1.0
    p, r = score.precision, score.recall
    assert score.root_cause_f1 == pytest.approx(0.0 if p + r == 0 else 2 * p * r / (p + r))
    if score.perfect:
        assert score.verdict


@given(diagnoses, st.sampled_from(FAULTY))
def test_adding_the_true_cause_never_lowers_the_recall(
    diagnosis: Diagnosis, truth: GroundTruth
) -> None:
    true = Diagnosis.from_truth(truth).causes
    more = Diagnosis(diagnosis.causes + true)
    assert score_diagnosis(more, truth).recall == 1.0


def test_extra_suspects_cost_precision_as_nika_counts_them() -> None:
    wrong = Cause(FaultType.OSPF_AREA_MISMATCH, "R1", "eth1")
    score = score_diagnosis(
        Diagnosis((Cause(FaultType.OSPF_HELLO_MISMATCH, "R2", "eth1"), wrong)), HELLO
    )
    assert (score.precision, score.recall) == (0.5, 1.0)
    assert score.root_cause_f1 == pytest.approx(2 / 3) and score.localisation == 1.0


@pytest.mark.parametrize(
    ("cause", "f1", "localisation"),
    [
        (Cause(FaultType.OSPF_HELLO_MISMATCH, "R2", "eth1"), 1.0, 1.0),
        (Cause(FaultType.OSPF_HELLO_MISMATCH, "r2", "ETH1"), 1.0, 1.0),  # names fold case
        (Cause(FaultType.OSPF_HELLO_MISMATCH, "R2", "eth0"), 1.0, 0.5),  # right device
        (Cause(FaultType.OSPF_HELLO_MISMATCH, "R2"), 1.0, 0.5),
        (Cause(FaultType.OSPF_AREA_MISMATCH, "R2", "eth1"), 0.0, 1.0),  # wrong type
        (Cause(FaultType.OSPF_HELLO_MISMATCH, "R1", "eth1"), 0.0, 0.0),  # wrong device
        (Cause(FaultType.OSPF_HELLO_MISMATCH, link=("R2:eth1", "R1:eth1")), 0.0, 1.0),
    ],
)
def test_a_node_fault_is_scored_half_device_half_interface(
    cause: Cause, f1: float, localisation: float
) -> None:
    score = score_diagnosis(Diagnosis((cause,)), HELLO)
    assert (score.root_cause_f1, score.localisation) == (f1, localisation)


def test_a_fault_without_an_interface_counts_the_device_whole() -> None:
    score = score_diagnosis(Diagnosis.of(FaultType.MISSING_STATIC_ROUTE, "R1", "eth0"), ROUTE)
    assert (score.root_cause_f1, score.localisation) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("cause", "f1", "localisation"),
    [
        (Cause(FaultType.LINK_LOSS, link=("R2:eth1", "R1:eth1")), 1.0, 1.0),  # either order
        (Cause(FaultType.LINK_LOSS, "R1", "eth1"), 1.0, 1.0),  # one end names the link
        (Cause(FaultType.LINK_LOSS, "R2", "eth0"), 0.0, 0.5),  # an end's device only
        (Cause(FaultType.LINK_DOWN, "R2", "eth1"), 0.0, 1.0),
        (Cause(FaultType.LINK_LOSS, link=("R1:eth0", "PC1:eth0")), 0.0, 0.0),
    ],
)
def test_a_link_fault_is_found_by_the_link_or_one_of_its_ends(
    cause: Cause, f1: float, localisation: float
) -> None:
    score = score_diagnosis(Diagnosis((cause,)), LOSS)
    assert (score.root_cause_f1, score.localisation) == (f1, localisation)


def test_a_cause_must_say_where_and_what() -> None:
    with pytest.raises(ValueError, match="healthy"):
        Cause(FaultType.NONE, "R1")
    with pytest.raises(ValueError, match="node or its link"):
        Cause(FaultType.LINK_LOSS)
    with pytest.raises(ValueError, match="needs its node"):
        Cause(FaultType.LINK_LOSS, interface="eth0", link=("R1:eth1", "R2:eth1"))
    assert Diagnosis.of(FaultType.NONE, "R1").healthy


# ------------------------------------------------------------------ the student's fix
PING = ReachabilityCheck(kind="reachability", source="PC1", to="10.0.2.10", name="PC1 reaches PC2")


def checked(status: CheckStatus, reason: str | None = None) -> CheckResult:
    evidence = (Evidence("PC1", "ping -c 3 10.0.2.10", ("3 packets received",)),)
    return CheckResult(PING, status, None, evidence, 1, 0.0, reason)


def held(ok: bool, evidence: str) -> ConstraintResult:
    return ConstraintResult(NoNewStaticRoute(kind="no_new_static_route", node="R1"), ok, evidence)


def test_a_fix_is_graded_per_condition_with_evidence_and_partial_credit() -> None:
    grade = grade_fix(
        [checked(CheckStatus.PASS), checked(CheckStatus.FAIL, "100% loss")],
        [held(False, "R1 gained ip route 10.0.2.0/24 10.0.12.2"),
         ConstraintResult(TopologyUnchanged(kind="topology_unchanged"), True, "as before")],
        time_s=42.0,
        hints_used=2,
    )  # fmt: skip
    assert [(c.kind, c.name, c.met, c.evidence) for c in grade.conditions] == [
        ("check", "PC1 reaches PC2", True, "holds: 3 packets received"),
        ("check", "PC1 reaches PC2", False, "100% loss"),
        ("constraint", "no static route added on R1", False,
         "R1 gained ip route 10.0.2.0/24 10.0.12.2"),
        ("constraint", "no node or link added or removed", True, "as before"),
    ]  # fmt: skip
    assert grade.score == 0.5 and not grade.fixed
    assert (grade.time_s, grade.hints_used) == (42.0, 2)


@given(st.lists(st.booleans(), max_size=6), st.lists(st.booleans(), max_size=6))
def test_the_score_is_the_share_of_conditions_met(checks: list[bool], kept: list[bool]) -> None:
    grade = grade_fix(
        [checked(CheckStatus.PASS if ok else CheckStatus.FAIL, "no") for ok in checks],
        [held(ok, "") for ok in kept],
        time_s=0.0,
        hints_used=0,
    )
    total = len(checks) + len(kept)
    assert grade.score == pytest.approx(sum(checks + kept) / total if total else 0.0)
    assert grade.fixed == (total > 0 and all(checks + kept))
