"""Secrets masked in text meant for people (error messages, logs).

Where a secret stands as itself in a text, every one of its characters is masked; places
that overlap or touch become one mask. A secret of :data:`SUBSTRING_MIN` characters or
more stands as itself wherever it occurs, even inside a longer word: so long a string
inside a word is the secret, not an accident. A shorter one (a four-letter password, say)
stands as itself only where it is not glued to a further letter, digit or ``_`` on a side
where the secret itself ends in one. The word ``port`` is then left alone for the
password ``p``, while ``postgresql://u:p@db`` becomes ``postgresql://u:***@db``; for the
password ``port`` the word ``port`` is masked: a word that *is* the secret cannot be told
from it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MASK", "SUBSTRING_MIN", "redact_secrets"]

#: What a masked place becomes.
MASK = "***"
#: From this length on, a secret is masked inside words too.
SUBSTRING_MIN = 8


def redact_secrets(text: str, secrets: Iterable[str | None], *, mask: str = MASK) -> str:
    """``text`` with every place where one of the secrets stands as itself masked (see
    the module's rule). Empty and ``None`` secrets are skipped, so a password's raw and
    URL-decoded forms can be passed whether or not they differ."""
    spans: list[tuple[int, int]] = []
    for secret in {s for s in secrets if s}:
        spans += _places(text, secret)
    if not spans:
        return text
    spans.sort()
    pieces: list[str] = []
    done = 0  # the text before ``done`` is written or masked
    start, end = spans[0]
    for at, until in spans[1:]:
        if at <= end:  # overlapping or touching: one mask
            end = max(end, until)
            continue
        pieces += [text[done:start], mask]
        done, start, end = end, at, until
    pieces += [text[done:start], mask, text[end:]]
    return "".join(pieces)


def _places(text: str, secret: str) -> list[tuple[int, int]]:
    """Where ``secret`` stands as itself in ``text`` (overlapping places included)."""
    anywhere = len(secret) >= SUBSTRING_MIN
    check_before, check_after = _wordish(secret[0]), _wordish(secret[-1])
    found: list[tuple[int, int]] = []
    at = text.find(secret)
    while at >= 0:
        end = at + len(secret)
        glued = (check_before and at > 0 and _wordish(text[at - 1])) or (
            check_after and end < len(text) and _wordish(text[end])
        )
        if anywhere or not glued:
            found.append((at, end))
        at = text.find(secret, at + 1)
    return found


def _wordish(char: str) -> bool:
    """A letter, a digit or ``_`` (what ``\\w`` matches)."""
    return char.isalnum() or char == "_"
