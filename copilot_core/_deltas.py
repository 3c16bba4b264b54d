"""The pieces a language model streams: text, tool-call fragments, usage and the finish.

These are what the :class:`~copilot_core.ports.LanguageModel` port yields. They are
small frozen dataclasses: a long answer is tens of thousands of them.
"""

from __future__ import annotations

from copilot_core._values import value

__all__ = ["FinishDelta", "ModelDelta", "TextDelta", "ToolCallDelta", "UsageDelta"]


@value
class TextDelta:
    """A piece of the answer's text."""

    text: str


@value
class ToolCallDelta:
    """A fragment of a streamed tool call.

    ``index`` tells parallel calls apart; ``id`` and ``name`` usually come on the
    first fragment of an index only; ``arguments`` is raw JSON text, possibly empty.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@value
class UsageDelta:
    """Token usage reported by the provider for this call (usually on the last chunk)."""

    input_tokens: int
    output_tokens: int


@value
class FinishDelta:
    """Why the model stopped: ``stop``, ``tool_calls``, ``length``, ``content_filter``…"""

    reason: str


ModelDelta = TextDelta | ToolCallDelta | UsageDelta | FinishDelta
