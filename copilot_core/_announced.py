"""A reply that names the tool to use and makes no call (issue 40).

A 1.5B model asked "Start PC1 and PC2." answered "Start the nodes: use the
``start_gns3_node`` function to start the two nodes." and made no call, so nothing was
done; asked to give the hosts addresses, it named ``execute_multiple_device_config_commands``
the same way. :func:`named_tools` finds the offered tools a reply names (by their exact
name, as a word); the agent then tells the model, once in a turn that has made no call,
that nothing was done and that it calls the tool itself (:func:`ask_to_call`). The
model's text never becomes a call here: a call it makes next goes through the gate (its
approval included) like any other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from copilot_core._tools import ToolSpec

__all__ = ["ask_to_call", "named_tools"]

#: At most this many tools are named in the note.
_NAMED = 3


def named_tools(answer: str, tools: Sequence[ToolSpec]) -> list[str]:
    """The names of ``tools`` that ``answer`` names, in its order: a name as a whole word
    (``start_gns3_node``, `` `start_gns3_node` ``, ``start_gns3_node(...)``)."""
    found = []
    for spec in tools:
        match = re.search(rf"(?<![\w-]){re.escape(spec.name)}(?![\w-])", answer)
        if match is not None:
            found.append((match.start(), spec.name))
    return [name for _, name in sorted(found)][:_NAMED]


def ask_to_call(names: Sequence[str]) -> str:
    """What the model is told when its reply named ``names`` and made no call."""
    listed = " or ".join(names)
    return (
        "Note from the copilot service, not from the user: your reply names "
        f"{listed} but makes no tool call, so nothing was done. You call the tools "
        f"yourself: if the user's request needs it, call {names[0]} now with its "
        "arguments; if it does not, answer the user without telling them to use a tool."
    )
