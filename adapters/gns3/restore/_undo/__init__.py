"""Undoing exactly one change: its record, the plan against the lab as it is now, and
carrying it out (see each module)."""

from adapters.gns3.restore._undo.apply import TopologyPort, UndoOutcome, carry_out
from adapters.gns3.restore._undo.gns3_port import Gns3TopologyPort, read_kept
from adapters.gns3.restore._undo.plan import Step, UndoPlan, plan_undo, resolve
from adapters.gns3.restore._undo.record import describe_change, kept_node, record_change

__all__ = [
    "Gns3TopologyPort",
    "Step",
    "TopologyPort",
    "UndoOutcome",
    "UndoPlan",
    "carry_out",
    "describe_change",
    "kept_node",
    "plan_undo",
    "read_kept",
    "record_change",
    "resolve",
]
