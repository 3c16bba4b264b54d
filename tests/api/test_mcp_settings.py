"""``COPILOT_MCP_SERVERS`` in the service's settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from entrypoints.settings import Settings

SERVER = {"name": "lab", "transport": "stdio", "command": ["x"], "tools": ["*"]}


def test_settings_read_mcp_servers_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPILOT_MCP_SERVERS", '[{"name": "lab", "transport": "stdio", '
                       '"command": ["x"], "tools": ["echo"], "changing": ["echo"]}]')  # fmt: skip
    (server,) = Settings().mcp_servers

    assert (server.name, server.tools, server.changes("echo")) == ("lab", ("echo",), True)


def test_settings_refuse_two_mcp_servers_with_one_name() -> None:
    with pytest.raises(ValidationError, match="two MCP servers are named 'lab'"):
        Settings(mcp_servers=[SERVER, SERVER])  # type: ignore[list-item]
