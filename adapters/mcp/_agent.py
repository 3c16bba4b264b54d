"""The built-in agent, as ``/capabilities`` shows it once MCP servers serve it tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from copilot_core import Message
from copilot_core.events import AgentEvent
from copilot_core.ports import AgentBackend, AgentCapabilities, AgentInfo, AgentRunConfig

if TYPE_CHECKING:  # built only with MCP servers configured (their source imports the SDK)
    from adapters.mcp._source import McpToolSource

__all__ = ["WithMcpTools"]


class WithMcpTools:
    """An ``AgentBackend`` that runs as ``inner`` does and reports the ``mcp`` capability
    (spec 002's flag) when MCP servers are configured as its tool sources."""

    def __init__(self, inner: AgentBackend, source: McpToolSource) -> None:
        self.inner = inner
        self.source = source

    def run(
        self, query: str, history: Sequence[Message], config: AgentRunConfig
    ) -> AsyncGenerator[AgentEvent, None]:
        return self.inner.run(query, history, config)

    def capabilities(self) -> AgentCapabilities:
        capabilities = self.inner.capabilities()
        return replace(capabilities, mcp=capabilities.mcp or bool(self.source.links))

    def agents(self) -> Sequence[AgentInfo]:
        return self.inner.agents()
