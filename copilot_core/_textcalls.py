"""Tool calls a model wrote in its text instead of making them.

Small models served with a stock chat template often answer a request for a tool with
the call written out: a JSON object in a ```json block, in ``<tool_call>`` tags (the
Hermes/Qwen shape) or ``<tools>`` tags, or as the whole answer. :func:`text_tool_calls`
finds such calls in a finished reply that made none, within bounds:

* only the shapes above, and only objects that name an offered tool (``name``,
  ``function.name``, or ``function`` as a string) with an object of arguments
  (``arguments`` or ``parameters``; a JSON string of an object is accepted too);
* a reply longer than ``max_text`` characters is not searched, and at most
  ``max_calls`` calls are taken from one reply;
* each call's argument text is measured by the tool's :class:`ArgumentLimit`, so a call
  the model could not have streamed is not taken from its text either.

What is found is then an ordinary call: the tool gate validates its arguments and asks
for approval as for any other (and, because it was read from text, a changing one asks
whatever the user's approval setting; see ``ToolGate.run``). The text returned is the
prose before the first call block, without the sentence that introduced the block (a
last line ending in ``:``, "…you can use the following commands:"; see
:func:`without_introduction`): what the stored assistant message keeps, with the calls
as its ``tool_calls``. What followed a block is dropped: the stored message is read as
its prose and then its calls, so that text would come before the call and report its
outcome before it ran ("After running this command, the lab will have…"). A blank hole,
an introduction pointing at nothing, or an outcome stated before its call is a shape a
small model reading the history copies as its answer: the prose, then no call (issue
40, item 3).

A call read from text is the model's only when the model wrote it. A model that quotes
a tool's output (a router's interface description, a web page, a file) quotes whatever
call-shaped text is in it, and that text must never become a call: :class:`ToolOutputs`
holds what the conversation's tools returned, and :meth:`ToolOutputs.quotes` says when a
call read from text is there, as its block (whitespace aside) or as a call-shaped JSON
object with the same name and arguments (key order, spacing and the arguments being an
object or a JSON string of one aside).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from copilot_core._guards import ArgumentLimits, ArgumentMeter

__all__ = [
    "TextCall",
    "ToolOutputs",
    "text_tool_calls",
    "without_introduction",
    "without_outcomes",
]

#: ``<tool_call> … </tool_call>`` or ``<tools> … </tools>`` (the tag some templates ask
#: for); a last one left open at the end of the text counts.
_TAGGED = re.compile(r"<(tool_call|tools)>\s*(?P<body>.*?)\s*(?:</\1>|\Z)", re.DOTALL)
#: A fenced code block, with or without a language (```json, ```tool_call, ```).
_FENCED = re.compile(r"```[ \t]*[A-Za-z_]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
#: Prose that introduces what follows: it ends with ``:`` (markdown emphasis aside).
_INTRODUCES = re.compile(r":[*_]*\s*\Z")
#: The end of a sentence inside a line, before the next one starts (a capital, a digit,
#: markup): "e.g. the" is not one.
_SENTENCE_END = re.compile(r"[.!?][\"')\]*_]*[ \t]+(?=[-A-Z0-9*_`\"'(\[])")
#: What is left of a list item once its sentence is dropped: its marker ("3.", "-"),
#: alone or after a sentence.
_MARKER_LEFT = re.compile(r"(?:\A|(?<=[.!?]))[ \t]*(?:[-*+]|\d{1,3}[.)])\Z")
#: A sentence that states what a call will do or did before its result is known: "After
#: running this command, …", "Once you execute these…", "These commands will …".
_OUTCOME = re.compile(
    r"[*_\s]*(?:(?:after|once)\s+(?:you\s+)?(?:have\s+)?(?:run|running|ran|execut\w*|"
    r"appl(?:y|ying|ied))\b|(?:this|these|the above)\s+(?:commands?|calls?|code)\s+"
    r"(?:will|would|should)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TextCall:
    """A call found in text: the tool and its arguments as canonical JSON text, and the
    text it was read from (a block's body, or the whole answer)."""

    name: str
    arguments: str
    source: str = ""


def text_tool_calls(
    text: str,
    offered: Collection[str],
    limits: ArgumentLimits,
    *,
    max_calls: int = 4,
    max_text: int = 32_000,
) -> tuple[list[TextCall], str]:
    """The calls ``text`` writes out (see the module doc), and the text without them."""
    if not text or len(text) > max_text or not offered:
        return [], text
    found: list[TextCall] = []
    spans: list[tuple[int, int]] = []
    for pattern in (_TAGGED, _FENCED):
        for match in pattern.finditer(text):
            if any(start <= match.start() < end for start, end in spans):
                continue
            body = match.group("body") if pattern is _TAGGED else match.group(1)
            calls = _calls_in(body, offered, limits, source=body)
            if calls:
                found.extend(calls)
                spans.append(match.span())
    if not found:
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            found = _calls_in(stripped, offered, limits, source=stripped)
            if found:
                return found[:max_calls], ""
        return [], text
    # The prose before the first block, without the sentence that introduced it
    # ("…use the following commands:" would point at nothing). What came after a block
    # goes: a stored message is its prose, then its calls, so that text would be read
    # before the call it follows, reporting the call's outcome before it ran ("After
    # running this command, the lab will have…"), and the tool's result says what
    # happened (issue 40: a 1.5B model copied that shape, the outcome and no call).
    first = min(start for start, _ in spans)
    return found[:max_calls], without_introduction(text[:first]).strip()


def without_introduction(prose: str) -> str:
    """``prose``, the text right before a call block that is cut out, without what
    introduced the block: while its last line ends with ``:``, that line's last sentence
    goes ("To link them, you can use the following commands:" whole; "Yes. The output
    is:" keeps "Yes."), the whole line when only a list marker would be left ("3.").
    An earlier line ending in ``:`` right before a dropped one introduced it, so it
    goes too."""
    prose = prose.rstrip()
    while _INTRODUCES.search(prose):
        head, _, line = prose.rpartition("\n")
        ends = list(_SENTENCE_END.finditer(line))
        kept = line[: ends[-1].end()].rstrip() if ends else ""
        kept = _MARKER_LEFT.sub("", kept).rstrip()
        prose = (f"{head}\n{kept}" if head else kept) if kept else head.rstrip()
    return prose


def without_outcomes(prose: str) -> str:
    """``prose`` without the sentences that state a call's outcome before its result
    ("After running this command, the lab will have…", "These commands will create…"):
    for the prose of a message with calls stored before such text was cut (see the
    module doc). A line left empty goes; so does a paragraph."""
    if not _OUTCOME.search(prose):
        return prose
    paragraphs = []
    for paragraph in prose.split("\n\n"):
        lines = []
        for line in paragraph.split("\n"):
            starts = [0, *(m.end() for m in _SENTENCE_END.finditer(line))]
            pieces = [line[a:b] for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
            kept = "".join(piece for piece in pieces if not _OUTCOME.match(piece)).rstrip()
            if kept.strip() or not line.strip():
                lines.append(kept)
        if "\n".join(lines).strip():
            paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def _calls_in(
    body: str, offered: Collection[str], limits: ArgumentLimits, *, source: str
) -> list[TextCall]:
    try:
        value = json.loads(body)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    calls = [_call(item, offered, limits, text=source) for item in items]
    if not calls or any(call is None for call in calls):
        return []  # all of it a call, or it is not a call (but text that shows JSON)
    return [call for call in calls if call is not None]


def _call(
    item: Any, offered: Collection[str], limits: ArgumentLimits | None, *, text: str = ""
) -> TextCall | None:
    """``item`` as a call of an offered tool, or ``None``; ``limits`` ``None``: unbounded
    (for what is only compared, never run); ``text``: what it was read from."""
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    source = function if isinstance(function, dict) else item
    # ``{"function": "name", "arguments": …}``: the name is the function's value.
    name = function if isinstance(function, str) else source.get("name")
    if not isinstance(name, str) or name not in offered:
        return None
    arguments = source.get("arguments", source.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    raw = json.dumps(arguments, ensure_ascii=False)
    if limits is not None and ArgumentMeter(limits.of(name)).feed(raw) is not None:
        return None
    return TextCall(name, raw, text)


#: Whitespace, dropped before a call's block is looked for in a tool's output.
_SPACE = re.compile(r"\s+")
#: At most this many ``{`` of one text are tried as the start of a JSON object (a bound
#: on the work a hostile output can cause; outputs are cut long before that matters).
_MAX_STARTS = 1_000
#: How deep strings that hold JSON are opened (a JSON string in a JSON string …).
_MAX_DEPTH = 4
_DECODER = json.JSONDecoder()


class ToolOutputs:
    """What the conversation's tools returned (their tool messages' text), to tell a call
    the model wrote from one it quotes (see the module doc).

    Each output is kept as stored and as every string inside it when it is JSON (a
    device's text arrives as a JSON string, its quotes escaped), each also without
    whitespace. Outputs are read only when a call is asked about: most turns read no
    call from text, and a long session's outputs would otherwise be parsed on every
    turn.
    """

    __slots__ = ("_pending", "_squeezed", "_texts")

    def __init__(self, outputs: Iterator[str] | Collection[str] = ()) -> None:
        self._pending: list[str] = list(outputs)
        self._texts: list[str] = []
        self._squeezed: list[str] = []

    def add(self, output: str) -> None:
        """Keep one more tool result (as its tool message holds it)."""
        self._pending.append(output)

    def _read(self) -> None:
        pending, self._pending = self._pending, []
        for output in pending:
            for text in _texts_of(output, 0):
                self._texts.append(text)
                self._squeezed.append(_SPACE.sub("", text))

    def quotes(self, call: TextCall) -> bool:
        """Whether ``call`` occurs in a kept output: its block (whitespace aside), or a
        call-shaped JSON object of the same tool with equal arguments."""
        self._read()
        block = _SPACE.sub("", call.source)
        if block and any(block in text for text in self._squeezed):
            return True
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            return False
        return any(
            json.loads(shape.arguments) == arguments
            for text in self._texts
            if call.name in text
            for shape in _call_shapes(text, call.name)
        )


def _texts_of(output: str, depth: int) -> Iterator[str]:
    """``output`` and, when it is JSON, every string in it (opened again when it is JSON
    itself, ``_MAX_DEPTH`` deep)."""
    yield output
    if depth >= _MAX_DEPTH or output.lstrip()[:1] not in ("{", "[", '"'):
        return
    try:
        value = json.loads(output)
    except ValueError:
        return
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield from _texts_of(item, depth + 1)
        elif isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(key for key in item if isinstance(key, str))
        elif isinstance(item, list):
            stack.extend(item)


def _call_shapes(text: str, name: str) -> Iterator[TextCall]:
    """Every call of ``name`` in a JSON object that starts anywhere in ``text`` (or
    inside one): the ``{`` are tried in turn, each object found walked whole."""
    start, tries = text.find("{"), 0
    while start != -1 and tries < _MAX_STARTS:
        tries += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                call = _call(item, (name,), None)
                if call is not None:
                    yield call
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        start = text.find("{", end)
