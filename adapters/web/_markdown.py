"""Markdown to safe HTML for the web page: markdown-it-py renders, nh3 sanitises.

Raw HTML in the Markdown is not interpreted (it is shown as text), and the result
is cleaned again with an allow-list, so nothing the model writes can run script,
load a resource or style the page (no ``style`` attribute survives: the page's
Content-Security-Policy forbids inline styles). Links open in a new tab without a
referrer.
"""

from __future__ import annotations

from typing import Final

import nh3
from markdown_it import MarkdownIt

__all__ = ["MAX_MARKDOWN_CHARS", "MarkdownRenderer"]

#: The largest Markdown text ``POST /render`` accepts.
MAX_MARKDOWN_CHARS: Final = 200_000

_TAGS: Final = frozenset(
    {
        "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
        "hr", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th",
        "thead", "tr", "ul",
    }
)  # fmt: skip
_ATTRIBUTES: Final = {
    "a": {"href", "title"},
    "code": {"class"},
    "ol": {"start"},
}


class MarkdownRenderer:
    """CommonMark plus tables and strikethrough, sanitised with an allow-list."""

    def __init__(self) -> None:
        self._markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
            ["table", "strikethrough"]
        )

    def render(self, text: str) -> str:
        html = self._markdown.render(text)
        return nh3.clean(
            html,
            tags=set(_TAGS),
            attributes={tag: set(names) for tag, names in _ATTRIBUTES.items()},
            url_schemes={"http", "https", "mailto"},
            link_rel="noopener noreferrer",
            set_tag_attribute_values={"a": {"target": "_blank"}},
            strip_comments=True,
        )
