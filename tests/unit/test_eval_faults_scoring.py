"""``eval --suite faults``: the diagnosis read strictly from the model's answer, the cases
chosen from the real catalog, and the runs added up (exact figures on known runs)."""

from __future__ import annotations

import json

import pytest

from adapters.gns3 import load_fault_catalog
from copilot_core.drills import Cause, Diagnosis, score_diagnosis
from copilot_core.faults import FaultType
from entrypoints.eval_diagnosis import (
    FAULT_TYPES,
    Malformed,
    diagnosis_data,
    diagnosis_question,
    parse_diagnosis,
)
from entrypoints.eval_fault_scores import CaseRun, FixRun, faults_json, format_table, summarise
from entrypoints.eval_faults import FaultsSetupError, select_cases

CATALOG = load_fault_catalog()


def fenced(data: object, info: str = "json") -> str:
    return f"I read R1 and PC1.\n\n```{info}\n{json.dumps(data)}\n```\n"


# ------------------------------------------------------------------ reading the answer
def test_a_faulty_verdict_is_read_with_its_causes_in_order() -> None:
    answer = fenced(
        {
            "verdict": "faulty",
            "causes": [
                {"device": "R1", "interface": "eth0", "fault_type": "interface_down"},
                {"link": ["R1:eth1", "R2:eth1"], "fault_type": "link_loss"},
                {"device": "PC1", "interface": None, "fault_type": "missing_default_gateway"},
            ],
        }
    )
    assert parse_diagnosis(answer) == Diagnosis(
        (
            Cause(FaultType.INTERFACE_DOWN, "R1", "eth0"),
            Cause(FaultType.LINK_LOSS, link=("R1:eth1", "R2:eth1")),
            Cause(FaultType.MISSING_DEFAULT_GATEWAY, "PC1"),
        )
    )


def test_healthy_and_a_bare_fence_and_the_last_block_counts() -> None:
    earlier = fenced(
        {"verdict": "faulty", "causes": [{"device": "R9", "fault_type": "mtu_mismatch"}]}
    )
    last = fenced({"verdict": "healthy", "causes": []}, info="")
    assert parse_diagnosis(earlier + "On second thought:\n" + last) == Diagnosis()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("R1's eth0 is down: interface_down.", "no fenced JSON block"),
        ("```json\n{verdict: faulty}\n```", "not JSON"),
        ("```python\nprint(1)\n```", "'python', not JSON"),
        (fenced(["healthy"]), "not a JSON object"),
        (fenced({"verdict": "healthy"}), "not verdict and causes"),
        (fenced({"verdict": "healthy", "causes": [], "why": "ok"}), "not verdict and causes"),
        (fenced({"verdict": "broken", "causes": []}), "neither faulty nor healthy"),
        (fenced({"verdict": "faulty", "causes": []}), "needs 1 to 5 causes"),
        (
            fenced({"verdict": "healthy", "causes": [{"device": "R1", "fault_type": "link_down"}]}),
            "healthy verdict with causes",
        ),
        (fenced({"verdict": "faulty", "causes": {"device": "R1"}}), "causes is not a list"),
        (
            fenced({"verdict": "faulty", "causes": [{"device": "R1", "fault_type": "ospf"}]}),
            "fault_type 'ospf' is not one of",
        ),
        (
            fenced({"verdict": "faulty", "causes": [{"device": "R1", "fault_type": "none"}]}),
            "fault_type 'none' is not one of",
        ),
        (
            fenced(
                {
                    "verdict": "faulty",
                    "causes": [{"device": "R1", "fault_type": "link_down", "note": "x"}],
                }
            ),
            "unknown keys ['note']",
        ),
        (
            fenced({"verdict": "faulty", "causes": [{"fault_type": "link_down"}]}),
            "names a device or a link",
        ),
        (
            fenced(
                {
                    "verdict": "faulty",
                    "causes": [
                        {"device": "R1", "link": ["R1:eth1", "R2:eth1"], "fault_type": "link_down"}
                    ],
                }
            ),
            "names a device or a link",
        ),
        (
            fenced(
                {"verdict": "faulty", "causes": [{"link": ["R1", "R2"], "fault_type": "link_down"}]}
            ),
            "not two NODE:INTERFACE ends",
        ),
        (
            fenced({"verdict": "faulty", "causes": [{"device": "", "fault_type": "link_down"}]}),
            "device is not a name",
        ),
        (
            fenced(
                {
                    "verdict": "faulty",
                    "causes": [{"device": "R1", "interface": 0, "fault_type": "link_down"}],
                }
            ),
            "interface is not a name",
        ),
    ],
)
def test_anything_else_is_malformed_and_says_why(answer: str, reason: str) -> None:
    parsed = parse_diagnosis(answer)
    assert isinstance(parsed, Malformed), parsed
    assert reason in parsed.reason


def test_the_question_is_the_same_on_every_lab_and_lists_every_fault_type() -> None:
    shapes = {f.lab for f in CATALOG}
    summaries = {s.summary for s in shapes}
    asked = {diagnosis_question(s) for s in summaries}
    assert len(asked) == len(summaries)
    for question in asked:
        assert all(kind in question for kind in FAULT_TYPES)
        assert "none" not in question.split('fault_type" is one of:')[1]
    # Nothing of any case is in it: no fault's id, title or ground-truth node and type.
    for fault in CATALOG:
        question = diagnosis_question(fault.lab.summary)
        assert fault.id not in question and fault.title not in question


