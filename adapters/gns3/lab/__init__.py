"""One tool call's view of the lab: :class:`LabSnapshot` (names and ports resolved),
the call's access (:class:`LabAccess`, :class:`CallScope`, :class:`RestoreScope`)
and the tool contract (:class:`Gns3Tool`, :class:`ToolRegistry`) that the tools and
restore points build on.
"""

from adapters.gns3.lab._prompt import wait_for_prompt
from adapters.gns3.lab._registry import (
    AUTOMATION_ONLY,
    BOTH_MODES,
    AtMost,
    CallScope,
    Describer,
    Gns3Tool,
    Gns3ToolSettings,
    LabAccess,
    RestoreScope,
    ToolArguments,
    ToolRegistry,
    openai_schema,
    parse_arguments,
)
from adapters.gns3.lab._results import batch, item
from adapters.gns3.lab._snapshot import LabSnapshot

__all__ = [
    "AUTOMATION_ONLY",
    "BOTH_MODES",
    "AtMost",
    "CallScope",
    "Describer",
    "Gns3Tool",
    "Gns3ToolSettings",
    "LabAccess",
    "LabSnapshot",
    "RestoreScope",
    "ToolArguments",
    "ToolRegistry",
    "batch",
    "item",
    "openai_schema",
    "parse_arguments",
    "wait_for_prompt",
]
