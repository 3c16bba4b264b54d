"""Device consoles over telnet: :class:`ConsoleRunner`, one session's conversation,
the console lock and what a run is given and gives back.
"""

from adapters.gns3.console._lock import ConsolePriority, background_console_use, current_priority
from adapters.gns3.console._runner import (
    REJECTED,
    CommandOutcome,
    ConsoleRunner,
    ConsoleTarget,
    ConsoleTranscript,
)

__all__ = [
    "REJECTED",
    "CommandOutcome",
    "ConsolePriority",
    "ConsoleRunner",
    "ConsoleTarget",
    "ConsoleTranscript",
    "background_console_use",
    "current_priority",
]
