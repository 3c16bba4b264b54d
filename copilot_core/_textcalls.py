"""Tool calls a model wrote in its text instead of making them.

Small models served with a stock chat template often answer a request for a tool with
the call written out: a JSON object in a ```json block, in ``<tool_call>`` tags (the
Hermes/Qwen shape), or as the whole answer. :func:`text_tool_calls` finds such calls in
a finished reply that made none, within bounds:

* only the shapes above, and only objects that name an offered tool (``name``, or
  ``function.name``) with an object of arguments (``arguments`` or ``parameters``;
  a JSON string of an object is accepted too);
* a reply longer than ``max_text`` characters is not searched, and at most
  ``max_calls`` calls are taken from one reply;
* each call's argument text is measured by the tool's :class:`ArgumentLimit`, so a call
  the model could not have streamed is not taken from its text either.

What is found is then an ordinary call: the tool gate validates its arguments and asks
for approval as for any other. The text is returned without the call blocks (what the
stored assistant message keeps).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from copilot_core._guards import ArgumentLimits, ArgumentMeter

__all__ = ["TextCall", "text_tool_calls"]

#: ``<tool_call> … </tool_call>`` (a last one left open at the end of the text counts).
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
#: A fenced code block, with or without a language (```json, ```tool_call, ```).
_FENCED = re.compile(r"```[ \t]*[A-Za-z_]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TextCall:
    """A call found in text: the tool and its arguments as canonical JSON text."""

    name: str
    arguments: str


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
            calls = _calls_in(match.group(1), offered, limits)
            if calls:
                found.extend(calls)
                spans.append(match.span())
    if not found:
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            found = _calls_in(stripped, offered, limits)
            if found:
                return found[:max_calls], ""
        return [], text
    rest = text
    for start, end in sorted(spans, reverse=True):
        rest = rest[:start] + rest[end:]
    return found[:max_calls], rest.strip()


def _calls_in(body: str, offered: Collection[str], limits: ArgumentLimits) -> list[TextCall]:
    try:
        value = json.loads(body)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    calls = [_call(item, offered, limits) for item in items]
    if not calls or any(call is None for call in calls):
        return []  # all of it a call, or it is not a call (but text that shows JSON)
    return [call for call in calls if call is not None]


def _call(item: Any, offered: Collection[str], limits: ArgumentLimits) -> TextCall | None:
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    source = function if isinstance(function, dict) else item
    name = source.get("name")
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
    if ArgumentMeter(limits.of(name)).feed(raw) is not None:
        return None
    return TextCall(name, raw)
