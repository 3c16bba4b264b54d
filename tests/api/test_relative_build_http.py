"""A relative build over real HTTP on 127.0.0.1 against a real gns3-server 3.0.6 (issue
39): ``POST …/labs/plan`` with ``relative`` answers the difference and the lab's
fingerprint (``change.base``), and a digest bound to both; ``POST …/labs/build`` with
``base`` builds only the difference (the link the lab has kept, the
new PC made), and a relative build whose base or digest is not the one shown is refused.

The service is :mod:`tests.api.test_lab_build_http`'s (the real GNS3 tools, planner and
build tool; no VPCS binary here, so a build's checks fail and it is rolled back).
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.gns3 import Gns3Client
from copilot_core.labs import parse_plan
from tests.adapters.gns3.conftest import TWO_PCS_PLAN
from tests.api.test_lab_build_http import Service, lab_of, service

__all__ = ["service"]  # the fixture, imported

pytestmark = [pytest.mark.gns3, pytest.mark.timeout(300)]

BUILT = {
    "nodes": [("PCA", -150, 40), ("PCB", 150, -40)],
    "links": [[("PCA", 0, 0), ("PCB", 0, 0)]],
}
THREE_PCS: dict[str, Any] = {
    **TWO_PCS_PLAN,
    "nodes": [*TWO_PCS_PLAN["nodes"], {"name": "PCC", "platform": "vpcs", "x": 0, "y": 200}],
    "config": {**TWO_PCS_PLAN["config"], "PCC": ["ip 10.9.1.3/24"]},
}


async def _two_pcs_kept(service: Service) -> None:
    """The two PCs built and kept (their check fails here: ``on_fail: keep``)."""
    shown = (await service.api.post("/labs/plan", json={"plan": TWO_PCS_PLAN})).json()
    kept = await service.api.post(
        "/labs/build",
        json={
            "plan": shown["plan"], "digest": shown["digest"],
            "session_id": service.session_id, "wait_s": 0, "on_fail": "keep",
        },
    )  # fmt: skip
    assert kept.status_code == 200, kept.text


async def test_a_relative_plan_is_built_as_its_difference_bound_to_its_base(
    service: Service, gns3_client: Gns3Client, admin_token: str
) -> None:
    await _two_pcs_kept(service)
    assert await lab_of(gns3_client, admin_token, service.project_id) == BUILT
    absolute = (await service.api.post("/labs/plan", json={"plan": THREE_PCS})).json()
    answer = await service.api.post("/labs/plan", json={"plan": THREE_PCS, "relative": True})
    assert answer.status_code == 200, answer.text
    shown = answer.json()
    change = shown["change"]
    assert change["add_nodes"] == ["PCC"] and change["remove_links"] == []
    assert change["base"].startswith("sha256:")
    assert shown["digest"] != absolute["digest"]  # bound to the base too

    def body(**extra: Any) -> dict[str, Any]:
        return {"plan": shown["plan"], "session_id": service.session_id, "wait_s": 0, **extra}

    not_relative = await service.api.post("/labs/build", json=body(digest=shown["digest"]))
    assert not_relative.status_code == 409, not_relative.text  # another call than shown
    stale = "sha256:" + "1" * 64
    other_base = await service.api.post(
        "/labs/build", json=body(digest=shown["digest"], base=stale)
    )
    assert other_base.status_code == 409, other_base.text
    # Bound to a base that is not the lab's: the digest matches, the build refuses.
    stale_digest = service.builds.digest(parse_plan(shown["plan"]), stale)
    changed = await service.api.post("/labs/build", json=body(digest=stale_digest, base=stale))
    assert changed.status_code == 200, changed.text
    assert changed.json()["status"] == "not_run", changed.json()
    assert "not the one the plan was made against" in changed.json()["error"]
    assert await lab_of(gns3_client, admin_token, service.project_id) == BUILT

    built = await service.api.post(
        "/labs/build", json=body(digest=shown["digest"], base=change["base"])
    )
    assert built.status_code == 200, built.text
    result = built.json()["result"]
    assert [n["name"] for n in result["nodes"] if n["created"]] == ["PCC"], result
    assert [(k["link"], k["created"]) for k in result["links"]] == [
        ("PCA:Ethernet0-PCB:Ethernet0", False)  # the link the lab has, kept
    ], result
    assert "removed_links" not in result
    assert built.json()["rolled_back"] is True  # the PCs never start here
    assert await lab_of(gns3_client, admin_token, service.project_id) == BUILT
