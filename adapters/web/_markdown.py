"""Markdown to safe HTML for the web page: markdown-it-py renders, nh3 sanitises.

Fenced code blocks that name a language are highlighted with Pygments (see
``_highlight``): the only ``span`` elements that survive are its token classes.

Raw HTML in the Markdown is not interpreted (it is shown as text), and the result
is cleaned again with an allow-list, so nothing the model writes can run script,
load a resource or style the page (no ``style`` attribute survives: the page's
Content-Security-Policy forbids inline styles). Links open in a new tab without a
referrer.
"""

from __future__ import annotations

from html import escape
from typing import Final

import nh3
from markdown_it import MarkdownIt

from adapters.web._highlight import TOKEN_CLASSES, highlight_code

__all__ = ["MAX_MARKDOWN_CHARS", "MarkdownRenderer", "sanitise"]

#: The largest Markdown text ``POST /render`` accepts.
MAX_MARKDOWN_CHARS: Final = 200_000

_TAGS: Final = frozenset(
    {
        "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
        "hr", "li", "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th",
        "thead", "tr", "ul",
    }
)  # fmt: skip
_ATTRIBUTES: Final = {
    "a": {"href", "title"},
    "code": {"class"},
    "ol": {"start"},
}


def sanitise(
    html: str,
    *,
    tags: frozenset[str] = _TAGS,
    attributes: dict[str, set[str]] | None = None,
    classes: dict[str, set[str]] | None = None,
) -> str:
    """``html`` through nh3 with the allow-list (and, for highlighted code, the token
    classes on ``span``); ``classes`` adds classes allowed on other tags."""
    allowed = {tag: set(names) for tag, names in _ATTRIBUTES.items()}
    for tag, names in (attributes or {}).items():
        allowed.setdefault(tag, set()).update(names)
    return nh3.clean(
        html,
        tags=set(tags),
        attributes=allowed,
        allowed_classes={"span": set(TOKEN_CLASSES), **(classes or {})},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        strip_comments=True,
    )


def _highlight(code: str, language: str, _attributes: str) -> str:
    return highlight_code(code, language) or escape(code)


class MarkdownRenderer:
    """CommonMark plus tables and strikethrough, code highlighted, sanitised with an
    allow-list."""

    def __init__(self) -> None:
        self._markdown = MarkdownIt(
            "commonmark", {"html": False, "linkify": False, "highlight": _highlight}
        ).enable(["table", "strikethrough"])

    def render(self, text: str) -> str:
        return sanitise(self._markdown.render(text))
