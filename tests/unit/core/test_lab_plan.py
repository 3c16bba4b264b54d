"""A lab plan as a value: its references checked, every problem named by its file's field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from copilot_core.labs import (
    DeviceConfig,
    LabPlan,
    LabPlanError,
    PlanProblem,
    link_text,
    parse_link,
    parse_plan,
    plan_data,
    plan_schema,
)

ROOT = Path(__file__).resolve().parents[3]


def _pair(**extra: Any) -> dict[str, Any]:
    """Two routers on one link, a host behind R1: the data of a plan's file."""
    data: dict[str, Any] = {
        "nodes": [
            {"name": "R1", "platform": "frr"},
            {"name": "R2", "platform": "frr"},
            {"name": "H1", "platform": "linux"},
        ],
        "links": ["R1:eth0-R2:eth0", "R1:eth1-H1:eth0"],
        "addressing": {
            "R1:eth0": "10.0.12.1/30",
            "R2:eth0": "10.0.12.2/30",
            "R1:eth1": "10.0.1.1/24",
            "H1:eth0": "10.0.1.10/24",
        },
        "config": {"H1": ["ip addr add 10.0.1.10/24 dev eth0"]},
        "checks": [{"kind": "reachability", "from": "H1", "to": "R2"}],
    }
    data.update(extra)
    return data


def _problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(LabPlanError) as caught:
        parse_plan(data, source="lab.yaml")
    assert str(caught.value).startswith("lab.yaml: ")
    return [str(p) for p in caught.value.problems]


def test_a_good_plan_reads_into_its_parts() -> None:
    plan = parse_plan(_pair())
    assert [n.role for n in plan.nodes] == ["router", "router", "host"]
    assert plan.links[0].ends == ("R1:eth0", "R2:eth0")
    assert plan.address_of("R2:eth0") == "10.0.12.2/30"
    assert plan.link_subnet(plan.links[1]) == "10.0.1.0/24"
    assert plan.lines_of("H1") == ("ip addr add 10.0.1.10/24 dev eth0",)
    assert plan.lines_of("R1") == ()


def test_a_duplicate_node_name_is_named_by_its_index() -> None:
    data = _pair()
    data["nodes"].append({"name": "R2", "platform": "linux"})
    assert _problems(data) == [
        "nodes[3].name: R2 is already the name of nodes[1]: a name is given once"
    ]


def test_a_port_used_twice_is_refused() -> None:
    data = _pair(links=["R1:eth0-R2:eth0", "R1:eth0-H1:eth0"])
    data["addressing"] = {}
    assert _problems(data) == [
        "links[1]: port R1:eth0 is already the end of links[0]: a port takes one link"
    ]


def test_a_link_to_a_node_not_in_the_plan_names_the_known_nodes() -> None:
    data = _pair(links=["R1:eth0-R9:eth0"], addressing={}, checks=[])
    assert _problems(data) == ["links[0]: R9 is not a node of the plan (R1, R2, H1)"]


def test_a_link_from_a_node_to_itself_is_refused() -> None:
    data = _pair(links=["R1:eth0-R1:eth1"], addressing={}, checks=[])
    assert _problems(data) == ["links[0]: the link joins R1 to itself"]


def test_two_links_whose_subnets_overlap_are_refused() -> None:
    data = _pair()
    data["addressing"].update({"R1:eth1": "10.0.12.5/29", "H1:eth0": "10.0.12.6/29"})
    assert _problems(data) == [
        "links[1]: its subnet 10.0.12.0/29 overlaps 10.0.12.0/30 of links[0]"
    ]


def test_an_address_outside_its_links_subnet_is_refused() -> None:
    data = _pair()
    data["addressing"]["R2:eth0"] = "10.0.13.2/30"
    assert _problems(data) == [
        "addressing.R2:eth0: 10.0.13.2/30 is outside the subnet 10.0.12.0/30 of links[0] "
        "(R1:eth0 - R2:eth0)"
    ]


