"""gns3-copilot's domain core: a pure library with no I/O and no frameworks.

What a service that embeds the copilot needs is here: :class:`ChatService` (turns and
sessions, each named by its :class:`SessionKey`), :class:`BuiltinAgent` (the agent loop),
:class:`TurnRunner`, the design's pure objects (:class:`ToolCallAccumulator`,
:class:`StatsCollector`, :class:`AbortToken`, :class:`Conversation`) and the values
they speak. The rest is in topical modules:

* :mod:`copilot_core.ports`: the ports to implement (language model, tools, store,
  turn log, session leases, turn control relay, …) and the vocabulary they speak
  (messages, deltas, tool calls);
* :mod:`copilot_core.events`: what a turn streams (wire events) and what an agent
  backend reports (records);
* :mod:`copilot_core.errors`: the error tree;
* :mod:`copilot_core.bootstrap`: the chat built from its settings, for a program
  without a container of its own (``build_chat_service``), and the in-memory turn log,
  session leases and turn control relay it uses;
* :mod:`copilot_core.rollback`: the user's undo of a change as a use case
  (:class:`~copilot_core.rollback.Rollback`);
* :mod:`copilot_core.drills`: troubleshooting drills (the lab's ``DrillLab`` port, the
  scorer, the :class:`~copilot_core.drills.Drills` use case, the results store);
* :mod:`copilot_core.testing`: fakes of every port (a scripted model, an in-memory
  store, tools as functions).

Every other module is internal.
"""

from copilot_core._abort import AbortToken
from copilot_core._accumulator import ToolCallAccumulator
from copilot_core._agent import AgentSettings, BuiltinAgent
from copilot_core._chat_settings import ChatSettings, RunnerSettings
from copilot_core._conversation import Conversation
from copilot_core._messages import Message, Role
from copilot_core._prompts import PromptBook
from copilot_core._runner import TurnHandle, TurnRunner
from copilot_core._service import ChatService
from copilot_core._session import CopilotMode, Session
from copilot_core._session_key import SessionKey
from copilot_core._stats import StatsCollector, TurnStats
from copilot_core._system import SystemClock, UuidIdFactory
from copilot_core._tokens import ApproximateTokenCounter
from copilot_core._toolgate import ToolGate
from copilot_core._tools import ParsedToolCall, ToolContext, ToolResult, ToolSpec, ToolStatus
from copilot_core._turns import TurnRequest, TurnResult
from copilot_core.errors import CopilotError
from copilot_core.events import TurnEvent
from copilot_core.ports import ModelSelection

__all__ = [
    "AbortToken",
    "AgentSettings",
    "ApproximateTokenCounter",
    "BuiltinAgent",
    "ChatService",
    "ChatSettings",
    "Conversation",
    "CopilotError",
    "CopilotMode",
    "Message",
    "ModelSelection",
    "ParsedToolCall",
    "PromptBook",
    "Role",
    "RunnerSettings",
    "Session",
    "SessionKey",
    "StatsCollector",
    "SystemClock",
    "ToolCallAccumulator",
    "ToolContext",
    "ToolGate",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "TurnEvent",
    "TurnHandle",
    "TurnRequest",
    "TurnResult",
    "TurnRunner",
    "TurnStats",
    "UuidIdFactory",
]
