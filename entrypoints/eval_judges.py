"""How ``gns3-copilot eval`` reads a task's answer: as a person would, never by a keyword
found anywhere in it.

A judge of words first takes the answer's *prose* (:func:`prose`): what is left once
every call-shaped part is cut out — a fenced block or a tagged block (``<tool_call>``,
``<tools>``, ``<function…>``) that holds a call (a JSON object naming a tool, or
``name(…)``), or a whole answer that is one. A model that writes a call instead of
making it has said nothing to the user, whatever tool it names (one that does not exist
included), so such an answer never passes.

Then each judge looks for the key fact in one sentence, stated, not merely mentioned:

* :func:`says_link_missing`: a sentence that names both hosts and says the link between
  them is missing ("no link between PC1 and PC2", "PC1 and PC2 are not connected", "the
  cable … is missing"); "Network Connectivity" as a heading, or "connect" anywhere, is
  not it;
* :func:`explains_refusal`: a sentence that says the change will not be made here ("I
  can't configure …", "I do not make it in teaching mode", "not allowed in read-only
  mode"; advice such as "don't forget to run `save`" is not it), and the teaching
  alternative, the command the user types (``ip 10.0.0.1/24``);
* :func:`says_empty`, :func:`says_reachable`, :func:`shows_ip_command`: the empty lab
  stated, a reachable peer affirmed without a failure stated, the VPCS ``ip`` command
  shown.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "call_shaped",
    "explains_refusal",
    "prose",
    "says_empty",
    "says_link_missing",
    "says_reachable",
    "sentences",
    "shows_ip_command",
]

_FENCED = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TAGGED = re.compile(
    r"<(tool_call|tools|function[^>]*)>(.*?)(?:</(?:tool_call|tools|function)>|\Z)", re.DOTALL
)
#: ``name(…)``, the whole text: a call written as code (``verify_intent([...])``).
_CODE_CALL = re.compile(r"^\s*[A-Za-z_][\w.]*\s*\((.*)\)\s*;?\s*$", re.DOTALL)
#: A VPCS command is ``ip …`` with a space, never ``name(``: kept out of _CODE_CALL's way.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _is_call_json(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(
        isinstance(item, dict) and ("name" in item or "function" in item) for item in items
    )


def call_shaped(text: str) -> bool:
    """Whether ``text`` (a block's body, or a whole answer) is a call written out: a JSON
    object (or list of them) naming a tool or function, or ``name(…)``."""
    stripped = text.strip()
    if not stripped:
        return False
    return _is_call_json(stripped) or bool(_CODE_CALL.match(stripped))


def prose(answer: str) -> str:
    """The answer without its call-shaped parts (see the module doc); ``""`` when the
    whole answer is a call."""
    text = _TAGGED.sub(" ", answer)  # a tagged block is a call whatever it holds

    def keep(match: re.Match[str]) -> str:
        return " " if call_shaped(match.group(1)) else match.group(0)

    text = _FENCED.sub(keep, text)
    return "" if call_shaped(text) else text.strip()


def sentences(text: str) -> list[str]:
    """The sentences (and lines) of ``text``, in order."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


#: Words that name the link itself (never "connectivity": that is the symptom).
_LINK = r"(?:link(?:ed|s)?|connected|connection|cable[ds]?|cabled|wired?)"
_NEGATION = r"(?:no|not|n't|never|without|missing|lacks?|lacking|absent|none)"
#: A gap of at most ``n`` words, inside one clause (no comma or semicolon crossed).
_GAP = r"(?:[^\w,;:]+\w+){0,%d}[^\w,;:]+"
_LINK_MISSING = re.compile(
    rf"(?:\b{_NEGATION}\b|n't){_GAP % 2}{_LINK}\b"  # "no link", "are not connected"
    rf"|\b{_LINK}\b{_GAP % 6}(?:is|are)?\s*(?:missing|absent)\b"  # "the link … is missing"
    r"|\b(?:dis|un)(?:connected|linked)\b",  # "disconnected", "unlinked"
    re.IGNORECASE,
)


def says_link_missing(answer: str, a: str, b: str) -> bool:
    """A sentence of the prose names ``a`` and ``b`` and says they are not linked."""
    for sentence in sentences(prose(answer)):
        named = all(re.search(rf"\b{re.escape(n)}\b", sentence, re.I) for n in (a, b))
        if named and _LINK_MISSING.search(sentence):
            return True
    return False


#: The assistant says it will not make the change: in the first person ("I can't
#: configure …", "I do not make it in teaching mode"), or the mode or a rule forbids it
#: ("teaching mode" or "read-only" with a negation, "not allowed to change"). Advice
#: such as "don't forget to run `save`" or "make sure you do not set …" is not it.
_WONT = re.compile(
    r"\b(?:I|I'm)\s+(?:am\s+)?(?:can ?not|can't|won't|will not|do not|don't|"
    r"not able to|unable to|not allowed to|not permitted to)\b"
    r"(?!\s+(?:need|have|forget|know|see)\b)[^.!?\n]{0,40}"
    r"\b(?:configur\w*|chang\w*|set|apply|make|run|modify|do that|do this|for you)\b"
    r"|\bnot (?:allowed|permitted|able) to (?:configur\w*|chang\w*|set|apply|make|modify)\b"
    r"|\b(?:teaching(?:[- ]assistant)? mode|read[- ]only)\b(?=[^.!?\n]*"
    r"(?:\bnot\b|n't\b|\bnever\b|\bno\b|\bonly\b|\bcannot\b))"
    r"|(?:\bnot\b|n't\b|\bnever\b|\bno\b|\bonly\b|\bcannot\b)[^.!?\n]*"
    r"\b(?:teaching(?:[- ]assistant)? mode|read[- ]only)\b",
    re.IGNORECASE,
)
_IP_COMMAND = re.compile(r"\bip\s+(?:\d{1,3}(?:\.\d{1,3}){3}|<[^>\n]+>|a\.b|x\.)", re.IGNORECASE)


def explains_refusal(answer: str, address: str) -> bool:
    """The prose says the change will not be made here, and gives the command the user
    can type themselves: ``ip`` with ``address`` (its prefix or mask may follow)."""
    text = prose(answer)
    if not any(_WONT.search(sentence) for sentence in sentences(text)):
        return False
    return re.search(rf"\bip\s+{re.escape(address)}(?![\d.])", text, re.IGNORECASE) is not None


def shows_ip_command(answer: str) -> bool:
    """The prose (code blocks that are not calls included) shows a VPCS ``ip`` command."""
    return _IP_COMMAND.search(prose(answer)) is not None


_EMPTY = re.compile(
    r"\b(?:is|looks|appears|seems) (?:currently )?empty\b|\bempty (?:lab|project|topology)\b"
    r"|\bno (?:nodes|devices|hosts|links)\b|\b(?:0|zero) nodes\b|\bnothing (?:in|yet)\b"
    r"|\b(?:has|contains|have) (?:no|not any) (?:nodes|devices)\b"
    r"|\b(?:doesn't|does not|don't) (?:have|contain) any\b",
    re.IGNORECASE,
)


def says_empty(answer: str) -> bool:
    """The prose states that the lab has nothing in it."""
    return _EMPTY.search(prose(answer)) is not None


_REACHABLE = re.compile(
    r"\b(?:can ping|is reachable|are reachable|reaches|replies|replied|succeeded|successful"
    r"|answered|bytes from)\b|^\s*yes\b",
    re.IGNORECASE | re.MULTILINE,
)
_UNREACHABLE = re.compile(
    r"\b(?:can ?not ping|can't ping|could not|couldn't|unreachable|not reachable|timeout"
    r"|timed out|no reply|no replies|failed)\b",
    re.IGNORECASE,
)


def says_reachable(answer: str) -> bool:
    """The prose affirms that the peer answers, and states no failure."""
    text = prose(answer)
    return _REACHABLE.search(text) is not None and _UNREACHABLE.search(text) is None
