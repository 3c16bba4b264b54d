"""MCP both ways: the copilot's lab tools for any MCP client, and MCP servers' tools for
the copilot's own agent (see ``docs/mcp.md``).

The copilot as an MCP server:

* :class:`McpEndpoint` — the ASGI app mounted at ``/v3/copilot/mcp`` (Streamable HTTP,
  GNS3 bearer auth): the GNS3 tools through the core's ``ToolGate``, topology and skill
  resources, the modes' prompts; built around :class:`McpServerDependencies`
  (its small ports: :class:`ProjectDirectory`, :class:`SkillDocument` s,
  :data:`ApprovalSettings`, :class:`ToolCallObserver`) and :class:`McpServerSettings`.

MCP servers as tool sources:

* :class:`McpServerConfig` — one server as ``COPILOT_MCP_SERVERS`` declares it;
* :class:`McpToolSource` — their tools as a core ``ToolExecutor`` (``<server>__<tool>``),
  with :class:`McpServerStatus` for ``/capabilities``;
* :class:`CompositeToolExecutor` — several executors offered as one;
* :class:`WithMcpTools` — an agent that reports the ``mcp`` capability.

The MCP SDK is not imported with this package: :class:`McpToolSource` (and
:class:`McpServerStatus`) load it on first use, when MCP servers are configured, and
:class:`McpEndpoint` loads it in the background once its app runs (``serve`` answers
``/healthz`` before).
"""

import importlib
import typing

from adapters.mcp._agent import WithMcpTools
from adapters.mcp._composite import CompositeToolExecutor
from adapters.mcp._config import NAMESPACE_SEPARATOR, McpServerConfig
from adapters.mcp._connection import ConnectionOptions
from adapters.mcp._contracts import (
    ApprovalSettings,
    McpServerDependencies,
    McpServerSettings,
    ProjectDirectory,
    SkillCatalogue,
    SkillDocument,
    ToolCallObserver,
    ToolCallRecord,
)
from adapters.mcp._endpoint import McpEndpoint

if typing.TYPE_CHECKING:
    from adapters.mcp._source import McpServerStatus, McpToolSource

#: The names whose module imports the MCP SDK, and where they live.
_LAZY = {
    "McpServerStatus": "adapters.mcp._source",
    "McpToolSource": "adapters.mcp._source",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "NAMESPACE_SEPARATOR",
    "ApprovalSettings",
    "CompositeToolExecutor",
    "ConnectionOptions",
    "McpEndpoint",
    "McpServerConfig",
    "McpServerDependencies",
    "McpServerSettings",
    "McpServerStatus",
    "McpToolSource",
    "ProjectDirectory",
    "SkillCatalogue",
    "SkillDocument",
    "ToolCallObserver",
    "ToolCallRecord",
    "WithMcpTools",
]
