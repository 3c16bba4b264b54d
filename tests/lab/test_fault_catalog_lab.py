"""Three faults of the shipped catalog (issue 38) on the real router lab: the lab is built
from the faults' own lab shape (nodes by platform, links by interface), configured from the
shape's healthy lines (:func:`adapters.gns3.baseline_lines`), and for each fault: its
symptoms and fixed-checks pass on the healthy lab, its inject lines are applied, every
symptom is seen to *fail* (``verify_intent``, the product's intent checks) within the
fault's ``settle_s``, its reference fix is applied and its fixed-checks pass again.

First step of the issue: setup, injection and fix go through ``docker exec`` (``vtysh -c``
on the routers, ``sh -c`` on the hosts), not yet through the drill's own use case. Figures
are printed (``-s``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from adapters.gns3 import FaultCatalog, baseline_lines, load_fault_catalog
from copilot_core.faults import DeviceLines, Fault, LabShape, Platform, Step
from copilot_core.intent import dump_check
from tests.lab.lab_project import LabProject
from tests.lab.router_lab import HOST_TEMPLATE, ROUTER_TEMPLATE, RouterLab
from tests.lab.test_intent_lab import verify

pytestmark = [pytest.mark.timeout(1500), pytest.mark.gns3, pytest.mark.slow]

FAULTS = ("frr-core-interface-shut", "host-missing-gateway", "ospf-hello-mismatch")
TEMPLATES = {Platform.FRR: ROUTER_TEMPLATE, Platform.LINUX: HOST_TEMPLATE}
FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def catalog() -> FaultCatalog:
    return load_fault_catalog()


@pytest.fixture(scope="module")
def shape(catalog: FaultCatalog) -> LabShape:
    faults = [catalog.get(fault_id) for fault_id in FAULTS]
    assert all(f is not None for f in faults), FAULTS
    (lab,) = {f.lab for f in faults if f is not None}  # the three share one lab shape
    return lab


class Lab:
    """A project built from a lab shape; its nodes read and changed with ``docker exec``."""

    def __init__(self, project: LabProject, containers: dict[str, str], shape: LabShape) -> None:
        self.project, self.containers, self.shape = project, containers, shape

    def run(
        self, node: str, argv: list[str], timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "exec", "-i", self.containers[node], *argv],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def send(self, node: str, lines: list[str] | tuple[str, ...]) -> None:
        """``lines`` on ``node``: FRR configuration lines in one vtysh, shell lines one by one."""
        shaped = self.shape.node(node)
        assert shaped is not None
        if shaped.platform is Platform.FRR:
            argv = ["vtysh", "-c", "configure terminal"]
            for line in lines:
                argv += ["-c", line]
            done = self.run(node, argv)
            problem = done.returncode != 0 or "% " in done.stdout
            assert not problem, f"{node}: {lines}\n{done.stdout}\n{done.stderr}"
            return
        for line in lines:
            done = self.run(node, ["sh", "-c", line])
            assert done.returncode == 0, f"{node}: {line!r}\n{done.stdout}\n{done.stderr}"

    def apply(self, steps: tuple[Step, ...]) -> None:
        for step in steps:
            assert isinstance(step, DeviceLines), f"{step.kind}: GNS3 operations come later"
            self.send(step.node, step.lines)

    def wait_for_frr(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        for node in self.shape.nodes:
            if node.platform is not Platform.FRR:
                continue
            while True:
                # zebra, ospfd and bgpd all answer vtysh (the lab's daemons)
                done = self.run(node.name, ["vtysh", "-c", "show daemons"], timeout=15)
                if done.returncode == 0 and {"zebra", "ospfd", "bgpd"} <= set(done.stdout.split()):
                    break
                why = f"{node.name}: FRR not ready\n{done.stdout}\n{done.stderr}"
                assert time.monotonic() < deadline, why
                time.sleep(1)


@pytest.fixture(scope="module")
def lab(router_lab: RouterLab, shape: LabShape) -> Iterator[Lab]:
    started = time.monotonic()
    token = router_lab.server.token()
    project = LabProject(router_lab, token, router_lab.server.new_project("fault-catalog", token))
    ids: dict[str, str] = {}
    try:
        for node in shape.nodes:
            template = router_lab.templates[TEMPLATES[node.platform]]
            made = project.api("POST", f"/templates/{template}", json={"x": 0, "y": 0})
            assert made.status_code == 201, made.text
            ids[node.name] = made.json()["node_id"]
            if made.json()["name"] != node.name:
                renamed = project.api("PUT", f"/nodes/{ids[node.name]}", json={"name": node.name})
                assert renamed.status_code == 200, renamed.text
        for a, b in shape.links:
            ends = []
            for end in (a, b):
                name, _, interface = end.partition(":")
                adapter = int(interface.removeprefix("eth"))
                ends.append({"node_id": ids[name], "adapter_number": adapter, "port_number": 0})
            linked = project.api("POST", "/links", json={"nodes": ends})
            assert linked.status_code == 201, linked.text
        assert project.api("POST", "/nodes/start").status_code in (200, 204)
        nodes = project.api("GET", "/nodes").json()
        containers = {n["name"]: n["properties"]["container_id"] for n in nodes}
        assert sorted(containers) == sorted(n.name for n in shape.nodes)
        built = Lab(project, containers, shape)
        built.wait_for_frr()
        FIGURES["lab_built_s"] = time.monotonic() - started
        begun = time.monotonic()
        for name, lines in baseline_lines(shape).items():
            built.send(name, lines)
        FIGURES["healthy_lab_configured_s"] = time.monotonic() - begun
        yield built
    finally:
        project.delete()
        print("\nfault catalog figures:", {k: round(v, 2) for k, v in FIGURES.items()}, flush=True)


def checks(values: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [dump_check(check) for check in values]


def summary(result: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [
        (c["name"], c["status"], c.get("reason") or c.get("observed")) for c in result["checks"]
    ]


def symptoms_fail(lab: Lab, fault: Fault) -> dict[str, Any]:
    """Ask the symptoms (one round each time) until every one fails, within ``settle_s``
    and a margin; the last answer."""
    deadline = time.monotonic() + fault.settle_s + 30
    while True:
        result = verify(lab.project, checks(fault.symptoms), 0)
        if all(c["status"] == "fail" for c in result["checks"]):
            return result
        assert time.monotonic() < deadline, f"{fault.id}: symptoms still hold {summary(result)}"
        time.sleep(2)


@pytest.mark.parametrize("fault_id", FAULTS)
def test_a_fault_injected_shows_its_symptoms_and_its_fix_passes_its_checks(
    lab: Lab, catalog: FaultCatalog, fault_id: str
) -> None:
    fault = catalog.get(fault_id)
    assert fault is not None
    began = time.monotonic()
    healthy = verify(lab.project, checks(fault.fixed_checks + fault.symptoms), 150)
    FIGURES[f"{fault_id}.healthy_s"] = time.monotonic() - began
    assert healthy["status"] == "pass", summary(healthy)

    began = time.monotonic()
    lab.apply(fault.inject)
    broken = symptoms_fail(lab, fault)
    FIGURES[f"{fault_id}.inject_to_symptoms_s"] = time.monotonic() - began
    assert [c["status"] for c in broken["checks"]] == ["fail"] * len(fault.symptoms)
    assert all(c["evidence"] for c in broken["checks"]), broken  # what the devices said

    began = time.monotonic()
    lab.apply(fault.fix)
    fixed = verify(lab.project, checks(fault.fixed_checks), fault.settle_s + 60)
    FIGURES[f"{fault_id}.fix_to_checks_pass_s"] = time.monotonic() - began
    assert fixed["status"] == "pass", summary(fixed)
