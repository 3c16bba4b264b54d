"""Troubleshooting drills over real HTTP on 127.0.0.1 (issue 38): the catalog's topics,
start, hints, a wrong fix graded with partial credit, a right fix graded full, the end
with its restore and the answer; the same from chat, with the scripted model as tutor
calling ``practice_drill``. Before the end, the fault's id, title, inject lines and
ground truth appear in no response, SSE event, history, model context or tool result.

The lab is the core's ``FakeDrillLab`` (``copilot_core.testing``): configuration lines
in memory, which the drill's steps change as a device would; the student's fixes are
made on it directly, as their console commands would. Its checks are answered from those
lines (R1 and R2 are OSPF Full unless R2 sends hellos every 5 s; PC1 reaches PC2 when
they are, or when R1 routes around). The real lab is ``tests/lab/test_fault_catalog_lab.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from adapters.gns3 import DrillTools, load_fault_catalog
from copilot_core import AbortToken, CopilotMode, ToolContext
from copilot_core.drills import DrillCaller, Drills, InMemoryDrillResults
from copilot_core.faults import DeviceLines, Fault
from copilot_core.intent import Check, Observation
from copilot_core.ports import ParsedToolCall
from copilot_core.testing import (
    FakeCheckProbes,
    FakeDrillLab,
    FakeWaitClock,
    SteppingClock,
    text_reply,
    tool_reply,
)
from tests.api.conftest import (
    BOB,
    OPEN,
    RawEvent,
    SequentialUuids,
    Service,
    raw_events,
    run_service,
)

CATALOG = tuple(load_fault_catalog())
HELLO = next(f for f in CATALOG if f.id == "ospf-hello-mismatch")
#: Another topic, so that asking for OSPF picks HELLO.
BGP = next(f for f in CATALOG if f.topic.value == "bgp")
DRILLS = f"/v3/copilot/projects/{OPEN}/drills"
ROUTE_AROUND = "ip route 10.0.2.0/24 10.0.12.2"


def secrets_of(fault: Fault) -> list[str]:
    """What must not be seen before the drill ends: the fault's id, title, fault type,
    resource, every inject line that names it, and the answer's own keys."""
    found = [fault.id, fault.title, fault.ground_truth.fault_type.value, "ground_truth"]
    if fault.ground_truth.resource:
        found.append(fault.ground_truth.resource)
    for step in fault.inject:
        if isinstance(step, DeviceLines):
            found += [line for line in step.lines if line != "interface eth1"]  # R2's, generic
    return found


def assert_secret_free(text: str, fault: Fault = HELLO) -> None:
    for secret in secrets_of(fault):
        assert secret not in text, secret


@dataclass
class Lab:
    """The lab in memory and its checks (see the module)."""

    lab: FakeDrillLab = field(default_factory=lambda: FakeDrillLab.for_shape(HELLO.lab))
    probes: FakeCheckProbes = field(init=False)

    def __post_init__(self) -> None:
        self.probes = FakeCheckProbes(self.answer)

    def answer(self, check: Check, context: Any) -> Observation:
        ospf = not any(line.startswith("ip ospf hello-interval") for line in self.lab.nodes["R2"])
        around = any(line.startswith("ip route") for line in self.lab.nodes["R1"])
        holds = ospf if check.kind == "ospf_neighbor" else ospf or around
        return Observation.passed("as expected") if holds else Observation.failed("no", "not so")

    def drills(self, faults: tuple[Fault, ...] = (HELLO, BGP)) -> Drills:
        return Drills(
            faults,
            self.lab,
            self.probes,
            InMemoryDrillResults(),
            clock=SteppingClock(),
            ids=SequentialUuids(),
            wait_clock=FakeWaitClock(),
            rng=random.Random(1),
        )


@contextlib.asynccontextmanager
async def drill_service(
    lab: Lab, faults: tuple[Fault, ...] = (HELLO, BGP)
) -> AsyncIterator[Service]:
    async with run_service(drills=lab.drills(faults)) as service:
        yield service


