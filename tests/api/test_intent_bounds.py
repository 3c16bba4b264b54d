"""Standing intent over HTTP (a real server on 127.0.0.1), against an attacker: a check's
value that would be formatted into a device line is refused (422 naming the field, nothing
stored) unless it is a plain address or a name of the closed alphabet; one run per user
and project at a time (409 for another, saying a run is under way); and the answer comes
within ``wait_s`` plus one round, ``202`` with ``status: running`` when the run has not
ended, its result kept as the checks' last run when it does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from copilot_core.intent import Check, Observation, check_label, checks_adapter, dump_check
from copilot_core.ports import ToolContext
from tests.api.conftest import BOB, Service, run_service
from tests.fakes.loop_clock import stepping_loop_clock

pytestmark = pytest.mark.timeout(60)

CHECKS = [{"kind": "reachability", "from": "H1", "to": "10.0.2.10", "name": "H1-PC2"}]
#: Issue 35, case 2: an IPv6 "address" whose scope id is a shell line.
ATTACK = {"kind": "reachability", "from": "H1", "to": "fe80::1%x;ip link set eth1 down"}


def url(project: str = "0b1e2c3d-4f50-4a6b-8c7d-9e0f1a2b3c4d") -> str:
    return f"/v3/copilot/projects/{project}/intent"


@pytest.fixture
async def quick() -> AsyncIterator[Service]:
    """The service with a standing-intent round of 0.5 s (the answer's bound is
    ``wait_s + 0.5``)."""
    async with run_service(intent_round_s=0.5) as running:
        yield running


@pytest.mark.parametrize(
    ("check", "field"),
    [
        (ATTACK, "checks.0.reachability.to"),
        ({**ATTACK, "to": "10.0.0.1;reboot"}, "checks.0.reachability.to"),
        ({**ATTACK, "to": "$(reboot)"}, "checks.0.reachability.to"),
        ({**ATTACK, "to": "-f"}, "checks.0.reachability.to"),  # an option, not a target
        ({**ATTACK, "to": "10.0.0.1", "from": "H1 ; id"}, "checks.0.reachability.from"),
        (
            {"kind": "interface", "node": "vmx", "interface": "ge-0/0/0 | save /var/tmp/x"},
            "checks.0.interface.interface",
        ),
        (
            {"kind": "interface", "node": "R'1", "interface": "eth1"},
            "checks.0.interface.node",
        ),
        (
            {"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "eth1`id`"},
            "checks.0.route.via",
        ),
        (
            {"kind": "ospf_neighbor", "node": "R1", "neighbor": "fe80::2%eth1|cat"},
            "checks.0.ospf_neighbor.neighbor",
        ),
        (
            {"kind": "bgp_session", "node": "R1", "peer": "10.0.12.2 count 99999"},
            "checks.0.bgp_session.peer",
        ),
    ],
)
async def test_a_value_outside_the_closed_alphabet_is_refused_naming_its_field(
    service: Service, check: dict[str, Any], field: str
) -> None:
    async with service.client() as alice:
        assert (await alice.put(url(), json={"checks": CHECKS})).status_code == 200
        refused = await alice.put(url(), json={"checks": [check]})
        assert refused.status_code == 422, refused.text
        assert field in refused.text, refused.text
        assert (await alice.get(url())).json()["checks"][0]["to"] == "10.0.2.10"  # unchanged


async def test_plain_addresses_and_names_are_still_checks(service: Service) -> None:
    checks = [
        {"kind": "reachability", "from": "PC-1", "to": "fe80::1%eth0"},
        {"kind": "reachability", "from": "PC1", "to": "2001:db8::10"},
        {"kind": "interface", "node": "vmx", "interface": "ge-0/0/0.0"},
        {"kind": "route", "node": "R1", "prefix": "10.0.2.0/24", "via": "Serial0/0/0:1"},
    ]
    async with service.client() as alice:
        stored = await alice.put(url(), json={"checks": checks})
        assert stored.status_code == 200, stored.text
        assert [c.get("to") for c in stored.json()["checks"][:2]] == [
            "fe80::1%eth0",
            "2001:db8::10",
        ]


def verdict(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer of a run in which each check passed at its first round."""
    return {
        "status": "pass",
        "summary": {"pass": len(checks), "fail": 0, "error": 0},
        "waited_s": 0.0,
        "checks": [
            {
                "name": check_label(check),
                "kind": check.kind,
                "check": dump_check(check),
                "status": "pass",
                "observed": {"replies": 3},
                "evidence": [],
                "attempts": 1,
                "waited_s": 0.0,
            }
            for check in checks_adapter.validate_python(checks)
        ],
    }


