"""The agent loop's guards against a model that runs away: repeats, and arguments without end.

Small models loop: they make the same call again and again, or write one argument
until the stream is given up. These rules hold whatever the model:

* :class:`ArgumentLimits` bound one call's argument text (characters) and the length
  of any list in it, per tool; :class:`ArgumentMeter` checks a call's text as it
  streams, so an oversized call is stopped while the model writes it, not after;
* :class:`TurnGuard` remembers, for one turn, the calls that succeeded (an identical
  call is not run again: the model is told, and a second repeat ends the turn). (The
  user's decisions on calls are the gate's to remember: ``TurnDecisions``.)

"Identical" is the call's one identity, :func:`~copilot_core.ports.call_digest` (the
digest an approval is bound to): the tool's name and its arguments in canonical JSON
(keys sorted), so the order of keys or spacing does not make a call new.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from copilot_core._approvals import call_digest
from copilot_core._tools import ParsedToolCall, ToolResult

__all__ = [
    "ArgumentLimit",
    "ArgumentLimits",
    "ArgumentMeter",
    "TurnGuard",
]


@dataclass(frozen=True, slots=True)
class ArgumentLimit:
    """How big one call's arguments may get: characters of JSON text, items of any list."""

    max_chars: int = 16_000
    max_items: int = 64

    def __post_init__(self) -> None:
        if self.max_chars < 2 or self.max_items < 1:
            raise ValueError("an argument limit needs max_chars >= 2 and max_items >= 1")


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """The limit of every tool: ``default``, or the one ``per_tool`` names."""

    default: ArgumentLimit = field(default_factory=ArgumentLimit)
    per_tool: Mapping[str, ArgumentLimit] = field(default_factory=dict)

    def of(self, tool: str) -> ArgumentLimit:
        return self.per_tool.get(tool, self.default)


class ArgumentMeter:
    """Reads a call's argument text as it grows and says when it passes its limit.

    It follows the JSON just enough to count the items of every open list (strings
    and escapes are skipped), so each character is looked at once: checking a call
    costs its length, however it is split into fragments.
    """

    __slots__ = ("_chars", "_escape", "_in_string", "_limit", "_stack", "exceeded")

    def __init__(self, limit: ArgumentLimit) -> None:
        self._limit = limit
        self._chars = 0
        self._in_string = False
        self._escape = False
        #: One entry per open container: the items counted so far for a list (-1 for an
        #: object), and whether a value has started since the last separator.
        self._stack: list[list[int]] = []
        #: Why the call passed its limit, once it did.
        self.exceeded: str | None = None

    def feed(self, text: str) -> str | None:
        """Take the next fragment; the reason once the arguments are too big, else None."""
        if self.exceeded is not None or not text:
            return self.exceeded
        self._chars += len(text)
        if self._chars > self._limit.max_chars:
            self.exceeded = (
                f"its arguments grew past {self._limit.max_chars} characters, the limit "
                "for this tool"
            )
            return self.exceeded
        stack = self._stack
        for char in text:
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
                continue
            if char in " \t\r\n":
                continue
            if char == "]" or char == "}":
                if stack:
                    stack.pop()
                continue
            if char == ",":
                if stack and stack[-1][0] >= 0:
                    stack[-1][1] = 0  # the next value is a new item
                continue
            if char == ":":
                continue
            # The start (or the continuation) of a value.
            if stack and stack[-1][0] >= 0 and not stack[-1][1]:
                stack[-1][0] += 1
                stack[-1][1] = 1
                if stack[-1][0] > self._limit.max_items:
                    self.exceeded = (
                        f"a list in its arguments grew past {self._limit.max_items} items, "
                        "the limit for this tool"
                    )
                    return self.exceeded
            if char == '"':
                self._in_string = True
            elif char == "[":
                stack.append([0, 0])
            elif char == "{":
                stack.append([-1, 0])
        return None


class TurnGuard:
    """What one turn has done already, so that the model cannot make it do it again."""

    __slots__ = ("_succeeded", "repeats", "runaways")

    def __init__(self) -> None:
        self._succeeded: dict[str, str] = {}  # call digest -> the id of the call that succeeded
        #: Calls refused in this turn as repeats of one that succeeded.
        self.repeats = 0
        #: Replies stopped in this turn because a call's arguments passed their limit.
        self.runaways = 0

    def succeeded(self, call: ParsedToolCall) -> None:
        """``call`` ran and succeeded: an identical call is a repeat from now on."""
        if call.is_valid:
            self._succeeded.setdefault(call_digest(call.name, call.arguments or {}), call.id)

    def repeat_of(self, call: ParsedToolCall) -> str | None:
        """The id of an earlier, successful identical call, if there is one."""
        if not call.is_valid:
            return None
        return self._succeeded.get(call_digest(call.name, call.arguments or {}))

    def refuse_repeat(self, call: ParsedToolCall, earlier: str) -> ToolResult:
        """The answer to a repeat (counted): the call was not run, and why."""
        self.repeats += 1
        return ToolResult.error(
            f"Not run: this exact call ({call.name} with the same arguments) already "
            f"succeeded in this turn (call {earlier}); its result is above. Do not repeat "
            "it: use that result, make a different call, or answer the user.",
            repeated=earlier,
        )