async def test_a_drill_over_http_from_start_to_restore_never_shows_the_answer_early() -> None:
    lab = Lab()
    healthy = lab.lab.state()
    seen: list[str] = []  # every body before the end
    async with drill_service(lab) as service, service.client() as client:
        catalog = await client.get(f"{DRILLS}/catalog")
        started = await client.post(f"{DRILLS}/", json={"topic": "ospf", "difficulty": 2})
        assert started.status_code == 201, started.text
        drill = started.json()
        drill_id = drill["id"]
        assert drill["topic"] == "ospf" and drill["symptoms"] == [
            "R1 and R2 are OSPF Full",
            "PC1 reaches PC2",
        ]
        assert drill["hints"] == [] and drill["hints_left"] == len(HELLO.hints)
        assert lab.lab.nodes["R2"] == list(HELLO.inject[0].lines)  # type: ignore[union-attr]
        active = await client.get(f"{DRILLS}/active")
        assert active.json() == drill
        hints = [await client.post(f"{DRILLS}/{drill_id}/hints") for _ in range(2)]
        assert hints[-1].json()["hints"] == list(HELLO.hints[:2])
        # A wrong fix: R1 routes around the fault; reachability holds, OSPF does not.
        lab.lab.nodes["R1"].append(ROUTE_AROUND)
        wrong = await client.post(f"{DRILLS}/{drill_id}/grade", params={"wait_s": 0})
        assert wrong.status_code == 200, wrong.text
        graded = wrong.json()
        met = {c["name"]: c["met"] for c in graded["conditions"]}
        assert met["R1 and R2 are OSPF Full"] is False and met["PC1 reaches PC2"] is True
        assert met["no static route added on R1"] is False
        assert 0 < graded["score"] < 1 and graded["fixed"] is False
        assert graded["score"] == sum(met.values()) / len(met)
        assert graded["hints_used"] == 2
        # The right fix: the route taken back, R2's hellos as R1's.
        lab.lab.nodes["R1"].remove(ROUTE_AROUND)
        lab.lab.nodes["R2"] = [line for line in lab.lab.nodes["R2"] if "hello" not in line]
        right = await client.post(f"{DRILLS}/{drill_id}/grade", params={"wait_s": 0})
        assert right.json()["score"] == 1.0 and right.json()["fixed"] is True
        again = await client.get(f"{DRILLS}/active")
        assert again.json()["score"] == 1.0
        seen += [r.text for r in (catalog, started, active, *hints, wrong, right, again)]
        ended = await client.post(f"{DRILLS}/{drill_id}/end")
        assert ended.status_code == 200, ended.text
        history = await client.get(f"{DRILLS}/history")
        best = await client.get(f"{DRILLS}/best-scores")
        after = await client.get(f"{DRILLS}/active")
    for body in seen:
        assert_secret_free(body)
    end = ended.json()
    assert end["answer"]["fault_id"] == HELLO.id and end["answer"]["title"] == HELLO.title
    assert end["answer"]["ground_truth"]["fault_type"] == "ospf_hello_mismatch"
    assert end["restore"] == {"exact": True, "differences": []}
    assert end["result"]["score"] == 1.0 and end["result"]["given_up"] is False
    assert lab.lab.state() == healthy  # the lab as before the fault
    assert [h["drill_id"] for h in history.json()] == [drill_id]
    assert best.json() == {"best_scores": {HELLO.id: 1.0}}
    assert after.status_code == 404


