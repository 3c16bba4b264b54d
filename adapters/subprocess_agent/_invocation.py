"""What the program is started with: its argument list, its history and its environment."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.subprocess_agent._config import AgentConfig, HistoryLimits, is_secret_name
from copilot_core import Message, Role, ToolContext

__all__ = ["TRUNCATION_SUFFIX", "agent_environment", "command_line", "recent_history"]

TRUNCATION_SUFFIX = "... (truncated)"

#: Variables every program gets from the service's environment when they are set.
BASE_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")

_PLACEHOLDER = re.compile(r"\{(query|history)\}")


def recent_history(messages: Sequence[Message], limits: HistoryLimits) -> list[dict[str, str]]:
    """Spec 002's history: the last ``max_pairs`` user/assistant exchanges, each message
    cut to ``max_chars`` characters plus ``... (truncated)``.

    Only what the user saw is kept: user messages and assistant messages with text
    and no tool calls (tool activity and system prompts are left out).
    """
    spoken = [
        message
        for message in messages
        if message.content
        and (
            message.role is Role.USER or (message.role is Role.ASSISTANT and not message.tool_calls)
        )
    ]
    if limits.max_pairs == 0:
        return []
    user_positions = [n for n, message in enumerate(spoken) if message.role is Role.USER]
    if len(user_positions) >= limits.max_pairs:
        spoken = spoken[user_positions[-limits.max_pairs] :]
    return [
        {"role": message.role.value, "content": _truncate(message.content, limits.max_chars)}
        for message in spoken
    ]


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + TRUNCATION_SUFFIX


def command_line(config: AgentConfig, query: str, history: list[dict[str, str]]) -> list[str]:
    """``command`` followed by the argument template with its placeholders filled in."""
    values = {"query": query, "history": json.dumps(history, ensure_ascii=False)}

    def fill(argument: str) -> str:
        return _PLACEHOLDER.sub(lambda match: values[match.group(1)], argument)

    return [*config.command, *(fill(argument) for argument in config.arguments)]


def agent_environment(
    config: AgentConfig,
    context: ToolContext,
    *,
    gns3_url: str | None,
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The program's whole environment, built from nothing.

    The base variables and the agent's allow-list are copied from ``parent`` (the
    service's environment); anything whose name looks secret is never copied. The
    GNS3 location of the turn is added, and the caller's GNS3 token only when the
    agent's configuration asks for it.
    """
    source = os.environ if parent is None else parent
    env: dict[str, str] = {}
    for name in (*BASE_VARIABLES, *config.env_allow):
        value = source.get(name)
        if value is not None and not is_secret_name(name):
            env[name] = value
    env.update(config.env)
    extra: dict[str, Any] = {
        "GNS3_URL": gns3_url,
        "GNS3_PROJECT_ID": context.project_id,
        "COPILOT_SESSION_ID": context.session_id,
        "COPILOT_USER_ID": context.user_id,
        "COPILOT_MODE": context.mode.value,
        "COPILOT_AGENT_ID": config.id,
    }
    env.update({name: str(value) for name, value in extra.items() if value})
    if config.pass_token and context.credentials:
        env["GNS3_TOKEN"] = context.credentials
    return env
