"""The compact tool set: short tool schemas for small models, chosen per request.

A 1.5–8B model on a laptop's CPU reads every prompt token before its first answer
token, and the tool schemas are most of the prompt. :func:`compact_tools` offers:

* the *everyday* tools always, and another tool only when the user's message names
  one of its ``cues`` (``capture`` brings the packet capture, ``undo`` the restore
  points…), so an everyday turn reads a handful of tools;
* each with its ``brief`` (or its description's first sentence) and a lean schema:
  property descriptions cut to their first clause, no ``additionalProperties``,
  ``title``, ``default`` or ``examples``, and none of the optional properties the
  tool lists in ``compact_omits`` (the tool still validates what it gets, and names the
  right form when a call is wrong).

The choice depends only on the user's message, so it is the same for every model
call of a turn: a provider's prompt cache keeps it within the turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from copilot_core._tools import ToolSpec

__all__ = ["compact_tools"]

_DROPPED = frozenset({"additionalProperties", "title", "default", "examples", "$comment"})
_MAX_DESCRIPTION = 60
_CLAUSE_END = re.compile(r" \(|; | — |, e\.g\.|: ")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]])[.;](?=\s|$)")


def compact_tools(specs: Sequence[ToolSpec], query: str) -> list[ToolSpec]:
    """The everyday tools and those ``query`` cues, in their order, made compact."""
    words = query.lower()
    chosen = [spec for spec in specs if spec.everyday or any(cue in words for cue in spec.cues)]
    return [_compact(spec) for spec in chosen]


def _compact(spec: ToolSpec) -> ToolSpec:
    lean = _lean(_without(spec.parameters, spec.compact_omits))
    return ToolSpec(
        spec.name,
        spec.brief or _first_sentence(spec.description),
        lean if isinstance(lean, dict) else spec.parameters,
        mutates_topology=spec.mutates_topology,
        effect=spec.effect,
        brief=spec.brief,
        everyday=spec.everyday,
        cues=spec.cues,
    )


def _without(schema: dict[str, Any], omitted: Sequence[str]) -> dict[str, Any]:
    """The object schema without the ``omitted`` (optional) properties."""
    properties = schema.get("properties")
    if not omitted or not isinstance(properties, dict):
        return schema
    kept = {name: prop for name, prop in properties.items() if name not in omitted}
    return {**schema, "properties": kept}


def _first_sentence(text: str) -> str:
    match = _SENTENCE_END.search(text)
    return text[: match.start() + 1] if match else text


def _short(text: str) -> str:
    match = _CLAUSE_END.search(text)
    if match:
        text = text[: match.start()]
    if len(text) > _MAX_DESCRIPTION:
        text = text[:_MAX_DESCRIPTION].rsplit(" ", 1)[0]
    return text.rstrip(" ,;:")


def _lean(node: Any) -> Any:
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, dict):
        return node
    lean: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "description" and isinstance(value, str):
            value = _short(value)
            if not value:
                continue
        elif key == "properties" and isinstance(value, dict):
            value = {name: _lean(prop) for name, prop in value.items()}
        else:
            value = _lean(value)
        lean[key] = value
    return lean
