"""Excerpts for search results: the words around a match, on one line."""

from __future__ import annotations

__all__ = ["excerpt"]


def excerpt(text: str, needle: str, width: int = 120) -> str:
    """About ``width`` characters of ``text`` around the first match of ``needle`` (case
    ignored), whitespace folded, with ``…`` where it was cut."""
    flat = " ".join(text.split())
    at = flat.lower().find(" ".join(needle.split()).lower())
    if at < 0 or len(flat) <= width:
        return flat[:width] + ("…" if len(flat) > width else "")
    start = max(at - width // 3, 0)
    end = min(start + width, len(flat))
    start = max(end - width, 0)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
