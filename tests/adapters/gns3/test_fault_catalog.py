"""The shipped fault catalog (issue 38) and its loader: every file validated against the core's
models and judged by the platforms' grammars at start-up; a bad file stops the service with a
message naming the file, the fault and the field."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from adapters.gns3 import (
    FAULTS_DIR,
    FaultCatalog,
    FaultCatalogError,
    baseline_lines,
    load_fault_catalog,
)
from copilot_core.faults import DeviceLines, FaultFile, FaultType, LinkFilter, LinkSuspend, Topic

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "docs" / "fault-file.schema.json"

GOOD = """\
lab:
  summary: one FRR router with a Linux host and a VPCS
  nodes:
    - {name: R1, role: router, platform: frr,
       interfaces: [{name: eth0, address: 10.0.1.1/24}, {name: eth1, address: 10.0.2.1/24}]}
    - {name: PC1, role: host, platform: linux, interfaces: [{name: eth0, address: 10.0.1.10/24}],
       gateway: 10.0.1.1}
    - {name: PC2, role: host, platform: vpcs, interfaces: [{name: eth0, address: 10.0.2.10/24}],
       gateway: 10.0.2.1}
  links: [[PC1:eth0, R1:eth0], [PC2:eth0, R1:eth1]]
faults:
  - id: lan-shut
    title: A LAN interface is shut
    topic: interfaces_and_links
    difficulty: 1
    inject: [{kind: lines, node: R1, lines: [interface eth0, shutdown]}]
    symptoms: [{kind: reachability, from: PC1, to: 10.0.2.10}]
    ground_truth: {node: R1, interface: eth0, fault_type: interface_down}
    fixed_checks: [{kind: reachability, from: PC1, to: 10.0.2.10}]
    fix: [{kind: lines, node: R1, lines: [interface eth0, no shutdown]}]
    hints: [Look at R1., R1 eth0 is shut.]
