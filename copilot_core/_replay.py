"""What of a reply's calls goes back to the model: a history that stays valid, and one
a small model can learn from (issue 40, items 3 and 6).

Every request carries the whole conversation, so one bad stored message fails every
later request of its session: a model server that parses the arguments of the calls
it is sent (llama.cpp's does, to render them with the model's template) answers 500 to
a call whose arguments are not JSON. Three rules keep what is stored and replayed
sound:

* **a call's stored arguments are always a JSON object** (:func:`stored_arguments`):
  a call whose arguments were cut off (the reply ran out of tokens mid-call) or do not
  parse is kept with ``{}`` (its id stays, so its tool message still answers it, as
  the OpenAI protocol wants), and that tool message says what happened and that
  nothing was run;
* **a reply's calls are bounded** (:func:`unrun`): past ``max_calls`` the calls are
  answered, not run, with a note the model can act on (make the rest in the next
  reply), and a call cut off by the length limit is answered as such;
* **a history stored before these rules is repaired on replay** (:func:`replayable`):
  a stored call with unparsable arguments is given ``{}``, so a session broken by one
  works again.

And a reply whose calls were read from its text keeps readable prose
(:func:`without_holes`): where a call block was cut out, the blank run is collapsed to
one paragraph break, and the sentence that introduced the block ("…you can use the
following commands:") is dropped, so the next turn reads the prose and then a call with
its result (the stored message carries the calls as ``tool_calls``), never a gap or an
introduction pointing at nothing, which a small model copies as its answer: the prose,
then no call. New replies are stored that way (``text_tool_calls`` keeps only the prose
before the first block: what followed one would be read before the call, stating its
outcome before it ran); a message stored before is mended on replay, where the block is
known only by the shape it left: a paragraph of a message with calls whose last line
ends with ``:`` and that is followed by nothing or by plain prose (not a list, a code
block, an indented line, a table, a quote or a heading, which a ``:`` does introduce)
loses that sentence, and a sentence that states a call's outcome ("After running this
command, …", "These commands will …") goes (``without_outcomes``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from copilot_core._messages import FunctionCall, Message, Role
from copilot_core._textcalls import without_introduction, without_outcomes
from copilot_core._tools import ParsedToolCall, ToolResult

__all__ = ["replayable", "stored_arguments", "unrun", "without_holes"]

#: Three or more line breaks (with blanks between): the hole a cut-out block leaves.
_HOLE = re.compile(r"[ \t]*\n(?:[ \t]*\n)+")
#: The start of a paragraph that a line ending in ``:`` does introduce: a list item, a
#: code block, an indented line, a table, a quote, a heading.
_INTRODUCED = re.compile(r"(?:[-*+][ \t]|\d{1,3}[.)][ \t]|```|[ \t]|\||>|#)")


def stored_arguments(call: ParsedToolCall) -> str:
    """The argument text a call is stored and replayed with: its own when it parsed,
    ``{}`` when it did not (its tool message says why it was not run)."""
    return call.raw_arguments if call.is_valid and call.raw_arguments.strip() else "{}"


def unrun(
    calls: Sequence[ParsedToolCall], finish_reason: str | None, max_calls: int
) -> dict[str, ToolResult]:
    """The calls of one reply that are answered without being run (by call id): those
    past the first ``max_calls``, and one cut off by the reply's length limit."""
    answers: dict[str, ToolResult] = {}
    for index, call in enumerate(calls):
        if index >= max_calls:
            answers[call.id] = ToolResult.error(
                f"Not run: only the first {max_calls} calls of a reply are run, and this "
                f"was call {index + 1} of {len(calls)}. Make the rest in your next reply "
                f"(after reading these results), at most {max_calls} at a time.",
                reason="too_many_calls",
            )
        elif not call.is_valid and finish_reason == "length":
            answers[call.id] = ToolResult.error(
                f"Not run: this call of {call.name} was cut off before its arguments were "
                "complete (the reply reached its length limit), so it was not run and its "
                "arguments were not kept. Make it again in a shorter reply (fewer calls, "
                "shorter arguments).",
                reason="cut_off",
            )
    return answers


def without_holes(text: str) -> str:
    """``text`` with every run of blank lines (where a call block was cut out) made one
    paragraph break, its ends stripped, and no introduction left pointing at nothing:
    a paragraph whose last line ends with ``:`` and that ends the text or is followed by
    plain prose loses its introducing sentence (see the module doc). Code blocks are
    left as they are."""
    paragraphs = _HOLE.sub("\n\n", text).strip().split("\n\n")
    in_code: list[bool] = []  # each paragraph: inside a code block, or opening one
    fenced = False
    for paragraph in paragraphs:
        opens = paragraph.count("```") % 2 == 1
        in_code.append(fenced or opens)
        fenced ^= opens
    # From the end: what follows a paragraph is what is kept of the next one (an
    # introduction of a dropped introduction goes too).
    kept: list[str] = []
    for paragraph, code in zip(reversed(paragraphs), reversed(in_code), strict=True):
        following = kept[-1] if kept else ""
        if not code and not _INTRODUCED.match(following):
            paragraph = without_introduction(paragraph)
        if not code:
            paragraph = without_outcomes(paragraph)
        if paragraph:
            kept.append(paragraph)
    return "\n\n".join(reversed(kept))


def replayable(history: Sequence[Message]) -> list[Message]:
    """``history`` as it is replayed: every assistant call's arguments a JSON object
    (``{}`` for one whose stored text does not parse, as stored before these rules) and
    no hole or introduction pointing at nothing in the prose of a message with calls
    (:func:`without_holes`); messages that need nothing are the
    same objects (the stored history itself is not changed)."""
    out = list(history)
    for index, message in enumerate(out):
        calls = message.tool_calls
        if message.role is not Role.ASSISTANT or not calls:
            continue
        update: dict[str, object] = {}
        if not all(_is_object(call.function.arguments) for call in calls):
            update["tool_calls"] = tuple(
                call
                if _is_object(call.function.arguments)
                else call.model_copy(
                    update={"function": FunctionCall(name=call.name, arguments="{}")}
                )
                for call in calls
            )
        content = without_holes(message.content)
        if content != message.content:
            update["content"] = content
        if update:
            out[index] = message.model_copy(update=update)
    return out


def _is_object(arguments: str) -> bool:
    if arguments == "{}":
        return True
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False
