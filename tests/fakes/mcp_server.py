"""A small MCP server written with the official SDK, for tests of MCP servers as tool sources.

Run it as a subprocess::

    python -m tests.fakes.mcp_server stdio            # over stdin/stdout
    python -m tests.fakes.mcp_server http PORT        # Streamable HTTP on 127.0.0.1:PORT/mcp

Its tools:

* ``echo(text)`` — answers ``{"echo": text}`` (structured) and the text;
* ``add(a, b)`` — a sum;
* ``hang(seconds)`` — sleeps that long before answering (a slow or stuck server);
* ``big(chars)`` — a text of that many characters (result size caps);
* ``fail()`` — a tool error (``isError``);
* ``write_note(note)`` — appends to the file named by ``FAKE_MCP_NOTES`` (a state change,
  for approval tests); answers how many notes there are;
* ``secret()`` — a tool the tests leave out of the allow-list.

Every tool but ``write_note`` is annotated ``readOnlyHint``; ``write_note`` is not annotated
(an MCP tool that says nothing is a change).

With ``FAKE_MCP_REQUIRE_HEADER=name:value`` every HTTP request must carry that header
(configured headers reach the server) or it answers 401. Nothing here listens on anything
but 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["build_server", "main"]


#: The tools that only read say so; ``write_note`` says nothing (a change, by default).
_READ_ONLY = ToolAnnotations(readOnlyHint=True)


def build_server() -> MCPServer:
    server = MCPServer("fake-tools")

    @server.tool(title="Echo a text", description="Echo the text back.", annotations=_READ_ONLY)
    def echo(text: str) -> dict[str, Any]:
        return {"echo": text}

    @server.tool(description="Add two integers.", annotations=_READ_ONLY)
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Wait this many seconds, then answer.", annotations=_READ_ONLY)
    async def hang(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"woke after {seconds:g} s"

    @server.tool(description="A text of this many characters.", annotations=_READ_ONLY)
    def big(chars: int) -> str:
        return "x" * chars

    @server.tool(description="Always fails.", annotations=_READ_ONLY)
    def fail() -> str:
        raise ToolError("the fake tool failed on purpose")

    @server.tool(description="Append a note to the notes file (changes state).")
    def write_note(note: str) -> str:
        path = Path(os.environ["FAKE_MCP_NOTES"])
        with path.open("a", encoding="utf-8") as notes:
            notes.write(note + "\n")
        return f"{len(path.read_text(encoding='utf-8').splitlines())} notes"

    @server.tool(description="Not on any allow-list.", annotations=_READ_ONLY)
    def secret() -> str:
        return "you should not see this"

    return server


class _RequireHeader:
    """ASGI middleware: 401 unless the configured header is present with its value."""

    def __init__(self, app: ASGIApp, name: str, value: str) -> None:
        self.app, self.name, self.value = app, name.lower().encode(), value.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (self.name, self.value) not in scope["headers"]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing header"})
            return
        await self.app(scope, receive, send)


def main(argv: list[str]) -> None:
    server = build_server()
    if argv[:1] == ["http"]:
        import uvicorn

        app: ASGIApp = server.streamable_http_app()
        required = os.environ.get("FAKE_MCP_REQUIRE_HEADER")
        if required:
            name, _, value = required.partition(":")
            app = _RequireHeader(app, name, value)
        uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="warning")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