"""


@pytest.fixture(scope="module")
def catalog() -> FaultCatalog:
    return load_fault_catalog()


def write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    folder = tmp_path / "faults"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


def refused(folder: Path) -> FaultCatalogError:
    with pytest.raises(FaultCatalogError) as caught:
        load_fault_catalog([folder])
    return caught.value


# ------------------------------------------------------------------ the shipped catalog
def test_the_shipped_catalog_loads_with_at_least_20_faults_and_unique_ids(
    catalog: FaultCatalog,
) -> None:
    assert len(catalog) >= 20
    ids = [fault.id for fault in catalog]
    assert len(set(ids)) == len(ids)
    assert set(catalog.sources) == set(ids)
    assert all(source.startswith("faults/") for source in catalog.sources.values())
    assert all(len(fault.hints) >= 2 for fault in catalog)
    assert catalog.get("ospf-hello-mismatch") is not None
    assert catalog.get("no-such-fault") is None


def test_it_covers_every_topic_and_every_fault_type_of_the_issue(catalog: FaultCatalog) -> None:
    assert {fault.topic for fault in catalog} == set(Topic)
    wanted = set(FaultType) - {FaultType.WRONG_DEFAULT_GATEWAY, FaultType.LINK_DOWN}
    assert wanted <= {fault.ground_truth.fault_type for fault in catalog}
    assert len(catalog.select(topic=Topic.HEALTHY)) >= 2
    assert {fault.difficulty for fault in catalog} == {1, 2, 3}
    assert catalog.select(topic=Topic.OSPF, difficulty=3)


def test_it_has_faults_on_frr_linux_hosts_and_vpcs_and_gns3_link_operations(
    catalog: FaultCatalog,
) -> None:
    on: Counter[str] = Counter()
    for fault in catalog:
        for step in fault.inject:
            if isinstance(step, DeviceLines):
                node = fault.lab.node(step.node)
                assert node is not None
                on[node.platform.value] += 1
            else:
                on[step.kind] += 1
    assert {"frr", "linux", "vpcs", "link_filter", "link_suspend"} <= set(on)
    # a GNS3 operation's fix undoes it with the same operation
    for fault in catalog:
        for step in fault.inject:
            if isinstance(step, LinkFilter | LinkSuspend):
                assert any(type(fix) is type(step) for fix in fault.fix), fault.id


def test_every_fault_names_its_symptoms_fix_and_truth_and_healthy_cases_none(
    catalog: FaultCatalog,
) -> None:
    for fault in catalog:
        if fault.healthy:
            assert (fault.inject, fault.symptoms, fault.fix) == ((), (), ()), fault.id
        else:
            assert fault.inject and fault.symptoms and fault.fix, fault.id
            truth = fault.ground_truth
            assert truth.node or truth.link, fault.id


def test_the_healthy_lab_of_a_shape_is_lines_per_node(catalog: FaultCatalog) -> None:
    ospf = catalog.get("ospf-hello-mismatch")
    bgp = catalog.get("bgp-wrong-remote-as")
    vpcs = catalog.get("vpcs-missing-gateway")
    assert ospf is not None and bgp is not None and vpcs is not None
    lines = baseline_lines(ospf.lab)
    assert lines["PC1"] == [
        "ip addr add 10.0.1.10/24 dev eth0",
        "ip route add default via 10.0.1.1",
    ]
    assert lines["R1"][:3] == ["interface eth0", "ip address 10.0.1.1/24", "exit"]
    assert "ip ospf network point-to-point" in lines["R2"]
    assert "network 10.0.12.0/30 area 0" in lines["R2"]
    assert "no bgp ebgp-requires-policy" in baseline_lines(bgp.lab)["R1"]
    assert baseline_lines(vpcs.lab)["PC2"] == ["ip 10.0.2.10/24 10.0.2.1"]


def test_the_json_schema_in_docs_is_the_models_own() -> None:
    current = FaultFile.model_json_schema()
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == current, (
        "regenerate docs/fault-file.schema.json: python -c 'import json; from copilot_core."
        "faults import FaultFile; print(json.dumps(FaultFile.model_json_schema(), indent=2, "
        "sort_keys=True))' > docs/fault-file.schema.json"
    )


# ------------------------------------------------------------------ bad files
def test_a_good_file_of_ones_own_loads(tmp_path: Path) -> None:
    loaded = load_fault_catalog([write(tmp_path, GOOD, "mine.yaml")])
    assert [fault.id for fault in loaded] == ["lan-shut"]
    assert loaded.sources == {"lan-shut": "faults/mine.yaml"}


@pytest.mark.parametrize(
    ("old", "new", "field", "says"),
    [
        # the platform's grammar: a line its CLI does not know, a read-only line, a
        # forbidden command, a show command given as configuration
        ("lines: [interface eth0, shutdown]}]\n    symptoms",
         "lines: [interface eth0, shutdown]}, {kind: lines, node: PC1, "
         "lines: [ipp link set eth0 down]}]\n    symptoms",
         "inject[1].lines[0]", "not a command the Linux shell knows"),
        ("lines: [interface eth0, shutdown]", "lines: [interface eth0, shutdown, write erase]",
         "inject[0].lines[2]", "forbidden command 'write erase'"),
        ("lines: [interface eth0, shutdown]", "lines: [show ip route]",
         "inject[0].lines[0]", "not a configuration line"),
        ("lines: [interface eth0, no shutdown]",
         "lines: [interface eth0, no shutdown]}, {kind: lines, node: PC2, lines: [show ip]",
         "fix[1].lines[0]", "only reads VPCS"),
        # a check the node's platform cannot answer
        ("symptoms: [{kind: reachability, from: PC1, to: 10.0.2.10}]",
         "symptoms: [{kind: interface, node: PC1, interface: eth0}]",
         "symptoms[0]", "PC1 (linux) cannot answer it"),
        ("fixed_checks: [{kind: reachability, from: PC1, to: 10.0.2.10}]",
         "fixed_checks: [{kind: reachability, from: R1, to: 10.0.2.10}]",
         "fixed_checks[0]", "R1 (frr) cannot answer it"),
        # the core's models: a node not in the shape, a field of the wrong type
        ("node: R1, lines: [interface eth0, shutdown]",
         "node: R7, lines: [interface eth0, shutdown]",
         "inject[0].node", "'R7' is not a node of the lab shape"),
        ("difficulty: 1", "difficulty: hard", "difficulty", "valid integer"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_naming_the_file_the_fault_and_the_field(
    tmp_path: Path, old: str, new: str, field: str, says: str
) -> None:
    assert old in GOOD
    error = refused(write(tmp_path, GOOD.replace(old, new, 1)))
    assert (error.source, error.fault, error.field) == ("faults/bad.yaml", "lan-shut", field), (
        error.message
    )
    assert says in error.reason, error.message
    assert error.message.startswith(f"fault catalog faults/bad.yaml: fault 'lan-shut': {field}: ")


def test_broken_yaml_a_duplicate_id_and_a_missing_directory_are_refused(tmp_path: Path) -> None:
    error = refused(write(tmp_path, GOOD.replace("faults:", "faults: [", 1)))
    assert (error.source, error.fault, error.field) == ("faults/bad.yaml", None, "(yaml)")
    assert "line" in error.reason  # where the parser stopped

    folder = tmp_path / "twice"
    folder.mkdir()
    (folder / "a.yaml").write_text(GOOD, encoding="utf-8")
    (folder / "b.yaml").write_text(GOOD, encoding="utf-8")
    error = refused(folder)
    assert (error.source, error.fault, error.field) == ("twice/b.yaml", "lan-shut", "id")
    assert "twice/a.yaml" in error.reason

    assert refused(tmp_path / "nowhere").field == "(directory)"


def test_a_copy_of_the_shipped_catalog_with_one_bad_line_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "faults"
    shutil.copytree(FAULTS_DIR, folder)
    path = folder / "ospf-pair.yaml"
    text = path.read_text(encoding="utf-8")
    bad = text.replace("lines: [interface eth1, ip ospf hello-interval 5]",
                       "lines: [interface eth1, ip ospf hello-interval 5, reload]")  # fmt: skip
    assert bad != text
    path.write_text(bad, encoding="utf-8")
    error = refused(folder)
    assert (error.source, error.fault, error.field) == (
        "faults/ospf-pair.yaml", "ospf-hello-mismatch", "inject[0].lines[2]",
    )  # fmt: skip


# ------------------------------------------------------------------ start-up
async def test_the_service_loads_the_catalog_at_start_up_and_a_bad_one_stops_it(
    tmp_path: Path,
) -> None:
    from dependency_injector import providers

    from entrypoints.container import build_container
    from entrypoints.settings import Settings

    container = build_container(Settings(data_dir=tmp_path))
    await container.init_resources()  # type: ignore[misc]
    try:
        loaded = container.gateways.faults()
        assert isinstance(loaded, FaultCatalog) and len(loaded) >= 20
    finally:
        await container.shutdown_resources()  # type: ignore[misc]

    bad = write(tmp_path, GOOD.replace("node: R1, lines", "node: R9, lines", 1))
    container = build_container(Settings(data_dir=tmp_path))
    container.gateways.faults.override(providers.Resource(load_fault_catalog, [bad]))
    with pytest.raises(FaultCatalogError, match=r"faults/bad\.yaml: fault 'lan-shut': inject"):
        await container.init_resources()  # type: ignore[misc]
    await container.shutdown_resources()  # type: ignore[misc]
