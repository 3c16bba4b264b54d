"""The restore-point model under random histories: the copilot's changes and someone
else's (creates, deletes, links, unlinks, renames, moves, property changes) interleaved.

For any change of the copilot's, rolling it back (its record planned against the
topology as it is now, carried out on the in-memory topology) must leave exactly what the
history would have made without that change: everyone else's changes and the copilot's
other ones stay, and the state before that change comes back for what it touched. When
something done since is in the way, the plan says so (a conflict) and is not carried out;
confirmed (force), what the change made is gone and what it deleted is back.

Not decidable from GNS3's state, so not asked: a field someone set again since to the very
value the change gave it (GNS3 keeps no history of a node's fields).
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.gns3.restore._undo import carry_out, plan_undo, record_change
from adapters.gns3.restore._undo.plan import without_extras
from copilot_core.errors import Gns3Error
from tests.property.undo_world import PORTS, MemoryPort, Op, Topology

NAMES = 5
# (by the copilot?, operation kind, and choices interpreted against the topology)
raw_ops = st.lists(
    st.tuples(
        st.booleans(),
        st.sampled_from(["create", "delete", "link", "unlink", "set"]),
        st.integers(0, 50),
        st.integers(0, 50),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=14,
)


def concrete(topo: Topology, raw: tuple[Any, ...], serial: int) -> Op | None:
    _, kind, a, b, c, d = raw
    nodes = sorted(topo.nodes)
    links = sorted(topo.links)
    if kind == "create":
        return Op("create", f"n{serial}", f"N{a % NAMES}")
    if kind == "delete" and nodes:
        return Op("delete", nodes[a % len(nodes)])
    if kind == "link" and len(nodes) >= 2:
        one = nodes[a % len(nodes)]
        rest = [n for n in nodes if n != one]
        other = rest[b % len(rest)]
        return Op("link", f"l{serial}", ((one, c % PORTS), (other, d % PORTS)))
    if kind == "unlink" and links:
        return Op("unlink", links[a % len(links)])
    if kind == "set" and nodes:
        node = nodes[a % len(nodes)]
        field = ("name", "x", "properties")[b % 3]
        value: Any = {
            "name": f"N{c % NAMES}",
            "x": c * 10,
            "properties": {
                "ports_mapping": [{"port_number": p, "vlan": (c + p) % 4 + 1} for p in range(PORTS)]
            },
        }[field]
        return Op("set", node, (field, value))
    return None


def history(raws: list[tuple[Any, ...]]) -> tuple[Topology, list[tuple[bool, Op, Any]]]:
    """The topology after ``raws`` and each operation done: (by the copilot, op, its record
    when it is the copilot's)."""
    topo = Topology()
    done: list[tuple[bool, Op, Any]] = []
    for serial, raw in enumerate(raws):
        op = concrete(topo, raw, serial)
        if op is None:
            continue
        before = topo.as_lists()
        if not op.apply(topo) or topo.as_lists() == before:
            continue  # what changes nothing is no change (GNS3 could not tell either)
        record = record_change(before, topo.as_lists(), {}) if raw[0] else None
        done.append((raw[0], op, record))
    return topo, done


def without(done: list[tuple[bool, Op, Any]], skipped: int) -> Topology:
    topo = Topology()
    for index, (_, op, _) in enumerate(done):
        if index != skipped:
            op.apply(topo)
    return topo


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_ops, st.integers(0, 50))
def test_undoing_one_change_leaves_exactly_everything_else(
    raws: list[tuple[Any, ...]], pick: int
) -> None:
    topo, done = history(raws)
    mine = [i for i, (copilot, _, _) in enumerate(done) if copilot]
    if not mine:
        return
    index = mine[pick % len(mine)]
    changed = done[index][1]
    if changed.kind == "set" and any(
        op.kind == "set" and op.target == changed.target and op.value[0] == changed.value[0]
        for _, op, _ in done[index + 1 :]
    ):
        # The field was set again since: to another value, a conflict; back to the value
        # the change gave it (A-B-A), GNS3 shows nothing to tell it from no change at all.
        return
    record = done[index][2]
    plan = plan_undo(record, topo.kept())
    if plan.conflicts:
        return  # what is in the way is the next test's
    outcome = asyncio.run(carry_out(plan, MemoryPort(topo)))
    assert outcome.problems == [], (outcome.problems, plan.lines())
    assert outcome.differences == [], outcome.differences
    expected = without(done, index)
    assert topo.kept() == expected.kept(), (done[index][1], plan.lines())


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_ops, st.integers(0, 50))
def test_a_conflict_changes_nothing_and_a_confirmed_undo_still_undoes_the_change(
    raws: list[tuple[Any, ...]], pick: int
) -> None:
    topo, done = history(raws)
    mine = [i for i, (copilot, _, _) in enumerate(done) if copilot]
    if not mine:
        return
    record = done[mine[pick % len(mine)]][2]
    plan = plan_undo(record, topo.kept())
    if not plan.conflicts:
        return
    # Each conflict is said in words, and the extra steps say what they touch.
    assert all(isinstance(line, str) and line for line in plan.conflicts)
    assert all("since by someone else" in s.line for s in plan.steps if s.extra)
    asyncio.run(carry_out(plan, MemoryPort(topo)))
    for node_id in record.nodes.created:
        assert node_id not in topo.nodes
    for link_id in record.links.created:
        assert link_id not in topo.links
    for node_id, saved in record.nodes.deleted.items():
        assert topo.nodes[node_id]["properties"] == saved["properties"]