async def test_refusals_a_second_drill_a_lab_that_does_not_fit_and_bad_input() -> None:
    lab = Lab()
    async with drill_service(lab) as service, service.client() as client:
        none = await client.get(f"{DRILLS}/active")
        assert none.status_code == 404
        lab.lab.missing = ("R2 is stopped: start it",)
        unfit = await client.post(f"{DRILLS}/", json={"topic": "ospf"})
        assert unfit.status_code == 409
        assert unfit.json()["code"] == "lab_does_not_fit"
        assert unfit.json()["missing"] == ["R2 is stopped: start it"]
        lab.lab.missing = ()
        for bad in ({"topic": "cooking"}, {"difficulty": 9}, {"fault_id": HELLO.id}):
            refused = await client.post(f"{DRILLS}/", json=bad)
            assert refused.status_code == 422, bad
        assert (await client.post(f"{DRILLS}/{'x' * 8}/hints")).status_code == 422
        empty = await client.post(f"{DRILLS}/", json={"topic": "filtering"})
        assert empty.status_code == 422 and "no drill" in empty.json()["detail"]
        first = await client.post(f"{DRILLS}/", json={})
        assert first.status_code == 201, first.text
        drill_id = first.json()["id"]
        async with service.client(BOB) as bob:
            second = await bob.post(f"{DRILLS}/", json={})
            assert second.status_code == 409 and second.json()["code"] == "drill_active"
            theirs = await bob.post(f"{DRILLS}/{drill_id}/hints")
            assert theirs.status_code == 404  # another user's drill is not theirs to touch
            assert (await bob.get(f"{DRILLS}/active")).status_code == 404
        for _ in HELLO.hints:
            await client.post(f"{DRILLS}/{drill_id}/hints")
        spent = await client.post(f"{DRILLS}/{drill_id}/hints")
        assert spent.status_code == 422
        gave_up = await client.post(f"{DRILLS}/{drill_id}/end", params={"give_up": "true"})
        assert gave_up.json()["result"]["given_up"] is True
        assert gave_up.json()["result"]["score"] is None
        gone = await client.post(f"{DRILLS}/{drill_id}/grade")
        assert gone.status_code == 404


async def test_a_fault_that_cannot_be_sent_is_taken_back_and_answered_502() -> None:
    lab = Lab()
    lab.lab.fail_step = 0
    lab.lab.fail_reason = f"R2 refused '{HELLO.inject[0].lines[1]}'"  # type: ignore[union-attr]
    async with drill_service(lab) as service, service.client() as client:
        failed = await client.post(f"{DRILLS}/", json={"topic": "ospf"})
        after = await client.get(f"{DRILLS}/active")
    assert failed.status_code == 502
    body = failed.json()
    assert body["code"] == "drill_not_started" and body["restored"] is True
    assert_secret_free(failed.text)
    assert after.status_code == 404


async def test_the_catalog_lists_topics_and_difficulties_and_nothing_of_a_fault() -> None:
    lab = Lab()
    async with drill_service(lab, CATALOG) as service, service.client() as client:
        listed = await client.get(f"{DRILLS}/catalog")
    assert listed.status_code == 200
    topics = {t["topic"]: t for t in listed.json()["topics"]}
    assert "healthy" not in topics and {"ospf", "bgp", "hosts"} <= set(topics)
    drillable = [f for f in CATALOG if not f.healthy]
    assert sum(t["faults"] for t in topics.values()) == len(drillable)
    for fault in drillable:
        assert fault.id not in listed.text and fault.title not in listed.text


async def test_drills_are_501_where_the_deployment_has_none(service: Service) -> None:
    async with service.client() as client:
        answered = await client.get(f"{DRILLS}/active")
    assert answered.status_code == 501


# ----------------------------------------------------------------------- chat
async def _turn(
    service: Service, client: Any, message: str, session_id: str | None
) -> tuple[str, list[RawEvent]]:
    """One chat turn over SSE, approving what it asks (starting and ending a drill)."""
    url = service.chat_url()
    body: dict[str, Any] = {"message": message, "copilot_mode": "teaching_assistant"}
    if session_id:
        body["session_id"] = session_id
    events: list[RawEvent] = []
    async with client.stream("POST", url + "/stream", json=body) as stream:
        assert stream.status_code == 200
        session_id = stream.headers["x-session-id"]
        async for event in raw_events(stream):
            events.append(event)
            if event.type == "approval_required":
                assert_secret_free(json.dumps(event.data))
                decided = await client.post(
                    f"{url}/sessions/{session_id}/approvals/{event.data['approval_id']}",
                    json={"decision": "approve"},
                )
                assert decided.status_code == 200, decided.text
            if event.type == "done":
                break
    assert session_id is not None
    return session_id, events


