"""The GNS3 tools, one module per family, served through :class:`Gns3ToolExecutor`.

* ``registry`` — :class:`Gns3Tool` (argument model + handler + policy), :class:`ToolRegistry`,
  the schema derivation and the validation-to-error rule;
* ``topology``, ``nodes``, ``links``, ``commands``, ``capture``, ``skills``, ``consoles``
  (waiting for a prompt), ``filters`` (link faults), ``project`` (snapshots, drawings),
  ``restore`` (restore points and rollback) — the families;
* ``executor`` — the core's ``ToolExecutor`` and ``TopologySource``.
"""

from adapters.gns3._tools.executor import (
    Gns3ToolExecutor,
    Gns3TopologySource,
    gns3_tools,
)
from adapters.gns3._tools.registry import (
    Gns3Tool,
    Gns3ToolSettings,
    LabAccess,
    ToolRegistry,
    openai_schema,
)

__all__ = [
    "Gns3Tool",
    "Gns3ToolExecutor",
    "Gns3ToolSettings",
    "Gns3TopologySource",
    "LabAccess",
    "ToolRegistry",
    "gns3_tools",
    "openai_schema",
]
