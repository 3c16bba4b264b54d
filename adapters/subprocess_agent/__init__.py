"""External agent programs behind the core's AgentBackend port (spec 002).

Declare agents with :class:`AgentConfig` (settings can hold a list of them) and
build one :class:`SubprocessAgentBackend` per agent with :func:`build_agent_backends`.
"""

from adapters.subprocess_agent._backend import SubprocessAgentBackend, build_agent_backends
from adapters.subprocess_agent._config import (
    DEFAULT_ARGUMENTS,
    AgentCapabilityFlags,
    AgentConfig,
    HistoryLimits,
)
from adapters.subprocess_agent._invocation import (
    TRUNCATION_SUFFIX,
    agent_environment,
    command_line,
    recent_history,
)
from adapters.subprocess_agent._translation import EventTranslator, Outcome

__all__ = [
    "DEFAULT_ARGUMENTS",
    "TRUNCATION_SUFFIX",
    "AgentCapabilityFlags",
    "AgentConfig",
    "EventTranslator",
    "HistoryLimits",
    "Outcome",
    "SubprocessAgentBackend",
    "agent_environment",
    "build_agent_backends",
    "command_line",
    "recent_history",
]