def _tool_outputs(events: list[RawEvent]) -> list[dict[str, Any]]:
    return [json.loads(e.data["tool_output"]) for e in events if e.type == "tool_end"]


async def test_from_chat_the_tutor_starts_hints_grades_and_ends_through_the_use_case() -> None:
    lab = Lab()
    async with drill_service(lab) as service, service.client() as client:
        model = service.model
        model.add(
            tool_reply(("practice_drill", {"action": "start", "topic": "ospf"})),
            text_reply("A fault is in: R1 and R2 are not OSPF Full. Where would you look?"),
            tool_reply(("practice_drill", {"action": "hint"})),
            text_reply("Hint: look at OSPF."),
            tool_reply(("practice_drill", {"action": "grade"})),
            text_reply("Not yet: OSPF is still down."),
        )
        session_id, started = await _turn(service, client, "give me an OSPF fault", None)
        [start] = _tool_outputs(started)
        assert start["status"] == "success" and start["drill"]["topic"] == "ospf"
        assert lab.lab.applied == list(HELLO.inject)  # the use case injected, not the model
        _, hinted = await _turn(service, client, "a hint please", session_id)
        assert _tool_outputs(hinted)[0]["drill"]["hints"] == [HELLO.hints[0]]
        _, graded = await _turn(service, client, "grade me", session_id)
        grade = _tool_outputs(graded)[0]["grade"]
        assert grade["fixed"] is False and grade["score"] < 1
        history = await client.get(f"{service.chat_url()}/sessions/{session_id}/history")
        before_end = [
            json.dumps([e.data for e in started + hinted + graded]),
            history.text,
            *(json.dumps([m.to_dict() for m in call.messages]) for call in model.calls),
        ]
        for text in before_end:
            assert_secret_free(text)
        assert (await client.get(f"{DRILLS}/active")).json()["hints_used"] == 1
        model.add(
            tool_reply(("practice_drill", {"action": "end", "give_up": True})),
            text_reply("It was R2's hello interval."),
        )
        _, ended = await _turn(service, client, "I give up", session_id)
    [end] = _tool_outputs(ended)
    assert end["answer"]["fault_id"] == HELLO.id
    assert end["restore"]["exact"] is True and end["result"]["given_up"] is True
    assert lab.lab.method_calls()[-1] == "restore"


@pytest.mark.parametrize("action", ["status", "hint", "grade", "end"])
async def test_from_chat_without_a_drill_the_tool_says_none_is_running(action: str) -> None:
    lab = Lab()
    async with drill_service(lab) as service, service.client() as client:
        service.model.add(
            tool_reply(("practice_drill", {"action": action})), text_reply("No drill.")
        )
        _, events = await _turn(service, client, "how is my drill?", None)
    [output] = _tool_outputs(events)
    assert output["drill"] is None and "No drill" in output["note"]
    assert lab.lab.calls == []


async def test_a_start_whose_call_is_cancelled_still_hands_the_drill_over() -> None:
    """The gate's time limit or an abort cancels the call, not the start: a start cut
    half-way would leave the project reserved with the fault in it and nothing to end."""
    lab = Lab()
    drills = lab.drills()
    release = asyncio.Event()
    observing = asyncio.Event()

    async def slow(check: Check, context: Any) -> Observation:
        observing.set()
        await release.wait()
        return lab.answer(check, context)

    lab.probes.answer = slow
    tools = DrillTools(drills)
    call = ParsedToolCall("c1", "practice_drill", "", {"action": "start", "topic": "ospf"})
    context = ToolContext(OPEN, "u-alice", "s1", CopilotMode.TEACHING_ASSISTANT, AbortToken())
    waiting = asyncio.create_task(tools.execute(call, context))
    await observing.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await asyncio.gather(*tools._running)
    caller = DrillCaller(OPEN, "u-alice")
    view = await drills.current(caller)
    assert view is not None and view.topic.value == "ospf"
