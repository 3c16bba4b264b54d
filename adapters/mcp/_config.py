"""How an operator declares an MCP server whose tools the built-in agent may use."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from copilot_core import CopilotMode

__all__ = ["NAMESPACE_SEPARATOR", "McpServerConfig", "namespaced"]

#: Between a server's name and its tool's: ``<server>__<tool>``.
NAMESPACE_SEPARATOR = "__"

#: What OpenAI-compatible providers accept as a function name.
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


def namespaced(server: str, tool: str) -> str | None:
    """The name the model sees for ``tool`` of ``server``, or ``None`` when it cannot be
    one (too long, or characters providers refuse)."""
    name = f"{server}{NAMESPACE_SEPARATOR}{tool}"
    return name if _FUNCTION_NAME.match(name) else None


class McpServerConfig(BaseModel):
    """One MCP server, as ``COPILOT_MCP_SERVERS`` lists it (a JSON list of these).

    ``transport``: ``stdio`` runs ``command`` (a list: program and arguments) as a child
    process of the service; ``http`` connects to ``url`` (Streamable HTTP) with
    ``headers`` (secret: never logged, never shown). Its tools are offered to the model
    as ``<name>__<tool>`` in the ``modes`` listed, only those named in ``tools`` (the
    allow-list; ``["*"]`` allows every tool the server lists). A tool is read-only when
    the server annotates it ``readOnlyHint: true``, or when it is named in ``read_only``
    and the server does not say it changes something (``readOnlyHint: false`` or
    ``destructiveHint: true``); every other tool, and every tool named in ``changing``
    (``["*"]``: all), is a change (default deny): changes wait for the user's approval
    under the default ``changes`` setting (``always`` asks for every call).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,31}$")]
    transport: Literal["stdio", "http"]
    command: list[str] | None = Field(
        default=None, description="stdio: the program and its arguments."
    )
    env: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="stdio: extra environment variables of the process (secret).",
    )
    cwd: Path | None = Field(default=None, description="stdio: the working directory.")
    url: str | None = Field(
        default=None, pattern=r"^https?://\S+$", description="http: the server's MCP URL."
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="http: headers sent with every request (secret)."
    )
    modes: tuple[CopilotMode, ...] = Field(
        default=(CopilotMode.TEACHING_ASSISTANT, CopilotMode.LAB_AUTOMATION_ASSISTANT),
        min_length=1,
        description="The copilot modes whose agent may use this server's tools.",
    )
    tools: tuple[str, ...] = Field(
        min_length=1, description='The allow-list of tool names; ["*"] allows every tool.'
    )
    changing: tuple[str, ...] = Field(
        default=(),
        description="Tools that change something (they wait for approval), whatever the "
        'server says; ["*"]: all.',
    )
    read_only: tuple[str, ...] = Field(
        default=(),
        description="Tools the server does not annotate readOnlyHint that only read (they "
        "do not wait for approval under `changes`); a server's own claim of a change wins.",
    )
    timeout: Annotated[float, Field(gt=0, le=3600)] = Field(
        default=30.0,
        description="Seconds one call may take before it is answered 'tool unavailable' "
        "(the agent's tool time limit bounds it too).",
    )
    connect_timeout: Annotated[float, Field(gt=0, le=300)] = Field(
        default=10.0, description="Seconds to connect and list the tools."
    )
    max_result_chars: Annotated[int, Field(ge=100, le=1_000_000)] = Field(
        default=20_000, description="A longer result is cut to this many characters."
    )

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name in value:
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not an HTTP header name")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> Self:
        if self.transport == "stdio":
            if not self.command:
                raise ValueError("a stdio server needs a command (program and arguments)")
            if self.url is not None or self.headers:
                raise ValueError("url and headers are for http servers")
        else:
            if self.url is None:
                raise ValueError("an http server needs a url")
            if self.command is not None or self.env or self.cwd is not None:
                raise ValueError("command, env and cwd are for stdio servers")
        for tool in (*self.tools, *self.changing, *self.read_only):
            if tool != "*" and namespaced(self.name, tool) is None:
                raise ValueError(
                    f"{self.name}{NAMESPACE_SEPARATOR}{tool} cannot be a tool name for a model "
                    "(letters, digits, '_' and '-' only, at most 64 characters)"
                )
        return self

    def allows(self, tool: str) -> bool:
        return "*" in self.tools or tool in self.tools

    def changes(self, tool: str) -> bool:
        """Whether the operator named ``tool`` a change (whatever the server says)."""
        return "*" in self.changing or tool in self.changing

    def reads_only(self, tool: str) -> bool:
        """Whether the operator named ``tool`` read-only (unless the server says not)."""
        return tool != "*" and tool in self.read_only

    def describe(self) -> str:
        """Where the server is, without anything that may be secret (arguments, user
        info, query): for logs and ``/capabilities``."""
        if self.transport == "stdio":
            return Path((self.command or ["?"])[0]).name
        parts = urlsplit(self.url or "")
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"
