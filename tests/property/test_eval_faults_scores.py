"""``eval --suite faults``, over random diagnoses and random runs: a diagnosis written as the
question asks reads back to itself, and scores as the core's scorer scores it; any text
that is not such a block reads as malformed, never as a diagnosis; the summary's means
stay in [0, 1], do not depend on the runs' order, leave the runs that could not run out,
and a set of perfect runs sums to 1."""

from __future__ import annotations

import json
import random

from hypothesis import given
from hypothesis import strategies as st

from adapters.gns3 import load_fault_catalog
from copilot_core.drills import Cause, Diagnosis, score_diagnosis
from copilot_core.faults import Fault, FaultType
from entrypoints.eval_diagnosis import Malformed, diagnosis_data, parse_diagnosis
from entrypoints.eval_fault_scores import CaseRun, FixRun, summarise

CATALOG = tuple(load_fault_catalog())
TYPES = [t for t in FaultType if t is not FaultType.NONE]
names = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,7}", fullmatch=True)


@st.composite
def causes(draw: st.DrawFn) -> Cause:
    kind = draw(st.sampled_from(TYPES))
    if draw(st.booleans()):
        ends = draw(st.tuples(names, names, names, names))
        return Cause(kind, link=(f"{ends[0]}:{ends[1]}", f"{ends[2]}:{ends[3]}"))
    return Cause(kind, draw(names), draw(st.none() | names))


diagnoses = st.lists(causes(), max_size=5).map(lambda c: Diagnosis(tuple(c)))


@given(diagnoses, st.sampled_from(CATALOG), st.text(max_size=80))
def test_a_diagnosis_written_as_asked_reads_back_and_scores_as_the_core_does(
    diagnosis: Diagnosis, fault: Fault, prose: str
) -> None:
    answer = prose.replace("`", "'") + "\n```json\n" + json.dumps(diagnosis_data(diagnosis))
    parsed = parse_diagnosis(answer + "\n```")
    assert parsed == diagnosis
    score = score_diagnosis(parsed, fault.ground_truth)
    assert 0.0 <= score.root_cause_f1 <= 1.0 and 0.0 <= score.localisation <= 1.0


@given(st.text(max_size=200))
def test_text_with_no_fence_is_malformed(text: str) -> None:
    parsed = parse_diagnosis(text.replace("```", "'''"))
    assert isinstance(parsed, Malformed) and parsed.reason == "no fenced JSON block"


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12))  # fmt: skip
def test_any_other_json_is_malformed_or_exactly_a_diagnosis(data: object) -> None:
    parsed = parse_diagnosis("```json\n" + json.dumps(data) + "\n```")
    if not isinstance(parsed, Malformed):  # then it was a valid block, and says so
        assert isinstance(data, dict) and set(data) == {"verdict", "causes"}
        assert diagnosis_data(parsed)["verdict"] == data["verdict"]


@st.composite
def runs(draw: st.DrawFn) -> CaseRun:
    diagnosed = draw(st.booleans())
    share = st.sampled_from([0.0, 0.5, 1.0])
    fixed = draw(st.none() | st.integers(0, 3))
    fix = None
    if fixed is not None and diagnosed:
        fix = FixRun(fixed / 3, fixed == 3, fixed, 3, 0, 0, 1, 10, 1.0)
    return CaseRun(
        fault=draw(st.sampled_from("abcd")),
        topic=draw(st.sampled_from(["ospf", "hosts", "healthy"])),
        difficulty=1,
        healthy=draw(st.booleans()),
        trial=draw(st.integers(1, 3)),
        diagnosed=diagnosed,
        root_cause_f1=draw(share) if diagnosed else 0.0,
        localisation=draw(share) if diagnosed else 0.0,
        verdict=draw(st.booleans()) if diagnosed else False,
        tool_calls=draw(st.integers(0, 9)),
        tokens=draw(st.integers(0, 9999)),
        fix=fix,
        restored=draw(st.none() | st.booleans()),
        error=None if diagnosed else "could not run",
    )


@given(st.lists(runs(), max_size=12), st.randoms())
def test_the_summary_is_bounded_order_free_and_leaves_out_what_did_not_run(
    these: list[CaseRun], rng: random.Random
) -> None:
    s = summarise(these)
    shuffled = list(these)
    rng.shuffle(shuffled)
    again = summarise(shuffled)
    assert again.root_cause_f1 == s.root_cause_f1 and again.passed == s.passed
    assert s.diagnosed + s.errors == s.runs == len(these)
    for mean in (s.root_cause_f1, s.localisation, s.verdict_accuracy, s.fix_score):
        assert mean is None or 0.0 <= mean <= 1.0
    assert (s.root_cause_f1 is None) == (s.diagnosed == 0)
    ran = [r for r in these if r.diagnosed]
    assert summarise(ran).root_cause_f1 == s.root_cause_f1  # the errors change no mean
    assert s.healthy_right <= s.healthy_runs and s.detected <= s.faulty_runs
    assert s.passed <= s.perfect <= s.diagnosed


@given(st.lists(st.sampled_from(CATALOG), min_size=1, max_size=8))
def test_perfect_diagnoses_of_any_cases_sum_to_1(faults: list[Fault]) -> None:
    these = []
    for fault in faults:
        truth = fault.ground_truth
        score = score_diagnosis(Diagnosis.from_truth(truth), truth)
        these.append(
            CaseRun(
                fault.id,
                "t",
                1,
                fault.healthy,
                diagnosed=True,
                root_cause_f1=score.root_cause_f1,
                localisation=score.localisation,
                verdict=score.verdict,
            )
        )
    s = summarise(these)
    assert s.root_cause_f1 == s.localisation == s.verdict_accuracy == 1.0
    assert s.perfect == s.passed == len(these)
    assert s.healthy_right == s.healthy_runs
