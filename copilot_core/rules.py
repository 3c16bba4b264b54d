"""The chat's rules on input, defined once: adapters use these names for their own
schemas (the web API's request bodies, settings) instead of repeating the numbers; and
the bounds of one call into the lab (:class:`CallBounds`), which the gate applies and the
core's own calls into the lab take from it."""

from __future__ import annotations

from copilot_core._accumulator import Coalescing
from copilot_core._guards import ArgumentLimit, ArgumentLimits
from copilot_core._toolgate import CallBounds
from copilot_core.errors import InvalidRequestError

__all__ = [
    "AGENT_ID_PATTERN",
    "BASE_URL_PATTERN",
    "MAX_COMMENT_CHARS",
    "MAX_CURSOR",
    "MAX_MESSAGE_CHARS",
    "MAX_SEARCH_CHARS",
    "TEMPERATURE_MAX",
    "TEMPERATURE_MIN",
    "TITLE_MAX_CHARS",
    "ArgumentLimit",
    "ArgumentLimits",
    "CallBounds",
    "Coalescing",
    "check_message",
    "check_overrides",
]

_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST_NAME = rf"{_LABEL}(?:\.{_LABEL})*\.?"
_H16 = "[0-9A-Fa-f]{1,4}"
_IPV6 = "|".join(
    (
        rf"(?:{_H16}:){{7}}{_H16}",
        rf"(?:{_H16}:){{1,7}}:",
        *(rf"(?:{_H16}:){{1,{n}}}(?::{_H16}){{1,{7 - n}}}" for n in range(6, 0, -1)),
        rf":(?:(?::{_H16}){{1,7}}|:)",
    )
)
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
#: What a URL's path, query and fragment are written with (RFC 3986; anything else is
#: percent-encoded): a DEL or a space there is refused when stored, not when the model's
#: client is built.
_URL_REST = r"(?:[A-Za-z0-9._~!$&'()*+,;=:@/?#-]|%[0-9A-Fa-f]{2})*"

#: A base URL: http(s), a host (a name, an IPv4 address, or an IPv6 address in
#: brackets), an optional port (1-65535) and path; no user or password (they would be
#: stored in clear): the GNS3 server's, a model server's. The LLM adapter refuses the same
#: when a user's settings are stored.
BASE_URL_PATTERN = rf"^https?://(?:{_HOST_NAME}|\[(?:{_IPV6})\])(?::{_PORT})?(?:[/?#]{_URL_REST})?$"

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