def test_a_link_prefix_decides_the_subnet_its_ends_are_in() -> None:
    data = _pair()
    data["links"][0] = {"ends": ["R1:eth0", "R2:eth0"], "prefix": "10.0.12.4/30"}
    assert _problems(data) == [
        "addressing.R1:eth0: 10.0.12.1/30 is outside the subnet 10.0.12.4/30 of links[0] "
        "(R1:eth0 - R2:eth0)",
        "addressing.R2:eth0: 10.0.12.2/30 is outside the subnet 10.0.12.4/30 of links[0] "
        "(R1:eth0 - R2:eth0)",
    ]


def test_the_same_address_twice_is_refused() -> None:
    data = _pair()
    data["addressing"]["R2:lo"] = "10.0.1.10/32"
    problems = _problems(data)
    assert problems[0] == "addressing.R2:lo: 10.0.1.10 is already the address of H1:eth0"
    assert (
        problems[1] == "addressing.R2:lo: its subnet 10.0.1.10/32 overlaps 10.0.1.0/24 of links[1]"
    )


def test_a_network_or_broadcast_address_is_no_interface_address() -> None:
    data = _pair()
    data["addressing"]["H1:eth0"] = "10.0.1.255/24"
    assert _problems(data) == [
        "addressing.H1:eth0: 10.0.1.255 is the broadcast address of 10.0.1.0/24: an interface "
        "needs a host address"
    ]


def test_a_check_naming_an_unknown_node_is_refused() -> None:
    data = _pair(
        checks=[
            {"kind": "reachability", "from": "H9", "to": "10.0.12.2"},
            {"kind": "ospf_neighbor", "node": "R1", "neighbor": "R7"},
            {"kind": "route", "node": "R1", "prefix": "10.0.1.0/24", "via": "eth1"},
        ]
    )
    assert _problems(data) == [
        "checks[0].from: H9 is not a node of the plan (R1, R2, H1)",
        "checks[1].neighbor: 'R7' is neither an address nor a node of the plan (R1, R2, H1)",
    ]


def test_every_problem_is_reported_at_once() -> None:
    data = _pair(links=["R1:eth0-R2:eth0", "R1:eth0-R9:eth0"], config={"R8": ["x"]})
    del data["addressing"]["H1:eth0"]
    assert _problems(data) == [
        "links[1]: R9 is not a node of the plan (R1, R2, H1)",
        "links[1]: port R1:eth0 is already the end of links[0]: a port takes one link",
        "config.R8: R8 is not a node of the plan (R1, R2, H1)",
    ]


def test_a_plan_built_in_code_is_refused_alike() -> None:
    with pytest.raises(ValidationError) as caught:
        LabPlan.model_validate(_pair(config={"R8": ["x"]}))
    (error,) = caught.value.errors()
    assert error["ctx"]["problems"] == [
        PlanProblem("config.R8", "R8 is not a node of the plan (R1, R2, H1)")
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"nodes": [{"name": "R1", "platform": "ios"}]}, "nodes[0].platform: Input should be"),
        (
            {"addressing": {"R1:eth0": "10.0.12.1"}},
            "addressing.R1:eth0: Value error, '10.0.12.1' has no prefix length",
        ),
        (
            {"addressing": {"R1eth0": "10.0.12.1/30"}},
            "addressing.R1eth0: Value error, 'R1eth0' is not an endpoint",
        ),
        (
            {"config": {"R1": ["interface eth0", "bad\x07line"]}},
            "config.R1[1]: String should match pattern",
        ),
        ({"config": {"R1": []}}, "config.R1: Tuple should have at least 1 item"),
        ({"links": ["R1:eth0R2:eth0"]}, "links[0]: 'R1:eth0R2:eth0' is not a link such as"),
        (
            {"links": ["R1:eth-0-R2:eth0"]},
            "links[0]: 'R1:eth-0-R2:eth0' splits at '-' more than one way",
        ),
        (
            {"checks": [{"kind": "route", "node": "R1", "prefix": "10.0.1/24"}]},
            "checks[0].prefix: Value error, '10.0.1/24' is not a prefix",
        ),
        ({"routers": []}, "routers: Extra inputs are not permitted"),
    ],
)
def test_a_wrong_field_is_named_as_the_file_has_it(change: dict[str, Any], expected: str) -> None:
    assert _problems(_pair(**change))[0].startswith(expected)