class HeldLab:
    """A lab whose checks are each held until released (a console another run holds,
    say), counting the runs that started."""

    def __init__(self) -> None:
        self.runs: set[int] = set()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    @property
    def started(self) -> int:
        return len(self.runs)

    async def __call__(self, check: Check, context: ToolContext) -> Observation:
        self.runs.add(id(context))
        self.entered.set()
        await self.release.wait()
        return Observation.passed({"replies": 3})


async def test_a_second_run_while_one_is_under_way_is_409_for_that_user_only(
    service: Service,
) -> None:
    held = HeldLab()
    service.probes.answer = held
    async with service.client() as alice, service.client(BOB) as bob:
        await alice.put(url(), json={"checks": CHECKS})
        await bob.put(url(), json={"checks": CHECKS})
        first = asyncio.create_task(alice.post(url() + "/run", params={"wait_s": 5}))
        await asyncio.wait_for(held.entered.wait(), 10)
        second = await alice.post(url() + "/run", params={"wait_s": 5})
        assert second.status_code == 409, second.text
        assert "under way" in second.json()["detail"]
        assert held.started == 1  # the refused run never reached the devices
        bobs = asyncio.create_task(bob.post(url() + "/run"))  # Bob's own run is his
        for _ in range(200):
            if held.started == 2:
                break
            await asyncio.sleep(0.02)
        assert held.started == 2
        held.release.set()
        answered = await asyncio.wait_for(first, 10)
        assert answered.status_code == 200, answered.text
        assert answered.json()["status"] == "pass"
        assert (await asyncio.wait_for(bobs, 10)).status_code == 200
        again = await alice.post(url() + "/run")  # ended: a new run may start
        assert again.status_code == 200, again.text


async def test_the_answer_comes_within_wait_s_plus_a_round_and_the_run_goes_on(
    quick: Service,
) -> None:
    held = HeldLab()
    quick.probes.answer = held
    async with quick.client() as alice:
        await alice.put(url(), json={"checks": CHECKS})
        # The loop's clock stands still: the answer can come only from the bound's timer
        # firing when the test moves time, or from the run's end (held: never, here).
        with stepping_loop_clock() as clock:
            asked = asyncio.create_task(alice.post(url() + "/run", params={"wait_s": 1}))
            await held.entered.wait()  # the run is under way, its check held
            assert not await clock.until(asked.done, passes=200)  # no time: no answer
            await clock.advance(1.0)  # wait_s alone is not the bound
            assert not await clock.until(asked.done, passes=200)
            await clock.advance(0.5)  # wait_s (1) + the round (0.5): the bound
            late = await asked
        assert not held.release.is_set()  # answered at the bound, before the run's end
        assert late.status_code == 202, late.text
        body = late.json()
        assert body["status"] == "running"
        assert body["summary"] == {"pass": 0, "fail": 0, "error": 0}
        assert [(c["name"], c["status"]) for c in body["checks"]] == [("H1-PC2", "running")]
        assert "last run" in body["message"]
        # the run goes on: another is refused until it ends, and nothing is kept yet
        busy = await alice.post(url() + "/run")
        assert busy.status_code == 409, busy.text
        assert (await alice.get(url())).json()["last_run"] is None
        held.release.set()
        for _ in range(250):
            kept = (await alice.get(url())).json()["last_run"]
            if kept is not None:
                break
            await asyncio.sleep(0.02)
        assert kept is not None, "the run's result was not kept when it ended"
        assert kept["result"] == verdict(CHECKS)
        assert held.started == 1
        now = await alice.post(url() + "/run", params={"wait_s": 1})
        assert now.status_code == 200, now.text
        assert "message" not in now.json()  # the documented shape of an ended run
