"""The chat's rules on input, defined once: adapters use these names for their own
schemas (the web API's request bodies, settings) instead of repeating the numbers."""

from __future__ import annotations

from copilot_core._accumulator import Coalescing
from copilot_core._guards import ArgumentLimit, ArgumentLimits
from copilot_core.errors import InvalidRequestError

__all__ = [
    "AGENT_ID_PATTERN",
    "MAX_COMMENT_CHARS",
    "MAX_CURSOR",
    "MAX_MESSAGE_CHARS",
    "MAX_SEARCH_CHARS",
    "TEMPERATURE_MAX",
    "TEMPERATURE_MIN",
    "TITLE_MAX_CHARS",
    "ArgumentLimit",
    "ArgumentLimits",
    "Coalescing",
    "check_message",
    "check_overrides",
]

#: The longest user message the chat accepts (characters, after stripping).
MAX_MESSAGE_CHARS = 32_000
#: A model's sampling temperature, as every supported provider accepts it.
TEMPERATURE_MIN = 0.0
TEMPERATURE_MAX = 2.0
#: A session title's length bound (spec 000).
TITLE_MAX_CHARS = 255
#: An agent's id (the built-in ``copilot``, or an external agent's configured id).
AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
#: The largest offset or history cursor accepted (JSON's largest exact integer).
MAX_CURSOR = 2**53 - 1
#: The text a session search looks for.
MAX_SEARCH_CHARS = 200
#: The comment that may come with an approval decision.
MAX_COMMENT_CHARS = 2000


def check_message(message: str, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """The message stripped, or :class:`InvalidRequestError` when empty or too long."""
    text = message.strip()
    if not text:
        raise InvalidRequestError("message must not be empty.")
    if len(text) > max_chars:
        raise InvalidRequestError(
            f"message is {len(text)} characters long; the limit is {max_chars}."
        )
    return text


def check_overrides(temperature: float | None, max_tokens: int | None) -> None:
    """A turn's model overrides are in range, or :class:`InvalidRequestError`."""
    if temperature is not None and not TEMPERATURE_MIN <= temperature <= TEMPERATURE_MAX:
        raise InvalidRequestError(
            f"temperature must be between {TEMPERATURE_MIN:g} and {TEMPERATURE_MAX:g}."
        )
    if max_tokens is not None and max_tokens <= 0:
        raise InvalidRequestError("max_tokens must be a positive integer.")
