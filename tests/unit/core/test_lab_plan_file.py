"""A plan's file round trip, by property: written as YAML and read back, it is the same plan."""

from __future__ import annotations

import ipaddress
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from copilot_core.labs import (
    HostIntent,
    LabIntent,
    LabPlan,
    LabPlanError,
    diff,
    parse_link,
    parse_plan,
    plan_data,
    plan_from_intent,
)

NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,7}", fullmatch=True)
PORTS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,7}", fullmatch=True)
TEXT = st.text(min_size=1, max_size=40).map(str.strip).filter(bool)
LINE = st.text(
    st.characters(exclude_categories=["Cc", "Cs", "Zl", "Zp"]), min_size=1, max_size=60
).filter(lambda line: line.strip() != "")


def _reads_back(text: str, ends: list[str]) -> bool:
    """Whether a link written ``text`` reads as ``ends`` (else the file writes a mapping)."""
    try:
        return parse_link(text) == tuple(ends)
    except ValueError:
        return False


def _round_trip(plan: LabPlan) -> LabPlan:
    return parse_plan(yaml.safe_load(yaml.safe_dump(plan_data(plan), sort_keys=False)))


@st.composite
def plans(draw: st.DrawFn) -> LabPlan:
    """Any valid plan: names, ports and lines from wide alphabets, links written either way,
    subnets given or derived, some ends unaddressed, checks of every target kind."""
    names = draw(st.lists(NAMES, min_size=2, max_size=6, unique=True))
    nodes = [
        {
            "name": name,
            "platform": draw(st.sampled_from(["frr", "linux", "vpcs"])),
            **({"template": draw(TEXT)} if draw(st.booleans()) else {}),
            "x": draw(st.integers(-2000, 2000)),
            "y": draw(st.integers(-2000, 2000)),
        }
        for name in names
    ]
    used: set[str] = set()
    links: list[Any] = []
    addressing: dict[str, str] = {}
    for index in range(draw(st.integers(0, 6))):
        a, b = draw(st.lists(st.sampled_from(names), min_size=2, max_size=2, unique=True))
        ends = [f"{a}:{draw(PORTS)}", f"{b}:{draw(PORTS)}"]
        if used.intersection(ends) or ends[0] == ends[1]:
            continue
        used.update(ends)
        subnet = f"10.{index}.0.0/24"
        for host, end in enumerate(ends, start=1):
            if draw(st.booleans()):
                addressing[end] = f"10.{index}.0.{host}/24"
        if draw(st.booleans()):
            links.append({"ends": ends, "prefix": subnet})
        else:
            text = f"{ends[0]}-{ends[1]}"
            readable = _reads_back(text, ends)
            links.append(text if readable and draw(st.booleans()) else {"ends": ends})
    if draw(st.booleans()):
        addressing[f"{names[0]}:lo"] = "192.168.255.1/32"
    chosen = draw(st.lists(st.sampled_from(names), unique=True))
    config = {name: draw(st.lists(LINE, min_size=1, max_size=5)) for name in chosen}
    targets = st.sampled_from(names) | st.just("10.0.0.1")
    checks = draw(
        st.lists(
            st.one_of(
                st.builds(
                    lambda s, t: {"kind": "reachability", "from": s, "to": t},
                    st.sampled_from(names),
                    targets,
                ),
                st.builds(
                    lambda n, t, name: {
                        "kind": "ospf_neighbor",
                        "node": n,
                        "neighbor": t,
                        **({"name": name} if name else {}),
                    },
                    st.sampled_from(names),
                    targets,
                    st.none() | TEXT,
                ),
                st.builds(
                    lambda n: {
                        "kind": "route",
                        "node": n,
                        "prefix": "10.0.0.0/8",
                        "present": False,
                    },
                    st.sampled_from(names),
                ),
            ),
            max_size=4,
        )
    )
    data: dict[str, Any] = {
        "nodes": nodes,
        "links": links,
        "addressing": addressing,
        "config": config,
        "checks": checks,
    }
    if draw(st.booleans()):
        data["summary"] = draw(TEXT)
    return LabPlan.model_validate(data)


@given(plans())
def test_a_plan_written_then_read_is_the_same_plan(plan: LabPlan) -> None:
    assert _round_trip(plan) == plan
    assert diff(plan, _round_trip(plan)).empty


@st.composite
def intents(draw: st.DrawFn) -> LabIntent:
    """A connected set of routers (a random tree plus extra links), hosts behind some."""
    count = draw(st.integers(1, 7))
    routers = [f"R{n}" for n in range(1, count + 1)]
    links = [(routers[draw(st.integers(0, n - 1))], routers[n]) for n in range(1, count)]
    if count > 1:
        extra = st.lists(st.sampled_from(routers), min_size=2, max_size=2, unique=True)
        links += [(a, b) for a, b in draw(st.lists(extra, max_size=3))]
    hosts = [
        HostIntent(name=f"H{n}", behind=draw(st.sampled_from(routers)))
        for n in range(draw(st.integers(0, 5)))
    ]
    return LabIntent(
        routers=tuple(routers),
        links=tuple(links),
        hosts=tuple(hosts),
        protocol=draw(st.sampled_from(["ospf", "static"])),
        p2p_length=draw(st.sampled_from([30, 31])),
        host_platform=draw(st.sampled_from(["linux", "vpcs"])),
    )


@given(intents())
def test_a_laid_out_plan_round_trips_and_laying_it_out_again_changes_nothing(
    intent: LabIntent,
) -> None:
    plan = plan_from_intent(intent)
    assert _round_trip(plan) == plan
    assert plan_from_intent(intent, keep=plan) == plan
    hosts = [h.name for h in intent.hosts]
    reach = {(c.source, c.to) for c in plan.checks if c.kind == "reachability"}
    assert len(reach) == len(hosts) * (len(hosts) - 1)


@given(st.lists(st.tuples(st.integers(0, 2**16 - 1), st.integers(16, 32)), min_size=1, max_size=12))
def test_overlapping_subnets_are_found_whatever_their_order(blocks: list[tuple[int, int]]) -> None:
    """Each address on a port of no link: a plan is refused for an overlap exactly when two
    of their subnets overlap (checked pairwise here, in one sweep by the core)."""
    networks = [
        ipaddress.IPv4Network(((10 << 24) | (n << 8), 32)).supernet(new_prefix=length)
        for n, length in blocks
    ]
    addressing = {
        f"R1:lo{i}": f"{net[0] + (1 if net.prefixlen < 31 else 0)}/{net.prefixlen}"
        for i, net in enumerate(networks)
    }
    data = {"nodes": [{"name": "R1", "platform": "frr"}], "addressing": addressing}
    overlapping = any(a.overlaps(b) for i, a in enumerate(networks) for b in networks[:i])
    try:
        parse_plan(data)
        problems: list[str] = []
    except LabPlanError as refused:
        problems = [p.message for p in refused.problems]
    assert any("overlaps" in m for m in problems) == overlapping