def test_what_is_not_a_mapping_is_no_plan() -> None:
    assert _problems(["R1"]) == ["(plan): a plan is a mapping with nodes"]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("R1:eth0-R2:eth0", ("R1:eth0", "R2:eth0")),
        ("PC-1:eth0-R1:eth2", ("PC-1:eth0", "R1:eth2")),
        ("R1:ge-0/0/0-R2:ge-0/0/1", ("R1:ge-0/0/0", "R2:ge-0/0/1")),
    ],
)
def test_a_link_reads_from_its_one_split(text: str, ends: tuple[str, str]) -> None:
    assert parse_link(text) == ends


def test_a_link_is_written_as_a_string_only_when_it_reads_back_the_same() -> None:
    plan = parse_plan(
        _pair(
            links=[
                "R1:eth0-R2:eth0",
                {"ends": ["R1:eth-1", "H1:eth0"]},  # R1:eth-1-H1:eth0 splits two ways
            ],
            addressing={},
        )
    )
    assert link_text(plan.links[0]) == "R1:eth0-R2:eth0"
    assert link_text(plan.links[1]) == {"ends": ["R1:eth-1", "H1:eth0"]}
    with_prefix = parse_plan(
        _pair(
            links=[{"ends": ["R1:eth0", "R2:eth0"], "prefix": "10.0.12.3/30"}],
            addressing={"R1:eth0": "10.0.12.1/30"},
        )
    )
    assert with_prefix.links[0].prefix == "10.0.12.0/30"
    assert link_text(with_prefix.links[0]) == {
        "ends": ["R1:eth0", "R2:eth0"],
        "prefix": "10.0.12.0/30",
    }


def test_addresses_are_written_one_way() -> None:
    plan = parse_plan(_pair(addressing={"R1:eth0": "10.0.12.1/255.255.255.252"}))
    assert plan.address_of("R1:eth0") == "10.0.12.1/30"


def test_a_file_round_trips_through_yaml() -> None:
    plan = parse_plan(_pair(summary="two routers", config={"R1": ["interface eth0", "exit"]}))
    text = yaml.safe_dump(plan_data(plan), sort_keys=False)
    assert "- R1:eth0-R2:eth0" in text
    assert "R1:eth0: 10.0.12.1/30" in text
    assert parse_plan(yaml.safe_load(text)) == plan


def test_device_lines_are_the_fault_catalogs_steps_of_fifty() -> None:
    config = DeviceConfig(
        node="R1", lines=tuple(f"ip route 10.{i}.0.0/16 10.0.0.1" for i in range(120))
    )
    steps = config.as_steps()
    assert [len(s.lines) for s in steps] == [50, 50, 20]
    assert {s.node for s in steps} == {"R1"}
    assert sum((s.lines for s in steps), ()) == config.lines


def test_the_json_schema_in_docs_is_the_models_own() -> None:
    path = ROOT / "docs" / "lab-plan.schema.json"
    assert json.loads(path.read_text(encoding="utf-8")) == plan_schema(), (
        "regenerate docs/lab-plan.schema.json: python -c 'import json; from copilot_core.labs "
        "import plan_schema; print(json.dumps(plan_schema(), indent=2, sort_keys=True))' > "
        "docs/lab-plan.schema.json"
    )


def test_the_schema_accepts_the_files_short_forms() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(_pair(), plan_schema())
    bad = _pair(addressing=["R1:eth0"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, plan_schema())


def test_a_refused_item_is_one_problem_not_also_a_list_too_short() -> None:
    assert _problems({"nodes": [{"name": "R1", "platform": "ios"}]}) == [
        "nodes[0].platform: Input should be 'frr', 'linux' or 'vpcs'"
    ]
    assert _problems({"nodes": []}) == [
        "nodes: Tuple should have at least 1 item after validation, not 0"
    ]
