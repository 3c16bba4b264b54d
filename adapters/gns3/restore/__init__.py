"""Restore points and rollbacks: :class:`Gns3RestorePoints`, the core's
``RestorePoints`` port over GNS3; taking a point and recording what its change did,
the rollback's preview, one change undone, device configuration put back.
"""

from adapters.gns3.restore._devices import restore_device
from adapters.gns3.restore._port import (
    Gns3RestorePoints,
    roll_back,
    roll_back_verified,
    rollback_scope,
)
from adapters.gns3.restore._take import (
    NoConversationError,
    RestorePointError,
    keep_then,
    read_configuration,
    record_what_it_did,
    restore_point_notes,
    take_for_change,
    take_restore_point,
    without_a_way_back,
)
from adapters.gns3.restore._undo.apply import DELETES_AT_ONCE
from adapters.gns3.restore._undo.judged import refusal

__all__ = [
    "DELETES_AT_ONCE",
    "Gns3RestorePoints",
    "NoConversationError",
    "RestorePointError",
    "keep_then",
    "read_configuration",
    "record_what_it_did",
    "refusal",
    "restore_device",
    "restore_point_notes",
    "roll_back",
    "roll_back_verified",
    "rollback_scope",
    "take_for_change",
    "take_restore_point",
    "without_a_way_back",
]