def test_every_ground_truth_of_the_catalog_written_as_asked_reads_back_and_scores_1() -> None:
    for fault in CATALOG:
        perfect = Diagnosis.from_truth(fault.ground_truth)
        parsed = parse_diagnosis(fenced(diagnosis_data(perfect)))
        assert parsed == perfect, fault.id
        score = score_diagnosis(parsed, fault.ground_truth)
        assert score.root_cause_f1 == 1.0 and score.localisation == 1.0, fault.id


# ------------------------------------------------------------------ choosing the cases
def test_cases_by_id_by_topic_and_with_their_labs_healthy_cases() -> None:
    chosen = select_cases(CATALOG, ["frr-lan-interface-shut", "static-missing-route"])
    assert [f.id for f in chosen] == [
        "frr-lan-interface-shut",
        "healthy-ospf-pair",
        "static-missing-route",
        "healthy-static-pair",
    ]
    alone = select_cases(CATALOG, ["frr-lan-interface-shut"], healthy=False)
    assert [f.id for f in alone] == ["frr-lan-interface-shut"]
    bgp = select_cases(CATALOG, topics=["bgp"])
    assert [f.id for f in bgp] == [
        "bgp-wrong-remote-as",
        "bgp-wrong-neighbor-address",
        "healthy-bgp-pair",
    ]
    everything = select_cases(CATALOG)
    assert [f.id for f in everything] == [f.id for f in CATALOG]
    with pytest.raises(FaultsSetupError, match="no fault 'nope'"):
        select_cases(CATALOG, ["nope"])


# ------------------------------------------------------------------ adding up
def fix(score: float, fixed: bool, met: int, checks: int, held: int, kept: int) -> FixRun:
    return FixRun(score, fixed, met, checks, held, kept, tool_calls=2, tokens=100, seconds=3.0)


RUNS = [
    # A perfect diagnosis, repaired.
    CaseRun("a", "ospf", 2, False, 1, True, None, None, 1.0, 1.0, 1.0, 1.0, True,
            tool_calls=2, tokens=1000, diagnose_s=4.0, fix=fix(1.0, True, 2, 2, 3, 3),
            restored=True),
    # Right device, wrong type: F1 0, localisation 1; the repair routed around (a
    # constraint broken).
    CaseRun("b", "hosts", 1, False, 1, True, None, None, 0.0, 0.0, 0.0, 1.0, True,
            tool_calls=4, tokens=3000, diagnose_s=6.0, fix=fix(0.75, False, 1, 1, 2, 3),
            restored=True),
    # Malformed: scored 0.
    CaseRun("c", "hosts", 1, False, 1, True, None, "no fenced JSON block",
            tool_calls=0, tokens=500, diagnose_s=2.0, fix=fix(0.5, False, 0, 1, 1, 1),
            restored=True),
    # A healthy case called healthy.
    CaseRun("h", "healthy", 1, True, 1, True, None, None, 1.0, 1.0, 1.0, 1.0, True,
            tool_calls=2, tokens=1500, diagnose_s=3.0, fix=fix(1.0, True, 4, 4, 5, 5),
            restored=True),
    # Could not run: not in the means.
    CaseRun("d", "ospf", 2, False, 1, error="the fault did not take: ...", restored=True),
]  # fmt: skip


def test_the_summary_of_known_runs_is_exact() -> None:
    s = summarise(RUNS)
    assert (s.runs, s.diagnosed, s.errors, s.malformed, s.perfect, s.passed) == (5, 4, 1, 1, 2, 2)
    assert s.root_cause_f1 == 0.5  # (1 + 0 + 0 + 1) / 4
    assert s.localisation == 0.75  # (1 + 1 + 0 + 1) / 4
    assert s.verdict_accuracy == 0.75  # the malformed one is a wrong verdict
    assert (s.healthy_runs, s.healthy_right, s.faulty_runs, s.detected) == (1, 1, 3, 2)
    assert (s.fixes, s.fixed, s.fix_score) == (4, 2, 0.8125)
    assert (s.checks_met, s.checks, s.constraints_held, s.constraints) == (7, 8, 11, 12)
    assert (s.restores, s.restored) == (5, 5)
    assert s.tool_calls == 4.0  # (2+2 + 4+2 + 0+2 + 2+2) / 4
    assert s.tokens == 1600.0  # (1100 + 3100 + 600 + 1600) / 4
    assert s.diagnose_s == 3.75
    assert s.per_trial_f1 == (0.5,)


def test_the_table_and_the_json_say_the_same() -> None:
    table = format_table(RUNS)
    lines = table.splitlines()
    assert len(lines) == 1 + 5 + 3  # head, a row per case, three summary lines
    assert lines[3].startswith("c ") and "(malformed: no fenced JSON block)" in lines[3]
    assert "(error: the fault did not take: ...)" in lines[5]
    assert "root-cause F1 0.50, localisation 0.75, verdicts right 0.75 over 4 diagnosed" in table
    assert "healthy cases called healthy 1/1" in table and "faults detected 2/3" in table
    assert "repairs graded full 2/4 (mean grade 0.81)" in table
    assert lines[-1] == "2/5 case runs passed; 1 could not run; labs restored exactly 5/5"
    data = faults_json(RUNS, {"model": "tiny"})
    assert data["suite"] == "faults" and data["model"] == "tiny"
    assert [r["passed"] for r in data["runs"]] == [True, False, False, True, False]
    assert data["summary"]["root_cause_f1"] == 0.5
    assert data["per_topic"]["hosts"]["root_cause_f1"] == 0.0
    assert data["per_topic"]["hosts"]["localisation"] == 0.5
    assert data["per_case"]["d"]["diagnosed"] == 0
    json.dumps(data)  # it is JSON