def test_the_record_of_a_change_names_what_it_did() -> None:
    topo = Topology()
    Op("create", "sw", "SW1").apply(topo)
    Op("create", "pc1", "PC1").apply(topo)
    Op("create", "pc2", "PC2").apply(topo)
    Op("link", "l1", (("sw", 0), ("pc1", 0))).apply(topo)
    Op("link", "l2", (("sw", 1), ("pc2", 0))).apply(topo)
    before = topo.as_lists()
    Op("delete", "sw").apply(topo)
    record = record_change(before, topo.as_lists(), {})
    assert set(record.nodes.deleted) == {"sw"}
    assert set(record.links.deleted) == {"l1", "l2"}
    assert record.described.to_json() == {
        "nodes_deleted": ["SW1"],
        "links_deleted": ["PC1 0/0 <-> SW1 0/0", "PC2 0/0 <-> SW1 0/1"],
    }
    # Someone else then takes SW1's port on PC1: undoing the deletion conflicts.
    Op("create", "x", "OTHERS1").apply(topo)
    Op("link", "l3", (("x", 0), ("pc1", 0))).apply(topo)
    plan = plan_undo(record, topo.kept())
    assert plan.conflicts == ["PC1 port 0/0 was linked since: OTHERS1 0/0 <-> PC1 0/0"]
    assert [s.line for s in plan.steps if s.extra] == [
        "delete link OTHERS1 0/0 <-> PC1 0/0 (made since by someone else)",
        "link PC1 0/0 <-> SW1 0/0 again (its ports used since by someone else)",
    ]
    # Left out of an undo that goes past its conflicts without touching them.
    kept = [s.line for s in without_extras(plan).steps]
    assert kept and not any("PC1 0/0 <-> SW1 0/0" in line for line in kept), kept


class ForgetfulPort(MemoryPort):
    """GNS3 as it would be if it made nodes without some of their saved JSON, and refused
    a node's own id: a node made again differs, and gets a new id."""

    async def create_node(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("node_id"):
            raise Gns3Error("node id refused", 409)
        made = await super().create_node({k: v for k, v in body.items() if k != "properties"})
        self.topo.nodes[made["node_id"]]["properties"] = {"ports_mapping": []}
        return {**made, "properties": {"ports_mapping": []}}


def test_a_node_made_again_that_differs_is_partial_and_its_new_id_is_followed() -> None:
    topo = Topology()
    before = topo.as_lists()
    Op("create", "sw", "SW1").apply(topo)
    created = record_change(before, topo.as_lists(), {})  # the copilot made SW1
    before = topo.as_lists()
    Op("delete", "sw").apply(topo)
    deleted = record_change(before, topo.as_lists(), {})  # then deleted it

    outcome = asyncio.run(carry_out(plan_undo(deleted, topo.kept()), ForgetfulPort(topo)))
    assert outcome.problems == []
    (new_id,) = topo.nodes
    assert outcome.id_map == {"sw": new_id} and new_id != "sw"
    # Compared field by field with what was saved: the ports mapping did not come back.
    assert outcome.differences == [
        "SW1 ports_mapping: [], was [{'port_number': 0, 'vlan': 1}, "
        "{'port_number': 1, 'vlan': 1}, {'port_number': 2, 'vlan': 1}]"
    ]
    # The earlier change's undo follows the new id: SW1 (made again) is deleted.
    plan = plan_undo(created, topo.kept(), outcome.id_map)
    assert plan.lines() == ["delete node SW1 (made by the change)"]
    asyncio.run(carry_out(plan, MemoryPort(topo), outcome.id_map))
    assert topo.nodes == {}
