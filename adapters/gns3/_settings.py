"""The GNS3 adapter's settings, as the service reads them: :class:`Gns3Settings` (the
server, and the bounds of the lab tools) and :class:`ConsoleSettings` (the device
consoles).

Each field is declared once: the service's ``gns3`` and ``console`` sections *are* these
types (``COPILOT_GNS3__URL``, ``COPILOT_CONSOLE__COMMAND_TIMEOUT``…). A ``Gns3Settings``
is a :class:`~adapters.gns3.Gns3ToolSettings`, handed whole to the tools; a
``ConsoleSettings`` builds the :class:`~adapters.gns3.ConsoleRunner`
(:meth:`ConsoleSettings.runner`), whose constructor keeps the defaults.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

from pydantic import ConfigDict, Field, SecretStr
from pydantic.dataclasses import dataclass

from adapters.gns3.console import ConsoleRunner
from adapters.gns3.tools import Gns3ToolSettings
from copilot_core.rules import BASE_URL_PATTERN

__all__ = ["ConsoleSettings", "Gns3Settings"]


@dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class Gns3Settings(Gns3ToolSettings):
    """The GNS3 server, and the bounds of the lab tools (:class:`Gns3ToolSettings`)."""

    url: str = Field(
        default="http://127.0.0.1:3080",
        pattern=BASE_URL_PATTERN,
        description="Base URL of the GNS3 server (its v3 API): http(s)://host[:port], no "
        "credentials.",
    )
    timeout: float = Field(default=10.0, gt=0, description="Seconds per GNS3 request.")
    public_url: str | None = Field(
        default=None,
        pattern=BASE_URL_PATTERN,
        description="GNS3's address as people's browsers reach it (the web page's console "
        "addresses and links to GNS3's web UI); unset: url.",
    )
    username: str | None = Field(
        default=None,
        description=(
            "A GNS3 account (a superadmin, to see every project) the service uses to follow "
            "projects being closed or deleted; unset: their copilot data is left alone."
        ),
    )
    password: SecretStr | None = Field(default=None, description="Its password.")
    deleted_projects: Literal["delete", "archive"] = Field(
        default="delete",
        description=(
            "What happens to the conversations of a project deleted in GNS3: deleted, or "
            "moved to data_dir/archive."
        ),
    )


def _runner_default(name: str) -> Any:
    """The default :class:`ConsoleRunner` gives ``name`` (its constructor keeps them)."""
    return inspect.signature(ConsoleRunner).parameters[name].default


@dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class ConsoleSettings:
    """The device consoles (telnet): the bounds of a :class:`ConsoleRunner`."""

    command_timeout: float = Field(
        default=_runner_default("command_timeout"),
        gt=0,
        description="Seconds one console command may take.",
    )
    connect_timeout: float = Field(
        default=_runner_default("connect_timeout"),
        gt=0,
        description="Seconds to open a console.",
    )
    max_output_chars: int = Field(
        default=_runner_default("max_output_chars"),
        ge=100,
        description="Output kept of one command (characters).",
    )
    drain_quiet: float = Field(
        default=_runner_default("drain_quiet"),
        gt=0,
        description="Seconds of silence that end a command's output.",
    )
    recovery_timeout: float = Field(
        default=_runner_default("recovery_timeout"),
        gt=0,
        description="Seconds to bring a console back to its prompt.",
    )
    wake_timeout: float = Field(
        default=_runner_default("wake_timeout"),
        gt=0,
        description="Seconds to wake a console that does not answer at once.",
    )

    def runner(self) -> ConsoleRunner:
        """A console runner with these bounds."""
        return ConsoleRunner(
            command_timeout=self.command_timeout,
            connect_timeout=self.connect_timeout,
            max_output_chars=self.max_output_chars,
            drain_quiet=self.drain_quiet,
            recovery_timeout=self.recovery_timeout,
            wake_timeout=self.wake_timeout,
        )
