"""``RestorePoint``'s typed fields and its one JSON: what a store writes is read back
equal, and the flat rows stored before the fields were typed are read into them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from copilot_core.ports import (
    ChangeDescription,
    ChangeRecord,
    ItemChanges,
    RestorePoint,
    RollbackStatus,
    RolledBack,
)
from tests.fakes.old_restore_point import OLD_STATE, assert_read_as_typed

T0 = datetime(2026, 3, 1, tzinfo=UTC)
IDENTITY = {
    "id": "p-old",
    "project_id": "proj",
    "session_id": "s1",
    "created_at": T0.isoformat(),
    "tool_call_id": "call-1",
    "tool_name": "create_gns3_node",
    "summary": "before",
}


def _point(**fields: Any) -> RestorePoint:
    return RestorePoint("p1", "proj", "s1", T0, "call-1", "create_gns3_node", "PC2", **fields)


def _through_json(point: RestorePoint) -> RestorePoint:
    return RestorePoint.from_dict(json.loads(json.dumps(point.to_dict())))


def test_a_point_with_every_field_is_read_back_equal_from_its_json() -> None:
    point = _point(
        devices=("PC1", "R1"),
        topology=True,
        snapshot="copilot-p1",
        change=ChangeRecord(
            nodes=ItemChanges(created={"n2": {"node_id": "n2", "name": "PC2"}}),
            drawings=ItemChanges(changed={"d1": {"fields": {"x": [0, 5]}}}),
            configured={"n1": "PC1"},
            described=ChangeDescription(
                nodes_created=("PC2",),
                devices_configured=("PC1",),
                drawings={"created": 0, "deleted": 0, "changed": 1},
            ),
            topology_kept=False,
        ),
        rolled_back=RolledBack(T0 + timedelta(minutes=3), "u-alice", RollbackStatus.SUCCESS, "c"),
        id_map={"n2": "n2-again"},
        kept={"devices": {"PC1": {"captured": True, "config": {"ip": "10.0.0.1/24"}}}},
    )
    assert _through_json(point) == point
    assert point.to_dict()["format"] == 2


@given(
    id_map=st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4),
    devices=st.lists(st.text(min_size=1, max_size=8), max_size=4, unique=True),
    status=st.sampled_from(list(RollbackStatus)),
    by=st.text(max_size=8),
    previous=st.none() | st.text(max_size=8),
)
def test_any_id_map_devices_and_rollback_mark_survive_the_json(
    id_map: dict[str, str],
    devices: list[str],
    status: RollbackStatus,
    by: str,
    previous: str | None,
) -> None:
    mark = RolledBack(T0, by, status, "call-9", previous)
    point = _point(devices=tuple(devices), rolled_back=mark, id_map=id_map)
    assert _through_json(point) == point


def test_a_row_of_the_old_flat_shape_is_read_into_the_typed_fields() -> None:
    assert_read_as_typed(RestorePoint.from_dict({**OLD_STATE, **IDENTITY}))


def test_the_dict_of_the_old_to_dict_nests_the_state_and_is_read_alike() -> None:
    assert_read_as_typed(RestorePoint.from_dict({**IDENTITY, "state": OLD_STATE}))


def test_an_old_point_whose_change_never_ran_has_no_record_mark_nor_map() -> None:
    state = {"format": 1, "devices": {"PC1": {"captured": True}}, "configured": {}}
    point = RestorePoint.from_dict({**IDENTITY, **state})
    assert point.change is None and point.rolled_back is None and not point.id_map
    assert point.devices == ("PC1",) and not point.topology and point.snapshot is None
    assert dict(point.kept) == {"devices": {"PC1": {"captured": True}}, "configured": {}}


def test_a_rollback_mark_of_an_unknown_status_is_not_read_as_a_success() -> None:
    state = {"rolled_back": {"at": "yesterday", "by": "u", "status": "mostly", "tool_call_id": "c"}}
    point = RestorePoint.from_dict({**IDENTITY, **state})
    assert point.rolled_back == RolledBack(None, "u", RollbackStatus.ERROR, "c")
