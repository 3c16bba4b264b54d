"""Secrets masked in messages for people (``redact_secrets``): a secret never survives
where it stands as itself, and an ordinary word that merely contains a short secret's
letters is never mangled. The oracle below is the rule as docs/operations.md states it:
from ``SUBSTRING_MIN`` characters on, a secret stands as itself anywhere; a shorter one
wherever it is not glued to a further letter, digit or ``_`` on a side where it ends in
one; every character of such a place is masked, places that overlap or touch as one."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from copilot_core.ports import redact_secrets

SUBSTRING_MIN = 8  # docs/operations.md, "Secrets in messages"


def _wordish(char: str) -> bool:
    return char.isalnum() or char == "_"


def standing(text: str, secret: str) -> list[int]:
    """Where ``secret`` occurs in ``text`` as the rule says it must be masked."""
    found = []
    at = text.find(secret)
    while at >= 0:
        end = at + len(secret)
        glued_before = at > 0 and _wordish(secret[0]) and _wordish(text[at - 1])
        glued_after = end < len(text) and _wordish(secret[-1]) and _wordish(text[end])
        if len(secret) >= SUBSTRING_MIN or not (glued_before or glued_after):
            found.append(at)
        at = text.find(secret, at + 1)
    return found


def expected(text: str, secrets: list[str]) -> str:
    """The text as the rule masks it."""
    covered = [False] * len(text)
    for secret in secrets:
        for at in standing(text, secret):
            covered[at : at + len(secret)] = [True] * len(secret)
    out, masking = [], False
    for char, hidden in zip(text, covered, strict=True):
        if hidden and not masking:
            out.append("***")
        elif not hidden:
            out.append(char)
        masking = hidden
    return "".join(out)


# Anything but the mask's own character: a secret made of asterisks could seem to
# continue into the mask (which shows none of its characters).
chars = st.characters(codec="utf-8", exclude_characters="*")
secrets = st.text(chars, min_size=1, max_size=24)
separators = st.text(st.sampled_from(" .,:;/@'\"()[]-\n\t=?&"), min_size=1, max_size=3)
words = st.text(st.characters(categories=["Ll", "Lu", "Nd"]), min_size=1, max_size=12)


@st.composite
def messages_with(draw: st.DrawFn, secret: str) -> str:
    """A message holding ``secret`` at least once where it stands as itself, among words."""
    pieces: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        pieces += [draw(words), draw(separators)]
        if draw(st.booleans()) or not any(p == secret for p in pieces):
            pieces += [secret, draw(separators)]
    if len(secret) >= SUBSTRING_MIN and draw(st.booleans()):
        pieces.insert(0, draw(words) + secret + draw(words))  # inside a word: still masked
    return "".join(pieces)


@given(st.data(), secrets)
def test_a_secret_where_it_stands_as_itself_never_survives(
    data: st.DataObject, secret: str
) -> None:
    message = data.draw(messages_with(secret))
    assert standing(message, secret)
    redacted = redact_secrets(message, [secret])
    assert standing(redacted, secret) == []
    assert redacted == expected(message, [secret])


@given(secrets, secrets, st.data())
def test_several_secrets_none_survives(first: str, second: str, data: st.DataObject) -> None:
    message = data.draw(messages_with(first)) + " " + data.draw(messages_with(second))
    redacted = redact_secrets(message, [first, None, "", second])
    assert redacted == expected(message, [first, second])
    assert standing(redacted, max(first, second, key=len)) == []


@given(st.data())
def test_words_that_merely_contain_a_short_secret_are_left_whole(data: st.DataObject) -> None:
    secret = data.draw(st.text(st.characters(categories=["Ll", "Nd"]), min_size=1,
                               max_size=SUBSTRING_MIN - 1))  # fmt: skip
    pieces = []
    for _ in range(data.draw(st.integers(1, 6))):
        before, after = data.draw(words), data.draw(words)
        pieces += [data.draw(st.sampled_from([before, ""])) + secret + after, data.draw(separators)]
    message = "".join(pieces)
    assume(not standing(message, secret))
    assert redact_secrets(message, [secret]) == message


@given(st.text(chars, min_size=SUBSTRING_MIN, max_size=24), words, words)
def test_a_long_secret_is_masked_inside_words_too(secret: str, before: str, after: str) -> None:
    message = f"{before}{secret}{after}"
    redacted = redact_secrets(message, [secret])
    assert secret not in redacted
    assert redacted == expected(message, [secret])
    assert "***" in redacted


def test_the_messages_that_were_mangled_read_whole_now() -> None:
    libpq = 'connection to server at "127.0.0.1", port 9 failed: Connection refused'
    assert redact_secrets(libpq, ["p"]) == libpq
    url = "postgresql://postgres:p@127.0.0.1:9/x"
    assert redact_secrets(url, ["p"]) == "postgresql://postgres:***@127.0.0.1:9/x"
    # A short secret that is an ordinary word is masked as that word: it cannot be told apart.
    assert redact_secrets(libpq, ["port"]) == libpq.replace("port", "***")
    # Edges that are not letters need no boundary: a secret "@dm1" inside "x@dm1".
    assert redact_secrets("user x@dm1 failed", ["@dm1"]) == "user x*** failed"
    assert redact_secrets("pa**word1 failed", ["pa**word1"]) == "*** failed"
