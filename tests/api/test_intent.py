"""Standing intent over HTTP: each user keeps their own checks per project (GET/PUT
``…/intent``, in the real SQLite store and the in-memory one), a bad check is refused
naming it and nothing is stored, and ``POST …/intent/run`` answers the lab's verdict on the
stored checks (in ``verify_intent``'s shape), asked with the caller's token, kept as the
checks' last run (with when it ended) until they are replaced by others."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.sqlite import SqliteCheckpointStore
from copilot_core.intent import Check, Observation, check_label, checks_adapter, dump_check
from copilot_core.ports import ToolContext
from tests.api.conftest import BOB, CLOSED, OPEN, Service, run_service

CHECKS = [
    {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2", "name": "R1-R2 Full"},
    {"kind": "reachability", "from": "PC1", "to": "PC2"},
]


def url(project: str = OPEN) -> str:
    return f"/v3/copilot/projects/{project}/intent"


async def exchange(service: Service) -> None:
    async with service.client() as alice, service.client(BOB) as bob:
        empty = {"checks": [], "updated_at": None, "last_run": None}
        assert (await alice.get(url())).json() == empty
        put = await alice.put(url(), json={"checks": CHECKS})
        assert put.status_code == 200, put.text
        stored = put.json()
        assert stored["checks"][0] == {**CHECKS[0], "state": "full"}  # defaults filled in
        assert stored["checks"][1] == {**CHECKS[1], "expect": "reachable", "count": 3}
        assert stored["updated_at"]
        assert (await alice.get(url())).json() == stored
        assert (await bob.get(url())).json()["checks"] == []  # Bob has his own
        await bob.put(url(), json={"checks": CHECKS[1:]})
        assert (await alice.get(url())).json() == stored
        assert len((await bob.get(url())).json()["checks"]) == 1
        # a closed project's intent can still be read and set
        assert (await alice.put(url(CLOSED), json={"checks": CHECKS[:1]})).status_code == 200


async def test_each_user_keeps_their_own_checks_per_project(service: Service) -> None:
    await exchange(service)


async def test_the_sqlite_store_keeps_them_across_a_restart(tmp_path: Path) -> None:
    for restart in (False, True):
        store = SqliteCheckpointStore(tmp_path)
        await store.open()
        try:
            async with run_service(store=store) as service:
                if not restart:
                    await exchange(service)
                    continue
                async with service.client() as alice:
                    body = (await alice.get(url())).json()
        finally:
            await store.close()
    assert [c["kind"] for c in body["checks"]] == ["ospf_neighbor", "reachability"]
    assert body["checks"][0]["name"] == "R1-R2 Full"


@pytest.mark.parametrize(
    ("checks", "names"),
    [
        (
            [{"kind": "route", "node": "R1", "prefix": "10.0.0/24"}],
            # in words, not as the pattern's regex
            "checks.0.route.prefix: Value error, '10.0.0/24' is not a prefix such as 10.0.2.0/24",
        ),
        ([{"kind": "telepathy"}], "checks.0"),
        ([{"kind": "interface", "node": "R1", "interface": "e0", "colour": "red"}], "colour"),
    ],
)
async def test_a_bad_check_is_refused_naming_it_and_nothing_is_stored(
    service: Service, checks: list[dict[str, Any]], names: str
) -> None:
    async with service.client() as alice:
        await alice.put(url(), json={"checks": CHECKS})
        refused = await alice.put(url(), json={"checks": checks})
        assert refused.status_code == 422, refused.text
        assert names in refused.text
        assert len((await alice.get(url())).json()["checks"]) == 2


async def test_run_answers_the_labs_verdict_on_the_stored_checks(
    service: Service,
) -> None:
    """The run asks the lab's probes (as ``verify_intent`` does) with the caller's token,
    as background work, retrying for ``wait_s``; its verdict is the answer."""

    def answer(check: Check, context: ToolContext) -> Observation:
        if check.kind == "ospf_neighbor":  # never holds: retried for the whole wait
            return Observation.failed({"state": "init"}, "R2 is init, not full")
        return Observation.passed({"replies": 3})

    service.probes.answer = answer
    async with service.client() as alice:
        empty = await alice.post(url() + "/run")
        assert empty.status_code == 200
        assert empty.json()["checks"] == [] and not service.probes.contexts  # nothing to check
        await alice.put(url(), json={"checks": CHECKS})
        ran = await alice.post(url() + "/run", params={"wait_s": 5})
        assert ran.status_code == 200, ran.text
        assert ran.json()["status"] == "fail"
        assert ran.json()["summary"] == {"pass": 1, "fail": 1, "error": 0}
        refused = await alice.post(url(CLOSED) + "/run")  # the lab must be open to run
        assert refused.status_code == 409
        too_long = await alice.post(url() + "/run", params={"wait_s": 301})
        assert too_long.status_code in (400, 422)
    (context,) = service.probes.contexts
    assert sum(service.wait_clock.sleeps) == 5  # retried for wait_s, not longer
    assert [c.kind for c in service.probes.rounds[0]] == ["ospf_neighbor", "reachability"]
    assert [c.kind for c in service.probes.rounds[-1]] == ["ospf_neighbor"]  # only the open one
    assert (context.project_id, context.user_id, context.credentials) == (
        OPEN,
        "u-alice",
        "token-alice",
    )
    assert context.background  # no person waits at a console for it


def verdict(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer of one round in which no check could be answered (no such node)."""
    return {
        "status": "error",
        "summary": {"pass": 0, "fail": 0, "error": len(checks)},
        "waited_s": 0.0,
        "checks": [
            {
                "name": check_label(check),
                "kind": check.kind,
                "check": dump_check(check),
                "status": "error",
                "observed": None,
                "evidence": [],
                "attempts": 1,
                "waited_s": 0.0,
                "reason": "no such node",
            }
            for check in checks_adapter.validate_python(checks)
        ],
    }


