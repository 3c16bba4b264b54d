"""A restore point's row as the stores kept it before its fields were typed: one flat
``state`` object the GNS3 tools wrote (as taken, its change recorded, rolled back by a
verified change, an id its rollback gave anew), and what reading it must give.

The stores' tests write it straight into a real database's row and read it back through
the store: rows stored before the typed fields keep working."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from copilot_core.ports import RestorePoint, RollbackStatus

__all__ = ["OLD_STATE", "assert_read_as_typed"]

#: What ``take_restore_point``, ``record_what_it_did``, the scoped rollback and the
#: verified change's rollback kept in the flat state (format 1).
OLD_STATE: dict[str, Any] = {
    "format": 1,
    "devices": {
        "PC1": {
            "node_id": "n1",
            "name": "PC1",
            "kind": "vpcs",
            "captured": True,
            "config": {"ip": "10.0.0.1/24"},
            "files": {"startup.vpc": "ip 10.0.0.1/24\n"},
        },
        "R9": {"name": "R9", "captured": False, "note": "no such node (nothing to keep)"},
    },
    "configured": {"n1": "PC1"},
    "topology": {"nodes": [{"node_id": "n1", "name": "PC1"}], "links": [], "drawings": []},
    "gns3_snapshot": {"name": "copilot-p-old", "created_at": "2026-03-01T00:00:00Z"},
    "change": {
        "format": 1,
        "nodes": {
            "created": {"n2": {"node_id": "n2", "name": "PC2"}},
            "deleted": {},
            "changed": {"n1": {"name": "PC1", "fields": {"x": [0, 10]}}},
        },
        "links": {"created": {}, "deleted": {}, "changed": {}},
        "drawings": {"created": {"d1": {"drawing_id": "d1"}}, "deleted": {}, "changed": {}},
        "configured": {"n1": "PC1"},
        "described": {
            "nodes_created": ["PC2"],
            "nodes_changed": {"PC1": ["x"]},
            "devices_configured": ["PC1"],
            "drawings": {"created": 1, "deleted": 0, "changed": 0},
        },
    },
    "rolled_back": {
        "at": "2026-03-01T00:05:00+00:00",
        "by": "verification",
        "status": "partial_success",
        "tool_call_id": "call-9",
        "restore_point_id": None,
    },
    "id_map": {"n2": "n2-again"},
}


def assert_read_as_typed(point: RestorePoint) -> None:
    """``point``, read from a row holding :data:`OLD_STATE`, has it in typed fields, and
    the rest in ``kept`` as it was."""
    assert point.devices == ("PC1",)  # R9 was not captured
    assert point.topology is True
    assert point.snapshot == "copilot-p-old"
    assert point.change is not None
    assert dict(point.change.nodes.created) == {"n2": {"node_id": "n2", "name": "PC2"}}
    assert dict(point.change.nodes.changed) == {"n1": {"name": "PC1", "fields": {"x": [0, 10]}}}
    assert not point.change.links
    assert list(point.change.drawings.created) == ["d1"]
    assert dict(point.change.configured) == {"n1": "PC1"}
    assert point.change.topology_kept is True
    assert point.change.described.to_json() == OLD_STATE["change"]["described"]
    assert point.rolled_back is not None
    assert point.rolled_back.at == datetime(2026, 3, 1, 0, 5, tzinfo=UTC)
    assert point.rolled_back.by == "verification"
    assert point.rolled_back.status is RollbackStatus.PARTIAL_SUCCESS
    assert point.rolled_back.tool_call_id == "call-9"
    assert point.rolled_back.restore_point_id is None
    assert dict(point.id_map) == {"n2": "n2-again"}
    assert dict(point.kept) == {
        key: OLD_STATE[key] for key in ("devices", "configured", "topology")
    }
