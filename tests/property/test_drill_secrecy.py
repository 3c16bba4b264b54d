"""A drill never gives its answer away before it ends (issue 38): over random faults of
the real catalog and random runs (hints asked, a fix graded, a step that fails, a symptom
that does not show, a restore that leaves the fault's lines), no view, grade or error says
the fault's id, title, inject lines or fault type; the end reveals them."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.gns3 import load_fault_catalog
from copilot_core.drills import DrillCaller, DrillChoice, Drills, InMemoryDrillResults
from copilot_core.errors import CopilotError
from copilot_core.faults import DeviceLines, Fault
from copilot_core.intent import Check, Observation, check_label
from copilot_core.testing import (
    FakeCheckProbes,
    FakeDrillLab,
    FakeWaitClock,
    SequentialIds,
    SteppingClock,
)

CATALOG = tuple(load_fault_catalog())
FAULTS = [f for f in CATALOG if not f.healthy]
CALLER = DrillCaller("p1", "alice", credentials="token")


def secrets(fault: Fault) -> set[str]:
    """What names the answer: the id, the title, the fault type, each inject line, and
    the ground truth's resource unless the student is told it anyway (a symptom, a hint)."""
    found = {fault.id, fault.title, fault.ground_truth.fault_type.value}
    found |= {line for s in fault.inject if isinstance(s, DeviceLines) for line in s.lines}
    public = " ".join([*fault.hints, *map(check_label, fault.symptoms), fault.lab.summary])
    resource = fault.ground_truth.resource
    if resource and resource not in public:
        found.add(resource)
    return {s for s in found if len(s) >= 4}


def world(fault: Fault) -> tuple[Drills, FakeDrillLab, dict[str, Any]]:
    lab = FakeDrillLab.for_shape(fault.lab)
    healthy = lab.state()
    state: dict[str, Any] = {"working": None, "hold": False}

    def answer(check: Check, context: Any) -> Observation:
        ok = state["working"] if state["working"] is not None else lab.state() == healthy
        return Observation.passed("ok") if ok or state["hold"] else Observation.failed("x", "no")

    drills = Drills(
        CATALOG,
        lab,
        FakeCheckProbes(answer),
        InMemoryDrillResults(),
        clock=SteppingClock(),
        ids=SequentialIds("drill"),
        wait_clock=FakeWaitClock(),
        rng=random.Random(0),
    )
    return drills, lab, state


async def run(fault: Fault, path: str, hints: int, fixed: bool) -> tuple[list[str], Any]:
    """Everything the student is shown before the end, and the ending (or ``None``)."""
    drills, lab, state = world(fault)
    shown: list[str] = []
    if path == "step fails":
        lab.fail_step = len(fault.inject) - 1
        lab.fail_reason = f"refused {json.dumps([s.model_dump() for s in fault.inject])}"
    state["hold"] = path in ("symptoms hold", "restore differs")
    if path == "restore differs":
        lab.restore_leaves = tuple(f"config + {line}" for line in sorted(secrets(fault)))
    try:
        view = await drills.start(CALLER, DrillChoice(fault_id=fault.id))
    except CopilotError as exc:
        return [exc.message, str(exc), *getattr(exc, "differences", ())], None
    shown.append(json.dumps(view.to_json()))
    for _ in range(min(hints, len(fault.hints))):
        shown.append(json.dumps((await drills.hint(CALLER, view.id)).to_json()))
    if fixed:
        state["working"] = True
    grade = await drills.grade(CALLER, view.id, wait_s=0)
    shown += [f"{c.name} {c.evidence}" for c in grade.conditions]
    current = await drills.current(CALLER)
    assert current is not None
    shown.append(json.dumps(current.to_json()))
    return shown, await drills.end(CALLER, view.id, give_up=not fixed)


@given(
    st.sampled_from(FAULTS),
    st.sampled_from(["handed over", "step fails", "symptoms hold", "restore differs"]),
    st.integers(0, 10),
    st.booleans(),
)
def test_nothing_shown_before_the_end_names_the_answer(
    fault: Fault, path: str, hints: int, fixed: bool
) -> None:
    shown, ending = asyncio.run(run(fault, path, hints, fixed))
    hidden = secrets(fault)
    for text in shown:
        leaked = [s for s in hidden if s in text]
        assert not leaked, (fault.id, path, leaked, text)
    if ending is not None:
        revealed = json.dumps(ending.answer.to_json())
        assert fault.id in revealed and fault.ground_truth.fault_type.value in revealed
        assert ending.restore.exact and ending.outcome.restored