async def test_the_last_run_is_kept_with_when_it_ended_until_other_checks_are_set(
    service: Service,
) -> None:
    async with service.client() as alice, service.client(BOB) as bob:
        replace_meanwhile: list[dict[str, Any]] = []

        async def answer(check: Check, context: ToolContext) -> Observation:
            if replace_meanwhile:  # the user sets other checks while this run waits
                other = list(replace_meanwhile)
                replace_meanwhile.clear()
                assert (await alice.put(url(), json={"checks": other})).is_success
            return Observation.error("no such node")

        service.probes.answer = answer
        await alice.put(url(), json={"checks": CHECKS})
        await bob.put(url(), json={"checks": CHECKS})
        ran = (await alice.post(url() + "/run")).json()
        body = (await alice.get(url())).json()
        assert body["last_run"]["result"] == ran == verdict(CHECKS)
        at = datetime.fromisoformat(body["last_run"]["at"])
        assert at > datetime.fromisoformat(body["updated_at"])  # when the run ended
        assert (await bob.get(url())).json()["last_run"] is None  # Bob's did not run
        # the same checks again (defaults filled in or not): the run still describes them
        same = await alice.put(url(), json={"checks": body["checks"]})
        assert same.json()["last_run"] == body["last_run"]
        assert (await alice.put(url(), json={"checks": CHECKS})).json()["last_run"] == (
            body["last_run"]
        )
        # other checks: the run no longer describes them
        other = await alice.put(url(), json={"checks": CHECKS[1:]})
        assert other.json()["last_run"] is None
        assert (await alice.get(url())).json()["last_run"] is None
        # a run whose checks are replaced while it runs is answered but not kept
        replace_meanwhile.extend(CHECKS[:1])
        answered = await alice.post(url() + "/run")
        assert answered.status_code == 200
        assert answered.json() == verdict(CHECKS[1:])  # the checks it ran: those before
        after = (await alice.get(url())).json()
        assert [c["kind"] for c in after["checks"]] == ["ospf_neighbor"]
        assert after["last_run"] is None
