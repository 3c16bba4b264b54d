"""The fault values (copilot_core.faults, issue 38): a catalog file's data becomes faults,
and every way of getting one wrong is refused naming the file, the fault and the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from copilot_core.faults import (
    DeviceLines,
    Fault,
    FaultFile,
    FaultFileError,
    FaultType,
    LinkFilter,
    Platform,
    Topic,
    parse_fault_file,
)
from copilot_core.intent import InterfaceCheck, ReachabilityCheck

LAB: dict[str, Any] = {
    "summary": "two FRR routers running OSPF with a Linux host behind one",
    "nodes": [
        {"name": "R1", "role": "router", "platform": "frr",
         "interfaces": [{"name": "eth0", "address": "10.0.1.1/24"},
                        {"name": "eth1", "address": "10.0.12.1/30"}]},
        {"name": "R2", "role": "router", "platform": "frr",
         "interfaces": [{"name": "eth1", "address": "10.0.12.2/30"}]},
        {"name": "PC1", "role": "host", "platform": "linux",
         "interfaces": [{"name": "eth0", "address": "10.0.1.10/24"}], "gateway": "10.0.1.1"},
    ],
    "links": [["PC1:eth0", "R1:eth0"], ["R1:eth1", "R2:eth1"]],
    "protocols": [
        {"kind": "ospf", "node": "R1", "router_id": "1.1.1.1",
         "networks": [{"prefix": "10.0.12.0/30", "area": 0}], "point_to_point": ["eth1"]},
    ],
}  # fmt: skip
SHUT: dict[str, Any] = {
    "id": "core-shut",
    "title": "The core link is shut",
    "topic": "interfaces_and_links",
    "difficulty": 1,
    "inject": [{"kind": "lines", "node": "R2", "lines": ["interface eth1", "shutdown"]}],
    "symptoms": [{"kind": "interface", "node": "R2", "interface": "eth1"}],
    "ground_truth": {"node": "R2", "interface": "eth1", "fault_type": "interface_down"},
    "fixed_checks": [{"kind": "reachability", "from": "PC1", "to": "10.0.12.2"}],
    "constraints": [{"kind": "addresses_unchanged", "node": "R2"}, {"kind": "topology_unchanged"}],
    "fix": [{"kind": "lines", "node": "R2", "lines": ["interface eth1", "no shutdown"]}],
    "hints": ["Follow the path.", "R2's eth1 is down."],
}
HEALTHY: dict[str, Any] = {
    "id": "all-good",
    "title": "Nothing is broken",
    "topic": "healthy",
    "difficulty": 1,
    "ground_truth": {"fault_type": "none"},
    "fixed_checks": [{"kind": "ospf_neighbor", "node": "R1", "neighbor": "R2"}],
    "hints": ["Look.", "It is fine."],
}


def data(*faults: dict[str, Any], lab: dict[str, Any] | None = LAB) -> dict[str, Any]:
    out: dict[str, Any] = {"faults": [copy.deepcopy(f) for f in faults]}
    if lab is not None:
        out["lab"] = copy.deepcopy(lab)
    return out


def refused(raw: dict[str, Any]) -> FaultFileError:
    with pytest.raises(FaultFileError) as caught:
        parse_fault_file(raw, "lab.yaml")
    return caught.value


def test_a_file_becomes_typed_faults_sharing_the_files_lab_shape() -> None:
    shut, healthy = parse_fault_file(data(SHUT, HEALTHY), "lab.yaml")
    assert isinstance(shut, Fault)
    assert (shut.topic, shut.difficulty, shut.healthy) == (Topic.INTERFACES_AND_LINKS, 1, False)
    assert shut.inject == (
        DeviceLines(kind="lines", node="R2", lines=("interface eth1", "shutdown")),
    )
    assert shut.symptoms == (InterfaceCheck(kind="interface", node="R2", interface="eth1"),)
    assert isinstance(shut.fixed_checks[0], ReachabilityCheck)
    assert shut.ground_truth.fault_type is FaultType.INTERFACE_DOWN
    assert shut.lab is healthy.lab or shut.lab == healthy.lab
    assert shut.lab.counts() == {"router/frr": 2, "host/linux": 1}
    assert shut.lab.protocol_kinds() == {"ospf"}
    assert shut.platforms() == {Platform.FRR, Platform.LINUX}
    assert healthy.healthy and healthy.inject == () and healthy.symptoms == ()
    assert shut.settle_s == 10.0  # the default


def test_a_fault_may_bring_its_own_lab_shape_and_a_link_operation() -> None:
    own = {**SHUT, "lab": LAB, "inject": [
        {"kind": "link_filter", "link": ["R2:eth1", "R1:eth1"], "packet_loss": 90}]}  # fmt: skip
    (fault,) = parse_fault_file(data(own, lab=None), "own.yaml")
    assert fault.inject == (
        LinkFilter(kind="link_filter", link=("R2:eth1", "R1:eth1"), packet_loss=90),
    )


@pytest.mark.parametrize(
    ("change", "fault", "field", "says"),
    [
        # a field of the wrong shape, at any depth
        (lambda f: f.update(topic="routing"), "core-shut", "topic", "Input should be"),
        (lambda f: f.update(difficulty=4), "core-shut", "difficulty", "less than or equal to 3"),
        (lambda f: f.update(hints=["only one"]), "core-shut", "hints", "at least 2"),
        (lambda f: f.update(colour="red"), "core-shut", "colour", "Extra inputs"),
        (
            lambda f: f["inject"][0].update(lines=["shut\ndown"]),
            "core-shut",
            "inject[0].lines[0]",
            "should match pattern",
        ),
        (  # one control character, nothing else: it is not the line's printable part
            lambda f: f["inject"][0].update(lines=["\x07"]),
            "core-shut",
            "inject[0].lines[0]",
            "should match pattern",
        ),
        (
            lambda f: f["inject"][0].update(lines=["shut\x07down"]),
            "core-shut",
            "inject[0].lines[0]",
            "should match pattern",
        ),
        (
            lambda f: f["symptoms"][0].update(interface="eth1;reboot"),
            "core-shut",
            "symptoms[0].interface",
            "not an interface name",
        ),
        (
            lambda f: f["ground_truth"].update(fault_type="gremlins"),
            "core-shut",
            "ground_truth.fault_type",
            "Input should be",
        ),
        (
            lambda f: f["constraints"].append({"kind": "no_fun"}),
            "core-shut",
            "constraints[2]",
            "does not match any of the expected tags",
        ),
        (lambda f: f.pop("id"), "#1", "id", "Field required"),
        # names that are not in the lab shape
        (
            lambda f: f["inject"][0].update(node="R9"),
            "core-shut",
            "inject[0].node",
            "'R9' is not a node of the lab shape (R1, R2, PC1)",
        ),
        (
            lambda f: f["fix"].__setitem__(
                0, {"kind": "link_suspend", "link": ["R2:eth1", "PC1:eth0"]}
            ),
            "core-shut",
            "fix[0].link",
            "is not a link of the lab shape",
        ),
        (lambda f: f["symptoms"][0].update(node="R3"), "core-shut", "symptoms[0].node", "'R3'"),
        (
            lambda f: f["fixed_checks"][0].update(to="PC7"),
            "core-shut",
            "fixed_checks[0].to",
            "neither an address nor a node",
        ),
        (
            lambda f: f["ground_truth"].update(interface="eth7"),
            "core-shut",
            "ground_truth.interface",
            "R2 has no eth7",
        ),
        (
            lambda f: f["constraints"][0].update(node="SW1"),
            "core-shut",
            "constraints[0].node",
            "'SW1' is not a node",
        ),
        # what a fault (or a healthy case) must have
        (lambda f: f.update(symptoms=[]), "core-shut", "symptoms", "at least one"),
        (lambda f: f.update(topic="healthy"), "core-shut", "topic", "healthy"),
        (
            lambda f: f["ground_truth"].pop("node") and f["ground_truth"].pop("interface"),
            "core-shut",
            "ground_truth",
            "names its node or link",
        ),
    ],
)
def test_a_bad_fault_is_refused_naming_the_file_the_fault_and_the_field(
    change: Any, fault: str, field: str, says: str
) -> None:
    entry = copy.deepcopy(SHUT)
    change(entry)
    error = refused(data(entry, HEALTHY))
    assert (error.source, error.fault, error.field) == ("lab.yaml", fault, field), str(error)
    assert says in error.message, str(error)
    assert str(error).startswith(f"lab.yaml: fault {fault!r}: {field}: ")


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        (lambda lab: lab["nodes"][0].update(platform="vpcs"), "lab.nodes[0]", "routers are frr"),
        (
            lambda lab: lab["links"].append(["R2:eth1", "PC1:eth0"]),
            "lab",
            "R2:eth1 is the end of two links",
        ),
        (
            lambda lab: lab["links"].append(["R1:eth3", "R2:eth1"]),
            "lab",
            "R1 has no interface eth3",
        ),
        (lambda lab: lab["protocols"][0].update(node="PC1"), "lab", "not a router of the shape"),
        (
            lambda lab: lab["nodes"][2].update(gateway="10.0.1"),
            "lab.nodes[2].gateway",
            "not an IPv4 address",
        ),
        (
            lambda lab: lab["nodes"][1]["interfaces"][0].update(address="10.0.12.2"),
            "lab.nodes[1].interfaces[0].address",
            "no prefix length",
        ),
    ],
)
def test_a_bad_lab_shape_is_refused_naming_the_field(change: Any, field: str, says: str) -> None:
    lab = copy.deepcopy(LAB)
    change(lab)
    error = refused(data(SHUT, lab=lab))
    assert (error.fault, error.field) == (None, field), str(error)
    assert says in error.message, str(error)


def test_a_file_that_is_not_a_catalog_or_lacks_a_shape_is_refused() -> None:
    assert refused({"fault": []}).field == "faults"
    assert refused([SHUT]).field == "faults"  # type: ignore[arg-type]
    error = refused(data(SHUT, lab=None))
    assert (error.fault, error.field) == ("core-shut", "lab")


def test_the_json_schema_describes_the_file() -> None:
    schema = FaultFile.model_json_schema()
    assert schema["required"] == ["faults"]
    fault = schema["$defs"]["FaultEntry"]
    assert {"id", "title", "topic", "difficulty", "ground_truth", "fixed_checks", "hints"} <= set(
        fault["required"]
    )
    assert set(schema["$defs"]["FaultType"]["enum"]) == {t.value for t in FaultType}
